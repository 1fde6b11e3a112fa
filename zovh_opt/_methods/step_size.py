"""The parameter-free step rule of ``learning_rate="auto"``: success-based control of the
learning rate and of the smoothing radius.

A step from the *centre* (the last accepted point) is a trial, judged by its batch's mean
against the centre's: accepted, ``eta`` grows by ``2**(1/4)``; undone, it shrinks by
``2**(1/5)`` and the centre is measured afresh. The first step is `INITIAL_STEP` ``l`` long.
The smoothing radius follows the running step length (``mu sqrt(d)`` about `SPREAD` times
it), with a floor where the batches' slope shows noise or rounding, and once noise is known a
floor that follows the noise (`StepSizeControl._noise_floor`). With a ceiling (a curvature
model's step) the rate is a trust factor and a trust radius caps the trials. ``f -> s f``
leaves every iterate as it was. The rule in full: theory page, *The run's parts in detail*,
*The step rule*.
"""

from __future__ import annotations

import math
from typing import Any

from ..tuning import active

NO_FLOOR = -(2**62)  # the radius's lowest level before any floor

NOISE_FIELDS = ("noisy", "start_noise", "noise_variance", "spread_squares", "residuals")
# fields a checkpoint written before them lacks: their value at the start of a run stands
LATER_FIELDS = (*NOISE_FIELDS, "spread", "widened_at", "widening_reach")

# what the centre of the batch just evaluated was
MEASURE, TRIAL = "measure", "trial"


def length_scale(norm_x0: float, dim: int) -> float:
    """``l``: ``|x0|``, or ``sqrt(d)`` when ``x0 = 0`` (the unit cube's diagonal)."""
    return norm_x0 if norm_x0 > 0 else math.sqrt(dim)


class StepSizeControl:
    """State of the rule for one run (module docstring): plain floats, checkpointable.

    Parameters
    ----------
    dim : int
        ``d``.
    scale : float
        The length scale ``l`` of the problem (`length_scale`).
    ceiling : float or None
        The largest learning rate, where the direction is a step of its own (the module
        docstring); ``None``: no ceiling, the rate is set from the step length.
    first_step : float
        The first trial step's length over ``l``.
    """

    def __init__(
        self,
        dim: int,
        scale: float,
        ceiling: float | None = None,
        first_step: float | None = None,
    ) -> None:
        self.dim = int(dim)
        self.scale = float(scale)
        self.ceiling = None if ceiling is None else float(ceiling)
        if first_step is None:
            first_step = active().step_rule.INITIAL_STEP
        self.first_step = float(first_step)
        # set by the first direction, or the ceiling
        self.learning_rate = math.nan if ceiling is None else self.ceiling
        self.step_length = self.first_step * self.scale  # running geometric mean of trial lengths
        # with a ceiling: the longest trial allowed, from TRUST first steps on
        self.trust_radius = (
            math.inf if ceiling is None else active().step_rule.TRUST * self.step_length
        )
        self.trial_length = math.nan  # of the latest trial
        # mu sqrt(d) over the running step length (widened: at s_0)
        self.spread = active().step_rule.SPREAD
        self.widened_at = math.nan  # s_0, the step length when the run was widened
        self.widening_reach = math.inf  # the widened mu sqrt(d) at most (`widen`)
        self.base_smoothing = self.spread * self.step_length / math.sqrt(self.dim)
        self.level = 0  # mu = base_smoothing * 2**level
        self.anchor = False  # set the learning rate from the step length at the next trial
        self.phase = MEASURE
        self.reference = math.nan  # f estimate at the centre
        self.accepted = 0
        self.rejected = 0
        self.floor = NO_FLOOR  # lowest level allowed (raised by the noise test)
        self.slopes = 0.0  # sum of the log slopes of the batches at this level
        self.counted = 0  # and their number
        self.before = math.nan  # mean log slope at the level before a decrease
        self.drop = 0  # levels of that decrease
        self.noisy = False  # the values are known to be noisy: the floor follows the noise
        self.start_noise = math.nan  # the noise's variance at x0
        self.noise_variance = math.nan  # running estimate of the noise's variance
        self.spread_squares = 0.0  # sum of the squared spreads of the batches at this level
        self.residuals = 0.0  # and of their misfit-and-noise bounds

    @property
    def smoothing(self) -> float:
        return math.ldexp(self.base_smoothing, self.level)

    def observe(self, spread: float, noise_variance: float = math.nan) -> bool:
        """Take the spread (standard deviation) of a batch's values, and where the method
        knows one a bound on the noise's variance from the same batch; ``True`` if the
        noise test (or with known noise, its floor) just raised the radius (queries kept at
        the old radius must go)."""
        if not spread > 0:
            return False
        if self.noisy:
            return self._noise_floor(spread, noise_variance)
        self.slopes += math.log(spread / self.smoothing)
        self.counted += 1
        if self.drop == 0 or self.counted < active().step_rule.CHECKED:
            return False
        grown = self.slopes / self.counted - self.before
        drop, self.drop = self.drop, 0
        if grown <= 0.5 * drop * math.log(2):
            return False
        self._set_level(self.level + drop)
        self.floor = self.level
        return True

    def noise_found(self, variance: float) -> None:
        """The objective is noisy, with about this ``variance`` at ``x0`` (in the batches'
        unit of ``f``, `noise_in_unit`): from now on the floor of the radius follows the
        noise (`_noise_floor`)."""
        self.noisy = True
        known = variance > 0  # else (outliers x0's values missed) the batches' bounds say
        self.start_noise = variance if known else math.inf
        self.noise_variance = variance if known else math.nan
        self.spread_squares = self.residuals = 0.0
        self.counted = self.drop = 0

    def noise_in_unit(self, f_unit: float) -> None:
        """The run's unit of ``f`` is fixed (at its first finite batch,
        `zovh_opt._driver.coordinates`): a noise found at ``x0`` before, in the user's unit, has
        its variance in the run's (the batches' values are ``f / f_unit``)."""
        if not self.noisy or f_unit == 1.0:
            return
        self.start_noise = self.start_noise / f_unit / f_unit  # (f_unit**2 may overflow)
        self.noise_variance = self.noise_variance / f_unit / f_unit

    def _noise_floor(self, spread: float, bound: float) -> bool:
        """With known noise, the radius balances noise against the model's misfit.

        A batch's values spread by the slope along the queries and by the noise,
        ``spread**2 ~ mu**2 |g|**2 + sigma**2``; its antithetic pair means, less the model,
        by the noise and the model's misfit, which grows as ``mu**4`` (``bound``: the
        method's estimate of ``sigma**2 + 2 misfit``, ``nan`` where it has none). Over
        ``NOISE_CHECKED`` batches at one radius: where the misfit exceeds the noise
        (``bound > NOISE_MISFIT sigma**2``) the radius halves, for the curvature model no
        longer describes the queries; else where the spread leaves less than ``NOISE_SNR``
        noise deviations to the slope, it doubles and stays at least there, up to
        ``mu sqrt(d) = NOISE_REACH l`` (the grid's level below it) and to ``2**NOISE_ABOVE``
        times the running step length (the queries' spread is a smoothing of f, and its bias
        moves the smoothed minimum: on a Monte-Carlo newsvendor the uncapped floor ended 5.7
        times farther from the optimum).
        ``sigma**2`` is a running mean of ``min(bound, sigma_0**2)``, with
        ``sigma_0**2`` the variance at ``x0``: it follows a noise that falls with f, and the
        misfit does not raise it."""
        if math.isfinite(bound) and bound >= 0:
            sample = min(bound, self.start_noise)
            if math.isnan(self.noise_variance):
                self.noise_variance = sample
            else:
                self.noise_variance += active().step_rule.NOISE_TRACKING * (
                    sample - self.noise_variance
                )
        self.spread_squares += spread * spread
        self.residuals += bound if math.isfinite(bound) else 0.0
        self.counted += 1
        noise = self.noise_variance
        if self.counted < active().step_rule.NOISE_CHECKED or not noise > 0:
            return False
        if self.residuals / self.counted > active().step_rule.NOISE_MISFIT * noise:
            self.floor = min(self.floor, self.level - 1)
            self._set_level(self.level - 1)
            return True
        signal = self.spread_squares / self.counted - noise
        if (
            signal >= active().step_rule.NOISE_SNR * active().step_rule.NOISE_SNR * noise
            or self.level >= self._noise_ceiling()
        ):
            return False
        self._set_level(self.level + 1)
        self.floor = self.level
        return True

    def _step_level(self) -> float:
        """The level at which ``mu sqrt(d)`` is `current_spread` times the running step
        length."""
        step_level = self.current_spread() * self.step_length / math.sqrt(self.dim)
        return math.log2(step_level / self.base_smoothing)

    def _noise_ceiling(self) -> int:
        """The highest level the noise floor raises the radius to."""
        reach = math.floor(
            math.log2(active().step_rule.NOISE_REACH / self.first_step)
        )  # levels of the grid
        return min(reach, round(self._step_level()) + active().step_rule.NOISE_ABOVE)

    def _set_level(self, level: int) -> None:
        self.level = level
        self.spread_squares = self.residuals = 0.0
        self.slopes, self.counted = 0.0, 0
        self.anchor = True

    def judge(self, f_estimate: float) -> bool | None:
        """Judge the batch just evaluated, whose values average ``f_estimate``: ``True`` if it
        was a trial and is accepted (its point is the new centre), ``False`` if it was a
        trial and is undone, ``None`` if it measured the centre."""
        was_trial, self.phase = self.phase == TRIAL, MEASURE  # until `stepped`
        if not was_trial:
            self.reference = f_estimate
            return None
        if f_estimate < self.reference:
            self.reference = f_estimate
            self.learning_rate *= active().step_rule.GROW
            if self.ceiling is not None:
                self.learning_rate = min(self.learning_rate, self.ceiling)
                self.trust_radius = max(
                    self.trust_radius, active().step_rule.TRUST * self.trial_length
                )
            self.accepted += 1
            return True
        self._reject()
        return False

    def _reject(self) -> None:
        self.learning_rate *= active().step_rule.SHRINK
        if self.ceiling is not None:
            self.trust_radius = (
                min(self.trust_radius, self.trial_length) * active().step_rule.SHRINK
            )
        self.rejected += 1

    def missing(self) -> None:
        """The batch just asked has no usable values: a trial counts as rejected."""
        if self.phase == TRIAL:
            self._reject()
            self.phase = MEASURE

    def rate_for(self, direction_norm: float) -> float:
        """The learning rate of the next trial along a direction of this length: set from
        the running step length for the first direction (``INITIAL_STEP * l``) and after the
        smoothing radius changed; with a ceiling, the rate capped by the trust radius."""
        if self.ceiling is not None:
            return min(self.learning_rate, self.trust_radius / direction_norm)
        if math.isnan(self.learning_rate) or self.anchor:
            self.learning_rate = self.step_length / direction_norm
            self.anchor = False
        return self.learning_rate

    def stepped(self, step_length: float) -> bool:
        """A trial step of ``step_length`` was taken; ``True`` if the smoothing radius changed
        (queries kept at the old radius must go)."""
        self.phase = TRIAL
        self.trial_length = step_length
        s = math.log(self.step_length)
        s += active().step_rule.TRACKING * (math.log(step_length) - s)
        self.step_length = math.exp(s)
        target = self._step_level()
        floor = min(self.floor, self._noise_ceiling()) if self.noisy else self.floor
        level = max(round(target), floor)
        if abs(target - self.level) <= 1 or level == self.level:
            return False
        if level < self.level:  # at least 4 times smaller, so that the noise test has power
            level = max(min(level, self.level - 2), floor)
            self.before = self.slopes / self.counted if self.counted else math.nan
            self.drop = self.level - level if self.counted else 0
        else:
            self.drop = 0
        self._set_level(level)
        return True

    def lengthen_first_step(self, factor: float) -> None:
        """Before the first trial: the method's first step is ``factor`` times the rule's (a
        flat start's longest, `zovh_opt._methods.curvature_model`), and the trust radius
        allows it."""
        self.trust_radius *= factor

    def widen(self, factor: float, reach: float = math.inf) -> None:
        """Before the first batch: queries ``factor`` times as far from their centre,
        relative to the steps, a widening that falls as the steps shorten (`current_spread`;
        a new start's smoothing at a coarser scale). The widened ``mu sqrt(d)`` stays within
        ``reach`` (in a box a fraction of its width, `zovh_opt._driver.new_starts.BOX_REACH`), or at
        the plain spread where that is more: a widening that would exceed it at the first
        step is cut to it and falls from there."""
        self.spread *= factor
        self.base_smoothing *= factor
        within = max(active().step_rule.SPREAD, reach / self.step_length) / self.spread
        if within < 1:
            self.spread *= within
            self.base_smoothing *= within
        self.widened_at = self.step_length
        self.widening_reach = reach

    @property
    def widened(self) -> bool:
        """Whether `widen` was called (a new start's run)."""
        return not math.isnan(self.widened_at)

    def current_spread(self) -> float:
        """``mu sqrt(d)`` over the running step length ``s``: ``spread``, or after `widen`
        ``max(SPREAD, spread (s / s_0)**WIDENING_DECAY)`` (``s_0`` the step length then),
        within ``widening_reach / s`` where that is above ``SPREAD``."""
        if not self.widened:
            return self.spread
        decay = (self.step_length / self.widened_at) ** active().step_rule.WIDENING_DECAY
        widened = max(active().step_rule.SPREAD, self.spread * decay)
        return min(widened, max(active().step_rule.SPREAD, self.widening_reach / self.step_length))

    def shorten(self, factor: float, *, stalled: bool = False) -> None:
        """Restart with steps and radius ``factor`` times as long (``factor < 1``), from a
        measurement of the centre. After an ``ftol`` stall (``stalled``) without known noise
        the slope test's floor goes: the finer scale decides whether the values' spread there
        was noise or a rugged ``f``."""
        if not math.isnan(self.learning_rate):
            self.learning_rate *= factor
        self.step_length *= factor
        self.trust_radius *= factor
        if stalled and not self.noisy:
            self.floor = NO_FLOOR
        self._set_level(max(self.level + math.floor(math.log2(factor)), self.floor))
        self.drop = 0
        self.phase = MEASURE

    def state(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def load_state(self, state: dict[str, Any]) -> None:
        state = {
            "first_step": active().step_rule.INITIAL_STEP,
            **state,
        }  # written before it was kept
        for name in self.__dict__:
            if name in LATER_FIELDS and name not in state:
                continue  # a checkpoint written before the noise floor: none was known
            value = state[name]
            if value is None or isinstance(value, str):
                setattr(self, name, value)
            else:
                current = getattr(self, name)
                setattr(self, name, (float if current is None else type(current))(value))
        if self.phase not in (MEASURE, TRIAL):
            raise ValueError(f"unknown step-size phase {self.phase!r}")
