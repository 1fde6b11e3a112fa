"""A finite-difference quasi-Newton phase before the method's iterations (``quasi_newton``).

On a smooth deterministic objective a forward difference gives one directional derivative per
evaluation, and a quasi-Newton method along full gradients converges far faster than random
directions. So a deterministic ``"zovh"`` run starts with forward-difference gradients (steps
``sqrt(eps) max(|x_i|, l / sqrt(d))``, the centre measured again to catch noise) and
limited-memory BFGS steps (`zovh_opt._driver.lbfgs`) judged by Armijo's condition on values alone.
It ends on a failed line search, a step that did not decrease ``f``, `SHORT_STEPS` steps
below its differences' resolution, its step limit, noise or failing values; the method then
starts at its point, and after a converged phase may hop or refine at small d, or resume the
phase (the stages `QuasiNewton` and `Iterate`, `zovh_opt._driver.stages`). With bounds it
works in the box map's coordinates. The phase in full: theory page, *The run's parts in
detail*, *The quasi-Newton phase, step by step*; the evidence, *The quasi-Newton phase*.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .._arrays.backend import ArraySpace, norm
from .._noise.monitor import repeats
from ..tuning import active
from .coordinates import power_of_two_near
from .lbfgs import LbfgsInverse, initial_matrix, inverse_times

__all__ = ["QuasiNewtonPhase"]


class QuasiNewtonPhase:
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
        tells a rugged ``f`` from a smooth one (`_rough`), and where it reads ruggedness,
        ``x +- ROUGH_WIDTH h_0 e_0`` too, which tell noise-like ruggedness from a function
        rugged at every scale (`_noise_like`); the phase then ends ``"rugged"``.
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
        self.probing = bool(probe)  # the first gradient measures x - h_0 e_0 too (`_rough`)
        self.wide: float | None = None  # the ruggedness it read, until x +- W h_0 e_0 are in
        self.measured = 0  # coordinates of the gradient measured so far
        self.retry: list[int] = []  # coordinates whose forward value failed: measured backwards
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
        """Whether the phase found ``f`` rugged: its probe's second difference (`_rough`), or
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
    def difference_step(self) -> float:
        """``h``: the largest of the phase's difference steps at its point (`_steps`)."""
        if self.caps is not None:
            return float(self.xp.max(self.xp.minimum(self._unrounded_steps(self.x), self.caps)))
        largest = float(self.xp.max(self.xp.abs(self.x)))
        return math.sqrt(self.eps) * max(largest, self._step_floor)

    @property
    def _step_floor(self) -> float:
        """The smallest ``|x_j|`` a difference step scales with: ``l / sqrt(d)``."""
        return self.length / math.sqrt(self.dim)

    @property
    def max_steps(self) -> int:
        """The steps after which the phase ends: `MAX_STEPS`, or `SMALL_D_STEPS` where
        ``d < MEMORY``."""
        return (
            active().quasi_newton.SMALL_D_STEPS
            if self.dim < active().quasi_newton.MEMORY
            else active().quasi_newton.MAX_STEPS
        )

    @property
    def _retrying(self) -> bool:
        """Whether the pending ask measures backwards the coordinates whose forward value
        was not finite (the gradient's forward values are all in)."""
        return not self.searching and self.measured == self.dim and bool(self.retry)

    def _with_centre(self) -> bool:
        """Whether the pending ask starts with the centre (a gradient's first ask, when
        ``f(x)`` is unknown or rechecked)."""
        again = self.recheck and not self.centre_known
        return not self.searching and self.measured == 0 and (again or math.isnan(self.fx))

    def size(self) -> int:
        """The points of the next ask."""
        if self.wide is not None:
            return 2
        if self.searching:
            return 1
        if self._retrying:
            return len(self.retry)
        return (
            min(active().quasi_newton.BLOCK - int(self._with_centre()), self.dim - self.measured)
            + int(self._with_centre())
            + int(self._with_probe())
        )

    def _with_probe(self) -> bool:
        """Whether the pending ask ends with ``x - h_0 e_0`` (the first gradient where the
        phase probes and the whole gradient fits one ask)."""
        whole = self.dim + 2 <= active().quasi_newton.BLOCK
        return self.probing and whole and not self.searching and self.measured == 0

    def _in_unit(self, values: list[float]) -> list[float]:
        """``values`` over the phase's unit of ``f``, fixed by the first finite nonzero one (so
        that ``f -> 2^k f`` changes no step, whatever ``k``: ``y'y`` would overflow)."""
        if math.isnan(self.fx) and self.f_unit == 1.0:
            for v in values:
                if math.isfinite(v) and v != 0:
                    self.f_unit = power_of_two_near(abs(v))
                    break
        return [v / self.f_unit for v in values]

    def _steps(self, start: int, stop: int, sign: float = 1.0) -> Any:
        """The difference steps of coordinates ``start:stop``, made exact in ``x``'s
        precision (``(x + h) - x``; with ``sign = -1`` the backward ones, ``(x - h) - x``)."""
        xp, x = self.xp, self.x[start:stop]
        h = self._unrounded_steps(x)
        if self.caps is not None:
            h = xp.minimum(h, self.caps[start:stop])
        return (x + sign * h) - x

    def _unrounded_steps(self, x: Any) -> Any:
        return math.sqrt(self.eps) * self.xp.maximum(
            self.xp.abs(x), self.xp.full_like(x, self._step_floor)
        )

    def point(self, i: int) -> Any:
        """Point ``i`` of the pending ask, a new ``(d,)`` array in the caller's namespace:
        ``x + alpha p`` in a line search, else the centre (first, where it is measured) or
        ``x + h_j e_j`` for the next coordinates ``j``."""
        if self.wide is not None:
            return self.space.to_user(self._wide_points()[i])
        if self.searching:
            return self.space.to_user(self._trial())
        row = self.xp.asarray(self.x, copy=True)
        moved = self._moved(i)
        if moved is not None:
            j, sign = moved
            row[j : j + 1] = self.x[j : j + 1] + self._steps(j, j + 1, sign)
        return self.space.to_user(row)

    def _moved(self, i: int) -> tuple[int, float] | None:
        """The coordinate that row ``i`` of a gradient ask moves, and the direction (``-1``:
        backwards, after a failed value); ``None`` for the centre."""
        if self._retrying:
            return self.retry[i], -1.0
        if self._with_probe() and i == self.size() - 1:
            return 0, -1.0
        j = self.measured + i - int(self._with_centre())
        return (j, 1.0) if j >= self.measured else None

    def points(self) -> Any:
        """The pending ask's points, ``point(i)`` for every ``i``, as one new ``(n, d)`` array
        in the caller's namespace (one copy of ``x`` a row, where stacked rows take two)."""
        if self.wide is not None:
            return self.space.to_user(self.xp.stack(self._wide_points()))
        if self.searching:
            return self.space.to_user(self.xp.reshape(self._trial(), (1, -1)))
        block = self.space.empty((self.size(), self.dim))
        block[...] = self.x
        if self._retrying:  # a few rows: each its own step
            for i in range(block.shape[0]):
                j, sign = self._moved(i)
                block[i, j : j + 1] = self.x[j : j + 1] + self._steps(j, j + 1, sign)
            return self.space.to_user(block)
        probe = int(self._with_probe())
        n, centre, start = block.shape[0] - probe, int(self._with_centre()), self.measured
        steps = self._steps(start, start + n - centre)  # the block's steps in one pass
        for i in range(n - centre):
            j = start + i
            block[centre + i, j : j + 1] = self.x[j : j + 1] + steps[i : i + 1]
        if probe:
            block[n, 0:1] = self.x[0:1] + self._steps(0, 1, -1.0)
        return self.space.to_user(block)

    def _wide_points(self) -> list[Any]:
        """``x + W h_0 e_0`` and ``x - W h_0 e_0`` (``W`` = `ROUGH_WIDTH`), new arrays."""
        rows = []
        for sign in (1.0, -1.0):
            row = self.xp.asarray(self.x, copy=True)
            row[0:1] = self.x[0:1] + self._wide_step(sign)
            rows.append(row)
        return rows

    def _wide_step(self, sign: float) -> Any:
        """``+- W h_0``, made exact in ``x_0``'s precision."""
        width = active().quasi_newton.ROUGH_WIDTH
        x = self.x[0:1]
        return (x + sign * width * self._steps(0, 1)) - x

    def _trial(self) -> Any:
        """The line search's trial point ``x + alpha p``, as the phase keeps it (`within`)."""
        return self.within(self.x + self.alpha * self.p)

    def tell(self, values: list[float]) -> bool:
        """Take the pending ask's values (host floats, in order); True when a gradient was
        completed (an iteration of the run)."""
        self.nfev += len(values)
        values = self._in_unit(values)
        if self.wide is not None:
            if self._noise_like(*values):
                self.ended = "rugged"
            self.wide = None
            return False
        if self.searching:
            self._judge(values[0])
            return False
        if self._retrying:
            return self._tell_backward(values)
        probe = values.pop() if self._with_probe() else None
        centre = self._with_centre()
        self.probing = self.centre_known = False
        if centre:
            value, values = values[0], values[1:]
            if math.isnan(self.fx):
                self.fx = self.f_start = value
            elif not repeats(value, self.fx, self.eps):  # (shifts a difference by 64 eps f / h)
                self.noisy, self.ended = True, "noise"
                self.noise_values = [self.fx * self.f_unit, value * self.f_unit]
                if self.previous is not None and max(value, self.fx) >= self.f_start:
                    self.x = self.start  # both values here above x0's: no confirmed progress
                return False
        start, n = self.measured, len(values)
        failed = [start + i for i, v in enumerate(values) if not math.isfinite(v)]
        if (
            not math.isfinite(self.fx)
            or len(self.retry) + len(failed) > active().quasi_newton.MAX_RETRIES
        ):
            self.ended = "non-finite values"
            return False
        self.retry += failed  # (their differences are 0 until measured backwards)
        differences = [v - self.fx if math.isfinite(v) else 0.0 for v in values]
        differences = self.space.from_host(differences)
        self.g[start : start + n] = differences / self._steps(start, start + n)
        self.measured += n
        if self.measured < self.dim or self.retry:
            return False
        complete = self._gradient_complete()
        if probe is not None and self._rough(values[0], probe) and not self.done:
            self.wide = abs(values[0] + probe - 2.0 * self.fx)
            self.wide = max(self.wide, float(self.xp.max(self.xp.abs(self._first()))))
        return complete

    def _first(self) -> Any:
        """The first gradient's first differences ``f(x + h_j e_j) - f(x)``."""
        return self.g * self._steps(0, self.dim)

    def _rough(self, forward: float, backward: float) -> bool:
        """Whether ``f`` is rugged at the differences' scale: the second difference
        ``f(x + h e_0) + f(x - h e_0) - 2 f(x)`` above `ROUGH_FLOOR` eps ``|f|`` (a smooth
        ``f`` gives ``h^2 f''``, about eps ``|f|``) and above `ROUGH_SHARE` of the largest first
        difference (a smooth ``f`` gives ``h f'' / f'`` of it, about ``sqrt(eps)``): the
        gradient then reads the ruggedness, not a slope (Moré and Wild's noise estimate at
        its smallest; theory page, *Mild noise at small d*)."""
        rules = active().quasi_newton
        if not (math.isfinite(forward) and math.isfinite(backward)):
            return False
        second = abs(forward + backward - 2.0 * self.fx)
        scale = max(abs(forward), abs(backward), abs(self.fx))
        first = float(self.xp.max(self.xp.abs(self._first())))
        return second > rules.ROUGH_FLOOR * self.eps * scale and second > rules.ROUGH_SHARE * first

    def _noise_like(self, forward: float, backward: float) -> bool:
        """Whether the ruggedness the probe read (``wide``, the larger of its second and first
        differences) is noise-like: the second difference at ``W h`` (``W`` = `ROUGH_WIDTH`)
        at most `ROUGH_GROWTH` times it. Noise, a solver's tolerance, keeps its amplitude at
        every step; a function rugged at every scale (Katsuura's) grows with the step, about
        ``W`` times, and a smooth ``f`` at a stationary point ``W^2`` times (theory page,
        *Mild noise at small d*, *The probe*)."""
        if not (math.isfinite(forward) and math.isfinite(backward)):
            return False
        second = abs(forward + backward - 2.0 * self.fx)
        return second <= active().quasi_newton.ROUGH_GROWTH * self.wide

    def _tell_backward(self, values: list[float]) -> bool:
        """The values at ``x - h_j e_j`` of the coordinates ``j`` whose forward value failed:
        their backward differences, or the end of the phase where one fails again."""
        if not all(math.isfinite(v) for v in values):
            self.ended = "non-finite values"
            return False
        for j, v in zip(self.retry, values, strict=True):
            self.g[j : j + 1] = self.space.from_host([v - self.fx]) / self._steps(j, j + 1, -1.0)
        self.retry = []
        return self._gradient_complete()

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
        scale = max(abs(self.fx), abs(self.f_start)) or math.inf
        if self.trials >= active().quasi_newton.BACKTRACKS:
            promised = -self.alpha * self.slope
            wall = promised > active().quasi_newton.WALL * scale
            self.ended = "wall" if wall else "line search"
            self.walls += wall
            return
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
        predicts."""
        return self._ratio(value) >= 1.0

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
        self.searching, self.measured, self.retry, self.short = False, 0, [], 0
        self.short_jumps = 0
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
