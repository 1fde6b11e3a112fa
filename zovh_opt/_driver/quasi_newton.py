"""A finite-difference quasi-Newton phase before the method's iterations (``quasi_newton``).

On a smooth deterministic objective a forward difference gives one directional derivative per
evaluation, and a quasi-Newton method along full gradients converges far faster than random
directions. So a deterministic ``"zovh"`` run starts with forward-difference gradients (steps
``sqrt(eps) max(|x_i|, l / sqrt(d))``, the centre measured again to catch noise) and
limited-memory BFGS steps (`zovh_opt._driver.lbfgs`) judged by Armijo's condition on values alone.
It ends on a failed line search, a step that did not decrease ``f``, `SHORT_STEPS` steps
below its differences' resolution, its step limit, noise or failing values; the method then
starts at its point (`tell_phase`), and after a converged phase may hop or refine at small d
(`hop`) or resume the phase (`resume_phase`). With bounds it works in the box map's
coordinates. The phase in full: theory page, *The run's parts in detail*, *The quasi-Newton
phase, step by step*; the evidence, *The quasi-Newton phase*.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .._arrays.backend import ArraySpace, norm
from .._methods import build
from .._noise.monitor import repeats
from .coordinates import power_of_two_near
from .lbfgs import LbfgsInverse, initial_matrix, inverse_times

__all__ = [
    "GRADIENT",
    "QuasiNewtonPhase",
    "asked_size",
    "hop",
    "iterate",
    "phase_applies",
    "phase_fields",
    "plan_phase",
    "resume_phase",
    "start_phase",
    "tell_phase",
]

GRADIENT = "gradient"  # the driver's phase while the quasi-Newton phase runs

MEMORY = 10  # secant pairs kept (L-BFGS-B's default m)
BLOCK = 64  # points of one gradient ask at most: the asks' memory is BLOCK d floats
FIRST_STEP = 0.1  # the first trial step's length over the length scale l
ARMIJO = 1e-4  # sufficient decrease: f(x + a p) <= f(x) + ARMIJO a g'p
BACKTRACKS = 30  # trials of one line search before the phase ends
# a failed line search whose last, shortest trial its slope promised a decrease of this much of
# |f| (relative) met a wall or a jump of f that a forward difference crossed, not a minimum:
# the phase ends without converging and the method takes over at its own scale (theory page,
# *A wall is not a minimum*); a smooth f keeps its promise at such a step
WALL = 1e-4
MAX_RETRIES = BLOCK  # coordinates of a gradient measured backwards after a failed forward
# value, in one ask; more failures than that end the phase (f fails there, not sporadically)
MIN_GRADIENTS = 3  # the phase runs where maxfev pays for this many gradients at least
MAX_STEPS = 200  # and ends after this many steps where d >= MEMORY: an objective not solved
# by then is mostly one whose conditioning the method's curvature model learns better than
# MEMORY secant pairs (COCO f2, f10 at d = 40 lost with 400; where the method does no better,
# the phase resumes: `resume_phase`); where d < MEMORY the pairs span the space (close to full
# BFGS) and on COCO bbob (f6, f12: docs' theory page) the phase did better than the model:
# SMALL_D_STEPS
SMALL_D_STEPS = 1000
# up to this d, where the method's first iterations after a converged phase found a lower
# value at least HOP_DISTANCE l from its point, the phase runs again from there (`hop`; COCO
# bbob, 1000 d: at d = 2 more solved on instances 1-5 and 6-10, at d = 3 more on one and
# fewer on the other, at d = 5 fewer: the method's smoothing finds Rastrigin's basin there)
HOP_DIMENSIONS = 2
HOP_DISTANCE = 1e-3  # the phase's false convergences: 1e-8 to 6e-5 l, new basins 0.07 to 2.5 l
# up to REFINE_DIMENSIONS, where the lower value lies within HOP_DISTANCE l (the phase's own
# resolution: often one of its differences, 4e-8 l away on COCO f12 at d = 2), the method
# starts again from it at REFINE_SCALE l (`_refine`): at the kick's scale it went on for the
# budget left (f12: rejected and accepted trials as coin flips drifted out to f ~ 1e48;
# Weierstrass's f16: a crawl), at 0.03 l it refines (COCO bbob: more solved at d = 2 and 3,
# level at d = 5; theory page, *Refining after the kick up to d = 3*)
REFINE_SCALE = 0.03
REFINE_DIMENSIONS = 3
# a converged phase whose steps since x0 were at most h / ARMIJO long is stalled (its point no
# length scale for the method) where its first step decreased f by less than this fraction of
# the slope's prediction (`QuasiNewtonPhase.stalled`): ruggedness read as slope gave 1e-4 to
# 0.012 (hashed and crc32 ruggedness, noise with noisy=False), smooth minima that close 0.1 to
# 0.57 (COCO bbob's phases from restarts at d = 2, Weierstrass's f16 at d = 10 to 40)
STALLED_RATIO = 0.05
# the phase ends after this many accepted steps in a row shorter than its difference step h:
# below h the differences no longer resolve f's slope, and on a function rugged at every
# scale (Weierstrass's f16 at d = 2, after a hop) each such step still decreased f by a
# little, so that the phase crawled 1 450 of the run's 2 000 evaluations in steps of 3e-9
SHORT_STEPS = 3
# ... and that end is a convergence only where eps is at most this: in float32 h is 3.4e-4
# of |x|, and a phase crawling below it on a box of mixed widths (1e-2 to 1.5) had the
# minimum 0.83 of a width away (issue #67); the method then decides by its own stops
SHORT_STEPS_MAX_EPS = 1e-12
# the phase drops its secant pairs after this many steps in a row that decreased f at least
# as much as their slope predicted and whose pair showed no positive curvature (skipped):
# f is concave or linear along them, the pairs describe another region, and the steps they
# scale can stay that region's length (COCO f6 at d = 2 in a box: 494 steps of 4e-4 on a
# concave stretch of the box map's fold, 37 above the minimum); the next trial is then twice
# the last step's length. Steps that decreased f less break the run (Katsuura's f23 at d = 2
# lost 0.49 to 0.37 of its targets without this condition); two in a row dropped the pairs
# of f10's valley at d = 2 on T_osz's ripples (0.98 to 0.81), three did not (theory page)
SKIPPED_PAIRS = 3
# a line search's first trial that decreased f at least as much as its slope predicted (f
# linear or concave along it: the line's minimum lies beyond it) is followed by a trial at
# twice its step, doubling while each is lower than the last and fell so too, at most this
# many times; the lowest is the step (Moré and Thuente's search lengthens a step until the
# curvature condition holds; the Armijo search alone never does). COCO bbob, 1000 d: ahead at
# d = 10 and 20, level at d = 2 and 5; with a ratio of 0.75 (half the line's minimum on a
# quadratic) d = 5 lost Katsuura's f23 (theory page)
MAX_EXPANSIONS = 10


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
    """

    def __init__(
        self,
        x0: Any,
        length: float,
        value: float | None,
        recheck: bool,
        within: Callable[[Any], Any] | None = None,
        caps: Any = None,
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
        self.within = _itself if within is None else within
        self.eps = float(self.xp.finfo(self.space.dtype).eps)
        self.g = self.space.zeros((self.space.dim,))
        self.pairs: list[tuple[Any, Any, float]] = []  # (s, y, 1 / s'y), oldest first
        self.skipped = 0  # steps in a row skipped that fell at least linearly (`SKIPPED_PAIRS`)
        self.ratio = math.nan  # the last step's decrease over the one its slope predicted
        self.searching = False  # False: measuring a gradient; True: a line search
        self.measured = 0  # coordinates of the gradient measured so far
        self.retry: list[int] = []  # coordinates whose forward value failed: measured backwards
        self.steps = 0  # accepted steps
        self.longest = 0.0  # the longest accepted step's length since x0 (`stalled`)
        self.short = 0  # accepted steps in a row shorter than the difference step
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
            return self.eps <= SHORT_STEPS_MAX_EPS
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
        if not self.converged or self.steps == 0:  # no step: the method starts at x0 itself
            return False
        return self.longest <= self.difference_step / ARMIJO and self.first_ratio < STALLED_RATIO

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
        return SMALL_D_STEPS if self.dim < MEMORY else MAX_STEPS

    @property
    def _retrying(self) -> bool:
        """Whether the pending ask measures backwards the coordinates whose forward value
        was not finite (the gradient's forward values are all in)."""
        return not self.searching and self.measured == self.dim and bool(self.retry)

    def _with_centre(self) -> bool:
        """Whether the pending ask starts with the centre (a gradient's first ask, when
        ``f(x)`` is unknown or rechecked)."""
        return not self.searching and self.measured == 0 and (self.recheck or math.isnan(self.fx))

    def size(self) -> int:
        """The points of the next ask."""
        if self.searching:
            return 1
        if self._retrying:
            return len(self.retry)
        return min(BLOCK - int(self._with_centre()), self.dim - self.measured) + int(
            self._with_centre()
        )

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
        j = self.measured + i - int(self._with_centre())
        return (j, 1.0) if j >= self.measured else None

    def points(self) -> Any:
        """The pending ask's points, ``point(i)`` for every ``i``, as one new ``(n, d)`` array
        in the caller's namespace (one copy of ``x`` a row, where stacked rows take two)."""
        if self.searching:
            return self.space.to_user(self.xp.reshape(self._trial(), (1, -1)))
        block = self.space.empty((self.size(), self.dim))
        block[...] = self.x
        if self._retrying:  # a few rows: each its own step
            for i in range(block.shape[0]):
                j, sign = self._moved(i)
                block[i, j : j + 1] = self.x[j : j + 1] + self._steps(j, j + 1, sign)
            return self.space.to_user(block)
        n, centre, start = block.shape[0], int(self._with_centre()), self.measured
        steps = self._steps(start, start + n - centre)  # the block's steps in one pass
        for i in range(n - centre):
            j = start + i
            block[centre + i, j : j + 1] = self.x[j : j + 1] + steps[i : i + 1]
        return self.space.to_user(block)

    def _trial(self) -> Any:
        """The line search's trial point ``x + alpha p``, as the phase keeps it (`within`)."""
        return self.within(self.x + self.alpha * self.p)

    def tell(self, values: list[float]) -> bool:
        """Take the pending ask's values (host floats, in order); True when a gradient was
        completed (an iteration of the run)."""
        self.nfev += len(values)
        values = self._in_unit(values)
        if self.searching:
            self._judge(values[0])
            return False
        if self._retrying:
            return self._tell_backward(values)
        if self._with_centre():
            value, values = values[0], values[1:]
            if math.isnan(self.fx):
                self.fx = self.f_start = value
            elif not repeats(value, self.fx, self.eps):  # (shifts a difference by 64 eps f / h)
                self.noisy, self.ended = True, "noise"
                if self.previous is not None and max(value, self.fx) >= self.f_start:
                    self.x = self.start  # both values here above x0's: no confirmed progress
                return False
        start, n = self.measured, len(values)
        failed = [start + i for i, v in enumerate(values) if not math.isfinite(v)]
        if not math.isfinite(self.fx) or len(self.retry) + len(failed) > MAX_RETRIES:
            self.ended = "non-finite values"
            return False
        self.retry += failed  # (their differences are 0 until measured backwards)
        differences = [v - self.fx if math.isfinite(v) else 0.0 for v in values]
        differences = self.space.from_host(differences)
        self.g[start : start + n] = differences / self._steps(start, start + n)
        self.measured += n
        if self.measured < self.dim or self.retry:
            return False
        return self._gradient_complete()

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
                self.pairs = [*self.pairs[-(MEMORY - 1) :], (s, y, 1.0 / sy)]
                self.skipped = 0
            else:
                self.skipped = self.skipped + 1 if self.ratio >= 1 else 0
                if self.skipped >= SKIPPED_PAIRS:
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
        length = FIRST_STEP * self.length  # without pairs: the first step's, or after a drop
        if 0 < restart < length:  # twice the last step's, where that is shorter
            length = restart
        self.alpha = 1.0 if self.pairs else length / self.p_norm
        self.searching, self.trials = True, 0

    def _judge(self, value: float) -> None:
        """The line search's trial ``x + alpha p`` has ``value``: the step, a longer trial
        (`MAX_EXPANSIONS`) or a shorter one."""
        self.trials += 1
        if self.expanding is not None:
            self._expanded(value)
            return
        if math.isfinite(value) and value <= self.fx + ARMIJO * self.alpha * self.slope:
            if self.trials == 1 and self._fell_linearly(value) and MAX_EXPANSIONS > 0:
                self.expanding, self.alpha = (self.alpha, value, 0), 2.0 * self.alpha
                return
            self._accept(value)
            return
        if self.trials >= BACKTRACKS:
            promised = -self.alpha * self.slope
            wall = promised > WALL * max(abs(self.fx), abs(self.f_start))
            self.ended = "wall" if wall else "line search"
            self.walls += wall
            return
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
            if self._fell_linearly(value) and doublings + 1 < MAX_EXPANSIONS:
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
        self.short = self.short + 1 if length < self.difference_step else 0
        if self.short >= SHORT_STEPS:
            self.ended = "short steps"

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


def phase_applies(run: Any) -> bool:
    """Whether the `zovh_opt.Optimizer` ``run`` starts with the phase: ``quasi_newton`` is
    ``"auto"``, the method ``"zovh"`` with the step rule and a curvature model not set
    ``"off"`` (the paper's iteration runs as published), an objective not declared noisy,
    and a budget (``maxfev``, and ``maxiter`` iterations of the method) paying for
    `MIN_GRADIENTS` gradients."""
    dim, budget = run._step.space.dim, run.options["maxfev"]
    if run.options["maxiter"] is not None:
        budget = min(budget, run.options["maxiter"] * run._step.points_per_iteration)
    return (
        run.options["quasi_newton"] == "auto"
        and run.method == "zovh"
        and run._step.control is not None
        and run._requested.get("curvature", "auto") != "off"
        and run.options["noisy"] is not True
        and budget >= MIN_GRADIENTS * (dim + 1) + run._returned.reserve + 2
    )


def plan_phase(run: Any) -> None:
    """Whether the `zovh_opt.Optimizer` ``run`` will start with the phase
    (``run._phase_planned``, `phase_applies`); with ``noisy=False`` it starts at once (and
    measures ``f(x0)`` itself), otherwise after the measurement of ``x0``."""
    run._quasi_newton = None
    run._phase_planned = phase_applies(run)
    if run._phase_planned and run._noise.done:
        start_phase(run, None)


def iterate(run: Any) -> Any:
    """The iterate of ``run`` in its coordinates: the phase's while it runs, else the
    method's."""
    phase = run._quasi_newton
    return run._step.x if phase is None or phase.done else phase.x


def asked_size(run: Any) -> int:
    """The points of the next ask of ``run``'s phase, or of its method."""
    if run._phase == GRADIENT:
        return run._quasi_newton.size()
    return run._step.points_per_iteration


def start_phase(run: Any, value: float | None = None, *, measured: bool = False) -> None:
    """Start the phase at ``x0`` of ``run``, where ``f(x0) = value`` (``None``: not
    measured); after the measurement of ``x0`` (``measured``: its first value), where it was
    planned and the values there agreed. A non-finite value leaves the run to its method."""
    if measured:
        if not (run._phase_planned and not run._noise.detected and run.nit == 0):
            return
        value = run._noise.values[0]
    if value is not None and not math.isfinite(value):
        return
    step = run._step
    recheck = run.options["noisy"] == "auto"
    run._quasi_newton = QuasiNewtonPhase(
        step.x, step.scale, value, recheck, run._coordinates.in_one_period,
        run._coordinates.difference_caps(),
    )  # fmt: skip
    run._phase = GRADIENT


def tell_phase(run: Any, values: list[float]) -> None:
    """The values of the phase's ask in ``run``: a completed gradient is an iteration (the
    trace, ``nit``); ``ftarget`` is checked; where the phase has ended, the run's method
    starts at its point with the budget left (where the phase found noise, with the pairs
    and the length scale of a noisy run, and the measurement of ``x0`` follows,
    `zovh_opt._noise.monitor`)."""
    phase = run._quasi_newton
    if phase.tell(values):
        run.nit += 1
        run._trace.add(run.nit, run._told, phase.f_value)
    reached = run._stopping.target_reached(run._returned.lowest())
    if reached is not None:
        run.stop(*reached)
        return
    if not phase.done:
        return
    left = run.options["maxfev"] - run._told
    if phase.noisy:
        run._noise.found(left, elsewhere=True)
    # in a box |z| is the box's offset in the run's coordinates, no scale (issue #67: 73 in a
    # box 1 wide, and the float32 method's queries spread over the whole box for 3 000 values)
    boxed = run._coordinates.box is not None
    scale = phase.length if phase.noisy or phase.stalled or boxed else None
    _method_from(run, phase.x, scale, noisy=phase.noisy)
    if phase.converged:
        run._stopping.converged_value = phase.f_value
    if phase.ended == "steps":
        phase.handover_lowest = run._returned.lowest()
    phase.release()
    run._phase = "iterate" if run._noise.done else "measure"


def resume_phase(run: Any) -> bool:
    """At the first ``ftol`` stall of ``run``'s method after a phase that its step limit cut
    (still descending): where the method found no value below the run's lowest before it,
    the phase starts again from its point (``True``; the stall's finer scale does not
    follow). Either way the stall decides once."""
    phase = run._quasi_newton
    if phase is None or phase.handover_lowest is None:
        return False
    before, phase.handover_lowest = phase.handover_lowest, None
    lowest = run._returned.lowest()
    if lowest is None or lowest < before:
        return False
    phase.resume()
    return _phase_again(run)


def hop(run: Any) -> bool:
    """After the method's first iterations that followed a converged phase in ``run`` found a
    lower value (`StoppingRules.lower_found`): up to `HOP_DIMENSIONS`, where the lowest point
    lies farther than `HOP_DISTANCE` ``l`` from the phase's point (a place the phase did not
    reach, another basin or a stretch of a valley its differences missed; not a value lower
    at the phase's own resolution), the phase starts again there (``True``): the method was
    the kick, the phase is the local search (basin hopping); up to `REFINE_DIMENSIONS`, where
    nearer, the method starts again from it at a finer scale (`_refine`)."""
    stopping = run._stopping
    if not stopping.lower_found:  # (every iteration: one flag)
        return False
    stopping.lower_found = False
    phase, best = run._quasi_newton, run._returned.best
    if phase is None or best is None or phase.dim > max(HOP_DIMENSIONS, REFINE_DIMENSIONS):
        return False
    x = phase.space.copy_in(run._coordinates.to_run(best[1]))
    if norm(x - phase.x, phase.xp) <= HOP_DISTANCE * phase.length:
        if phase.dim <= REFINE_DIMENSIONS:
            _refine(run, x)
        return False
    if phase.dim > HOP_DIMENSIONS:
        return False
    phase.hop(x, best[0])
    return _phase_again(run)


def _refine(run: Any, x: Any) -> None:
    """The method of ``run`` again from ``x``, a value below the converged phase's found at
    the phase's own resolution (often one of its differences), at the length scale
    `REFINE_SCALE` ``l``: it refines there instead of going on at the kick's scale."""
    _method_from(run, x, REFINE_SCALE * run._quasi_newton.length, noisy=False)
    _forget_windows(run)


def _method_from(run: Any, x: Any, scale: float | None, *, noisy: bool) -> None:
    """The run's method built at ``x`` (the phase's coordinates) with the length scale
    ``scale`` (``None``: its own) and the budget left: at the hand-over and a refinement."""
    run._step, run._method_options = build(
        run.method, run._quasi_newton.space.to_user(x), rng=run._seeds, scale=scale,
        maxfev=run.options["maxfev"] - run._told, options=run._requested, noisy=noisy,
        first_step=run._coordinates.first_step,
    )  # fmt: skip


def _phase_again(run: Any) -> bool:
    """The phase, started again (`resume_phase`, `hop`), asks next."""
    run._phase = GRADIENT
    _forget_windows(run)
    return True


def _forget_windows(run: Any) -> None:
    """No ``ftol`` window, and no average of centres, from before a restart of the phase or
    of the method is compared with what follows."""
    run._stopping.forget_windows()
    run._returned.average.forget()


WALL_NOTE = (
    " The quasi-Newton phase met a wall or a jump of f (its slope promised a decrease that even "
    "its shortest trial did not give): a tolerance met next to it is no minimum, so only the "
    "budgets or ftarget end such a run."
)


def met_a_wall(run: Any) -> bool:
    """Whether ``run``'s phase ended at a wall or a jump of ``f`` (`WALL`): its tolerances then
    do not end it with success, where they are met next to the wall (the run ends by its
    budgets or ``ftarget``)."""
    return run._quasi_newton is not None and run._quasi_newton.walls > 0


def forget_pairs(run: Any) -> None:
    """After an iteration of ``run``'s method: the phase's secant pairs go once a curvature
    model has learned (its ``hess_inv`` is then the result's): once it has had as many pairs
    as it has unknowns (``d`` for the diagonal model, ``d (d + 1) / 2`` for the full one), or
    as many evaluations as the phase. The paper's iteration learns none."""
    phase, method = run._quasi_newton, run._step
    if phase is None or not phase.pairs or method.curvature == "off":
        return
    d = method.space.dim
    unknowns = d * (d + 1) // 2 if method.curvature == "full" else d
    if method.nfev >= min(2 * unknowns, phase.nfev):
        phase.pairs = []


def phase_fields(run: Any) -> dict[str, Any]:
    """The result's ``quasi_newton`` (steps, evaluations and why the phase ended) where the
    run had the phase, and ``jac`` and ``hess_inv`` in the user's units: ``jac`` the
    method's, or the phase's gradient before the method has iterated; ``hess_inv`` the
    phase's secant pairs' while it has them (`forget_pairs`), else the method's."""
    phase, method = run._quasi_newton, run._step

    def source() -> dict[str, Any]:
        if phase is None:
            return method.estimates()
        fields = method.estimates() if method.nit else phase.estimates()
        if phase.pairs:
            fields = {**fields, "hess_inv": phase.estimates()["hess_inv"]}
        return fields

    fields = run._coordinates.estimates(source)
    if phase is not None:
        fields["quasi_newton"] = {
            "nit": phase.steps,
            "nfev": phase.nfev,
            "ended": phase.ended,
            "resumes": phase.resumes,
            "hops": phase.hops,
            "walls": phase.walls,
        }
    return fields
