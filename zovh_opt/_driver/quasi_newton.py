"""A finite-difference quasi-Newton phase before the method's iterations (``quasi_newton``).

On a smooth deterministic objective a forward difference gives one directional derivative per
evaluation, and a quasi-Newton method along full gradients converges far faster than random
directions. So a deterministic ``"zovh"`` run starts with forward-difference gradients
(`zovh_opt._driver.difference_gradient`: steps ``sqrt(eps) max(|x_i|, l / sqrt(d))``, the
centre measured again to catch noise, the first gradient's probe for ruggedness) and
limited-memory BFGS steps (`zovh_opt._driver.lbfgs`) judged by Armijo's condition on values alone.
A line search whose trials contradict its slope measures the centre and the dominant
difference again (an outlier in one difference; `zovh_opt._driver.second_opinion`). It ends
on a failed line search, a step that did not decrease ``f``, `SHORT_STEPS` steps below its
differences' resolution, its step limit, noise or failing values; the method then starts at
its point, and after a converged phase may hop or refine at small d, or resume the
phase (the stages `QuasiNewton` and `Iterate`, `zovh_opt._driver.stages`). With bounds it
works in the box map's coordinates. The phase in full: theory page, *The run's parts in
detail*, *The quasi-Newton phase, step by step*; the evidence, *The quasi-Newton phase*.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .._arrays.backend import ArraySpace, norm
from ..tuning import active
from .coordinates import power_of_two_near
from .difference_gradient import DifferenceGradient
from .lbfgs import LbfgsInverse, initial_matrix, inverse_times
from .second_opinion import SecondOpinion

__all__ = ["QuasiNewtonPhase"]


class QuasiNewtonPhase(DifferenceGradient, SecondOpinion):
    """The phase's state and its asks (module docstring).

    Parameters
    ----------
    x0 : array
        The start, in the run's compute namespace and coordinates (copied).
    length : float
        The run's length scale ``l``.
    value : float or None
        ``f(x0)`` where it was measured (``None``: the first ask measures it).
    recheck : bool
        Whether each gradient measures its centre again (noise not ruled out).
    within : callable, optional
        Maps a point of the run's coordinates to the one the phase keeps for it: with bounds,
        the same box point within one period of the box map
        (`zovh_opt._driver.coordinates.Coordinates.in_one_period`); by default the point itself.
    caps : array, optional
        The longest difference step of each coordinate (`Coordinates.difference_caps`).
    probe : bool, optional
        Whether the first gradient also measures ``x - h_0 e_0``, whose second difference
        tells a rugged ``f`` from a smooth one (`_ruggedness`), and where it reads ruggedness,
        ``x +- ROUGH_WIDTH h_0 e_0`` too, which tell noise-like ruggedness from a function
        rugged at every scale (`_noise_like`); the phase then ends ``"rugged"``, unless the
        second difference there was quiet and the values that read ruggedness did not repeat
        (`_probe_repeated`: an outlier; the phase ends on noise).
    f_scale : float, optional
        ``|f(x0)|`` where the phase starts elsewhere (after the trust region's opening): walls
        and jumps are measured against it too.
    """

    def __init__(
        self,
        x0: Any,
        length: float,
        value: float | None,
        recheck: bool,
        within: Callable[[Any], Any] | None = None,
        caps: Any = None,
        probe: bool = False,
        f_scale: float = 0.0,
    ) -> None:
        self.space = ArraySpace(x0)
        self.xp = self.space.xp
        # the longest difference step of each coordinate (`Coordinates.difference_caps`)
        self.caps = None if caps is None else self.space.from_host(caps)
        self.x = self.space.copy_in(x0)
        self.length = float(length)
        self.f_unit = 1.0  # a power of two near |f(x0)|: f / f_unit is exact and near 1
        self.fx = math.nan
        if value is not None:
            self.fx = self._in_unit([float(value)])[0]
        self.start, self.f_start = self.x, self.fx  # x0 and f(x0)
        self.f_scale = float(f_scale)  # (the user's units)
        self.recheck = bool(recheck)
        # f(x) measured again just before the phase (x0's two values): no recheck in this gradient
        self.centre_known = False
        self.within = _itself if within is None else within
        self.eps = float(self.xp.finfo(self.space.dtype).eps)
        self.g = self.space.zeros((self.space.dim,))
        self.pairs: list[tuple[Any, Any, float]] = []  # (s, y, 1 / s'y), oldest first
        self.skipped = 0  # steps in a row skipped that fell at least linearly (`SKIPPED_PAIRS`)
        self.ratio = math.nan  # the last step's decrease over the one its slope predicted
        self.searching = False  # False: measuring a gradient; True: a line search
        self.probing = bool(probe)  # the first gradient measures x - h_0 e_0 too (`_ruggedness`)
        self.wide: float | None = None  # the ruggedness it read, until x +- W h_0 e_0 are in
        self.probed: list[float] = []  # ... the values that read it (`_probe_repeated`)
        self.repeating = False  # ... which the pending ask measures again
        self.measured = 0  # coordinates of the gradient measured so far
        self.retry: list[int] = []  # coordinates whose forward value failed: measured backwards
        self.retried = 0  # ... asks that measured them again (`_retry_factor`)
        self.steps = 0  # accepted steps
        self.longest = 0.0  # the longest accepted step's length since x0 (`stalled`)
        self.short = 0  # accepted steps in a row shorter than the difference step
        self.jumped = False  # this line search backtracked from a jump of f (`JUMP`)
        self.short_jumps = 0  # steps of the current run of short steps that followed one
        self.first_ratio = math.nan  # the first step's decrease over its predicted decrease
        self.p = None  # the search direction
        self.p_norm = math.nan  # its length
        self.slope = math.nan  # g'p
        self.alpha = math.nan  # the trial's step factor
        self.trials = 0  # of this line search
        self.miss = math.nan  # the last failed trial's (f - f(x)) / alpha - g'p (`_contradicted`)
        self.contradicted = 0  # failed trials in a row whose miss did not shrink with alpha
        # the coordinate whose difference is measured again, with the centre (`_second_opinion`)
        self.opinion: int | None = None
        self.opinions = 0  # second opinions of this line search
        # an expanding line search's lowest trial so far: (alpha, value, doublings), or None
        self.expanding: tuple[float, float, int] | None = None
        self.previous: tuple[Any, Any] | None = None  # x and g before the accepted step
        self.ended: str | None = None  # why the phase ended
        self.noisy = False
        self.noise_values: list[float] = []  # f(x) and the repeat that differed (unit)
        self.nfev = 0  # evaluations of the phase
        self.jac = None  # the last complete gradient
        self.step_limit: int | None = self.max_steps  # steps in all (None: no limit)
        self.resumes = 0  # times it started again from its point (`resume_phase`)
        self.hops = 0  # times it started again from a lower point the method found (`hop`)
        self.walls = 0  # line searches that ended at a wall or a jump of f (`WALL`)
        # where the step limit cut the phase: the run's lowest value when the method took
        # over, until the method's first ftol stall decides whether the phase resumes
        self.handover_lowest: float | None = None

    @property
    def f_value(self) -> float:
        """``f`` at the phase's iterate, in the user's unit."""
        return self.fx * self.f_unit

    @property
    def done(self) -> bool:
        return self.ended is not None

    @property
    def dim(self) -> int:
        return self.space.dim

    @property
    def converged(self) -> bool:
        """Whether the phase ended at a minimum at its resolution: a step that no longer
        decreased ``f``, `SHORT_STEPS` steps in a row below the differences' resolution
        (where eps is at most `SHORT_STEPS_MAX_EPS`), a failed line search, or a zero
        gradient."""
        if self.ended == "short steps":
            return self.eps <= active().quasi_newton.SHORT_STEPS_MAX_EPS
        return self.ended in ("no decrease", "line search", "zero gradient")

    @property
    def stalled(self) -> bool:
        """Whether the phase converged without a step that ruggedness could not explain:
        since ``x0``, every accepted step at most ``h / ARMIJO`` long (``h`` its largest
        difference step) and the first one's decrease below `STALLED_RATIO` of what its slope
        predicted.

        A forward difference reads a ruggedness of amplitude ``a`` at the steps' scale ``h``
        (a simulation's discretisation, a deterministic hash, noise with ``noisy=False``) as
        a slope of size ``a / h``, and Armijo's test asks a step of length ``s`` along it to
        decrease ``f`` by about ``ARMIJO s a / h``: up to ``s = h / ARMIJO`` the ruggedness
        itself passes that test by chance, and the decrease it gives, at most ``a``, is
        ``h / s`` of the predicted one or less. A smooth ``f`` whose minimum lies that close
        (a converged phase resumed, a start next to a local minimum) gives about half the
        prediction. The stalled phase's point is no minimum at any scale, and its norm no
        length scale (theory page, *The quasi-Newton phase*)."""
        return self._within_ruggedness and self.first_ratio < active().quasi_newton.STALLED_RATIO

    @property
    def rugged(self) -> bool:
        """Whether the phase found ``f`` rugged: its probe's second difference (`_ruggedness`), or
        convergence with every accepted step within the ruggedness' reach (at most
        ``h / ARMIJO``) and the first one's decrease unlike a smooth ``f``'s, below
        `STALLED_RATIO` of its slope's prediction (`stalled`) or above its inverse (a smooth
        ``f`` gives about half, at most one)."""
        rules = active().quasi_newton
        unlike = not rules.STALLED_RATIO <= self.first_ratio <= 1 / rules.STALLED_RATIO
        return self.ended == "rugged" or (self._within_ruggedness and unlike)

    @property
    def _within_ruggedness(self) -> bool:
        """Converged after at least one step (none: the method starts at ``x0`` itself), every
        accepted step at most ``h / ARMIJO`` long, where ruggedness passes Armijo's test."""
        if not self.converged or self.steps == 0:
            return False
        return self.longest <= self.difference_step / active().quasi_newton.ARMIJO

    @property
    def max_steps(self) -> int:
        """The steps after which the phase ends: `MAX_STEPS`, or `SMALL_D_STEPS` where
        ``d < MEMORY``."""
        return (
            active().quasi_newton.SMALL_D_STEPS
            if self.dim < active().quasi_newton.MEMORY
            else active().quasi_newton.MAX_STEPS
        )

    def size(self) -> int:
        """The points of the next ask."""
        if self.searching and self.wide is None:
            return 1 if self.opinion is None else 2
        return self._gradient_size()

    def _in_unit(self, values: list[float]) -> list[float]:
        """``values`` over the phase's unit of ``f``, fixed by the first finite nonzero one (so
        that ``f -> 2^k f`` changes no step, whatever ``k``: ``y'y`` would overflow)."""
        if math.isnan(self.fx) and self.f_unit == 1.0:
            for v in values:
                if math.isfinite(v) and v != 0:
                    self.f_unit = power_of_two_near(abs(v))
                    break
        return [v / self.f_unit for v in values]

    def point(self, i: int) -> Any:
        """Point ``i`` of the pending ask, a new ``(d,)`` array in the caller's namespace:
        ``x + alpha p`` in a line search (or its second opinion's, `SecondOpinion`), else
        the centre (first, where it is measured) or ``x + h_j e_j`` for the next coordinates
        ``j`` (`DifferenceGradient`)."""
        if self.searching and self.wide is None:
            return self.space.to_user(self._trial() if self.opinion is None else self._opinion(i))
        return self.space.to_user(self._gradient_point(i))

    def points(self) -> Any:
        """The pending ask's points, ``point(i)`` for every ``i``, as one new ``(n, d)`` array
        in the caller's namespace."""
        if self.searching and self.wide is None:
            if self.opinion is not None:
                return self.space.to_user(self.xp.stack([self._opinion(0), self._opinion(1)]))
            return self.space.to_user(self.xp.reshape(self._trial(), (1, -1)))
        return self.space.to_user(self._gradient_points())

    def _trial(self) -> Any:
        """The line search's trial point ``x + alpha p``, as the phase keeps it (`within`)."""
        return self.within(self.x + self.alpha * self.p)

    def tell(self, values: list[float]) -> bool:
        """Take the pending ask's values (host floats, in order); True when a gradient was
        completed (an iteration of the run)."""
        self.nfev += len(values)
        values = self._in_unit(values)
        if self.searching and self.opinion is not None:
            self._second_opinion(values)
            return False
        if self.searching and self.wide is None:
            self._judge(values[0])
            return False
        return self._tell_gradient(values)

    def _gradient_complete(self) -> bool:
        """The gradient is measured: the next direction (True: an iteration of the run)."""
        self.measured = 0
        self.jac = self.g
        self._direction()
        return True

    def _direction(self) -> None:
        """With a gradient complete: the secant pair of the last step, the L-BFGS direction,
        and the line search's first trial."""
        xp = self.xp
        restart = math.nan  # the first trial's length after the pairs were dropped
        if self.previous is not None:
            s, y = self.x - self.previous[0], self.g - self.previous[1]
            sy, yy = float(xp.sum(s * y)), float(xp.sum(y * y))
            if sy > 1e-10 * yy and math.isfinite(sy):
                self.pairs = [*self.pairs[-(active().quasi_newton.MEMORY - 1) :], (s, y, 1.0 / sy)]
                self.skipped = 0
            else:
                self.skipped = self.skipped + 1 if self.ratio >= 1 else 0
                if self.skipped >= active().quasi_newton.SKIPPED_PAIRS:
                    self.pairs, restart = [], 2 * norm(s, xp)
        self.p = -inverse_times(self.g, self.pairs, xp)
        self.slope = float(xp.sum(self.g * self.p))
        if not self.slope < 0:  # not a descent direction: the gradient's
            self.pairs, self.p = [], -self.g
            self.slope = -float(xp.sum(self.g * self.g))
        if not self.slope < 0:
            self.ended = "zero gradient"
            return
        self.p_norm = norm(self.p, xp)
        # without pairs: the first step's, or after a drop
        length = active().quasi_newton.FIRST_STEP * self.length
        if 0 < restart < length:  # twice the last step's, where that is shorter
            length = restart
        self.alpha = 1.0 if self.pairs else length / self.p_norm
        self.searching, self.trials, self.jumped = True, 0, False
        self.miss, self.contradicted, self.opinions = math.nan, 0, 0

    def _judge(self, value: float) -> None:
        """The line search's trial ``x + alpha p`` has ``value``: the step, a longer trial
        (`MAX_EXPANSIONS`) or a shorter one."""
        self.trials += 1
        if self.expanding is not None:
            self._expanded(value)
            return
        if (
            math.isfinite(value)
            and value <= self.fx + active().quasi_newton.ARMIJO * self.alpha * self.slope
        ):
            if (
                self.trials == 1
                and self._fell_linearly(value)
                and active().quasi_newton.MAX_EXPANSIONS > 0
            ):
                self.expanding, self.alpha = (self.alpha, value, 0), 2.0 * self.alpha
                return
            self._accept(value)
            return
        # |f| sets the scale of walls and jumps; f = 0 at x and x0 (a least-squares fit's exact
        # minimum) sets none: every positive value would be one
        scale = max(abs(self.fx), abs(self.f_start), self.f_scale / self.f_unit) or math.inf
        if self.trials >= active().quasi_newton.BACKTRACKS:
            promised = -self.alpha * self.slope
            wall = promised > active().quasi_newton.WALL * scale
            self.ended = "wall" if wall else "line search"
            self.walls += wall
            return
        if self._contradicted(value):  # (an ended line search asks none)
            self.opinion = self._dominant()
        reach = active().quasi_newton.JUMP * scale
        self.jumped = self.jumped or not value - self.fx <= reach  # (nan, inf: a jump too)
        curvature = value - self.fx - self.alpha * self.slope  # nan or inf: halve the step
        shrink = -self.slope * self.alpha / (2 * curvature) if 0 < curvature < math.inf else 0.5
        self.alpha *= min(0.5, max(0.1, shrink))

    def _ratio(self, value: float) -> float:
        """The trial's decrease to ``value`` over the one its slope predicts."""
        return (self.fx - value) / (-self.alpha * self.slope)

    def _fell_linearly(self, value: float) -> bool:
        """Whether ``value`` at the trial is at least as far below ``f(x)`` as the slope
        predicts (within `EXPANSION_ROUNDING`: a linear ``f``'s rounding)."""
        return self._ratio(value) >= 1.0 - active().quasi_newton.EXPANSION_ROUNDING

    def _expanded(self, value: float) -> None:
        """A doubled trial has ``value``: doubled again where it is lower than the last and
        fell at least linearly, else the step is the lower of the two. (A doubled trial lower
        than the last fell by more than half its slope's prediction: Armijo's condition
        holds.)"""
        alpha, lowest, doublings = self.expanding
        if math.isfinite(value) and value < lowest:
            if self._fell_linearly(value) and doublings + 1 < active().quasi_newton.MAX_EXPANSIONS:
                self.expanding = (self.alpha, value, doublings + 1)
                self.alpha *= 2.0
                return
            self.expanding = None
            self._accept(value)
            return
        self.expanding, self.alpha = None, alpha
        self._accept(lowest)

    def _accept(self, value: float) -> None:
        """The step ``alpha p``, whose point has ``value``, is taken."""
        self.longest = max(self.longest, abs(self.alpha) * self.p_norm)
        self.ratio = self._ratio(value)
        if self.steps == 0 and self.resumes == 0 and self.hops == 0:
            self.first_ratio = self.ratio
        trial = self.x + self.alpha * self.p
        kept = self.within(trial)  # moved by whole periods: the pair's s is alpha p
        self.previous = (self.x if kept is trial else self.x + (kept - trial), self.g)
        self.x = kept
        self.g = self.space.zeros((self.dim,))
        decreased = value < self.fx
        self.fx, self.searching = value, False
        self.steps += 1
        if not decreased:  # no relative ftol: it ended runs short of L-BFGS-B (theory page)
            self.ended = "no decrease"
            return
        self._short_steps(abs(self.alpha) * self.p_norm)
        if self.ended is None and self.step_limit is not None and self.steps >= self.step_limit:
            self.ended = "steps"

    def _short_steps(self, length: float) -> None:
        """After a step of ``length`` that decreased ``f``: the end of the phase at the
        `SHORT_STEPS`-th step in a row shorter than its difference step ``h``."""
        short = length < self.difference_step
        self.short = self.short + 1 if short else 0
        self.short_jumps = self.short_jumps + self.jumped if short else 0
        if self.short >= active().quasi_newton.SHORT_STEPS:
            # steps cut short by a jump of f crawl towards a wall, not a minimum
            self.ended = "wall" if self.short_jumps else "short steps"
            self.walls += self.short_jumps > 0

    def resume(self) -> None:
        """Start again from the phase's point with no step limit: the method, given the
        run's budget after the limit, did not do better (`resume_phase`)."""
        self._start_again(self.x, self.fx, None)
        self.resumes += 1

    def hop(self, x: Any, value: float) -> None:
        """Start again at ``x`` (compute namespace, the run's coordinates), where ``f`` is
        ``value`` (the user's unit), with `max_steps` more steps (`hop`)."""
        self._start_again(x, value / self.f_unit, self.steps + self.max_steps)
        self.hops += 1

    def _start_again(self, x: Any, fx: float, step_limit: int | None) -> None:
        """A first gradient at ``x`` (``f = fx`` in the phase's unit) and no secant pairs:
        they described the path before the method's iterations."""
        self.x, self.fx = x, fx
        self.start, self.f_start = x, fx
        self.g = self.space.zeros((self.dim,))
        self.pairs, self.previous, self.p, self.skipped = [], None, None, 0
        self.searching, self.measured, self.retry, self.retried = False, 0, [], 0
        self.short, self.short_jumps = 0, 0
        self.expanding = None
        self.step_limit = step_limit
        self.ended, self.handover_lowest = None, None

    def release(self) -> None:
        """After the phase: its vectors go (the counts stay for the result), but for the
        secant pairs, the result's ``hess_inv`` until the method learns its own
        (`forget_pairs`)."""
        self.g, self.p, self.previous, self.start = None, None, None, None

    def estimates(self) -> dict[str, Any]:
        """``jac``: the phase's last gradient (the result's, until the method has its own);
        ``hess_inv``: L-BFGS's inverse Hessian of its secant pairs, where it has some."""
        out = {} if self.jac is None else {"jac": self.space.to_user(self.jac * self.f_unit)}
        if self.pairs:
            to_user, xp = self.space.to_user, self.xp
            h0 = initial_matrix(self.pairs, xp)
            pairs = [(to_user(s), to_user(y), rho) for s, y, rho in self.pairs]
            h0 = h0 if isinstance(h0, float) else to_user(h0)
            out["hess_inv"] = LbfgsInverse(pairs, h0).scaled(1.0 / self.f_unit)
        return out


def _itself(z: Any) -> Any:
    """``z``: the phase's points where no box map repeats."""
    return z
