"""A model-based trust region for a mildly noisy objective at small d, before the method,
and the opening of a deterministic run at the smallest d, before the quasi-Newton phase.

Every value it is given updates a quadratic model of ``f``: least squares over the nearest
points, far ones weighing less, the Hessian changed as little as the points agree on (Powell's
least-change idea, held back by a ridge as far as the last model misses the values; after
failed steps a fit without that memory replaces it where their slopes disagree, Powell's
alternative model, and takes the next step where it would have foreseen the failed one far
better), so each evaluation teaches the model what a batch of pairs teaches the method. Its
step minimises the model within a radius that the ratio of actual to predicted decrease
grows and shrinks; where a shrink would leave too few well-spread points near the
centre, a geometry point comes first; a region that went lower starts afresh where its
radius runs out (its close points fit the roughness or the noise), and one that would end
where no check read noise measures its centre again (a low outlier would stay its end). Its
first radius is `RADIUS` ``|x0_j|`` along each coordinate (1 where ``x0 = 0``, as COBYQA's);
on the host, ``O(d^2)`` numbers, up to `TRUST_REGION_MAX_DIMENSION`. Evidence: the theory
page, *Mild noise at small d: a model-based trust region*, and for the opening *The region
opens deterministic runs at d <= 3*.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._noise import robust
from .._noise.samples import sample_std
from ..tuning import active
from .region_fit import fit_model, fresh_fit_missed_less

__all__ = ["TrustRegionPhase", "geometry_point", "poised", "step_in_ball"]


def step_in_ball(g: np.ndarray, h: np.ndarray, radius: float) -> np.ndarray:
    """The minimiser of ``g's + s'hs / 2`` over ``|s| <= radius`` (Moré and Sorensen's
    conditions: ``(h + lam I) s = -g``, ``h + lam I`` positive semidefinite, ``lam (radius -
    |s|) = 0``), by bisection on ``lam`` in ``h``'s eigenbasis; in the hard case (``g`` without
    a part along the lowest eigenvector, the step at ``lam = -lam_min`` inside the ball) that
    eigenvector fills the step to the radius."""
    # in a power of two of the Hessian's size (the slope's where it is 0), so that 2^k g,
    # 2^k h give the same step on any BLAS; tiny stays relative to h's eigenvalues
    size = float(np.abs(h).max(initial=0.0)) or float(np.abs(g).max(initial=0.0)) / radius
    if size > 0 and math.isfinite(size):
        unit = math.ldexp(1.0, math.frexp(size)[1])
        g, h = g / unit, h / unit
    lam, q = np.linalg.eigh(h)
    gq = q.T @ g
    top = float(np.abs(lam).max()) if lam.size else 0.0
    tiny = 1e-12 * max(1.0, top)

    def step(shift: float) -> np.ndarray:
        inside = lam + shift > tiny
        with np.errstate(divide="ignore", invalid="ignore"):
            return -(q @ np.where(inside, gq / (lam + shift), 0.0))

    low = max(0.0, -float(lam[0]))
    if lam[0] > tiny:
        s = step(0.0)
        if np.linalg.norm(s) <= radius:
            return s
    else:
        flat = lam + low <= tiny  # the directions h + low I does not move along
        if np.linalg.norm(gq[flat]) <= tiny * max(1.0, float(np.linalg.norm(g))):
            s = step(low)
            short = radius * radius - float(s @ s)
            if short >= 0:  # the hard case
                return s + math.sqrt(short) * q[:, 0]
    high = low + float(np.linalg.norm(g)) / radius + top + 1.0
    for _ in range(200):  # (to the float's resolution of lam)
        middle = 0.5 * (low + high)
        if middle in (low, high):
            break
        low, high = (middle, high) if np.linalg.norm(step(middle)) > radius else (low, middle)
    return step(high)


def _close(points: list[np.ndarray], centre: np.ndarray, radius: float) -> np.ndarray:
    """The offsets from ``centre`` of the ``points`` within twice the ``radius``, over it."""
    offsets = np.array(points) - centre
    return offsets[np.linalg.norm(offsets, axis=1) <= 2 * radius] / radius


def poised(points: list[np.ndarray], centre: np.ndarray, radius: float) -> bool:
    """Whether at least ``d + 1`` of the ``points`` within twice the ``radius`` of ``centre``
    span every direction: their offsets' smallest singular value over the radius at least
    `POISED`."""
    close, d = _close(points, centre, radius), centre.shape[0]
    if close.shape[0] < d + 1:
        return False
    return bool(np.linalg.svd(close, compute_uv=False)[d - 1] >= active().trust_region.POISED)


def geometry_point(points: list[np.ndarray], centre: np.ndarray, radius: float) -> np.ndarray:
    """A point at the ``radius`` from ``centre`` along the direction the close points span
    least."""
    rows = np.vstack([_close(points, centre, radius), np.zeros((1, centre.shape[0]))])
    return centre + radius * np.linalg.svd(rows)[2][-1]  # (the centre's row: never empty)


class TrustRegionPhase:
    """State of the trust region for one run (module docstring): host float64 arrays.

    Parameters
    ----------
    x0 : numpy.ndarray
        The start in the run's coordinates (host, float64).
    f0 : float or None
        ``f(x0)``: the mean of its measured values; ``None`` where unmeasured (``x0`` is then
        the first point of the region's first ask).
    noise : float
        The standard deviation of those values.
    noisy : bool
        Whether the run found noise (else ``f`` is deterministic, rugged at a fine scale).
    like : numpy.ndarray, optional
        The point whose magnitudes set the first radii (``x0``, where the region starts
        elsewhere); ``x0`` itself by default.
    length : float, optional
        The run's length scale ``l``: magnitudes below ``sqrt(eps) l`` are rounding (a start
        on a box's face is ``1e-17`` there), and set no radius.
    opening : int, optional
        Where positive, the region opens a deterministic run: it ends (``"opening"``) once it
        has spent this many evaluations, and the quasi-Newton phase goes on from its centre.
    """

    def __init__(
        self,
        x0: np.ndarray,
        f0: float | None,
        noise: float,
        *,
        noisy: bool = True,
        like: Any = None,
        length: float = 0.0,
        opening: int = 0,
    ) -> None:
        self.noisy = bool(noisy)
        self.dim = int(x0.shape[0])
        rules = active().trust_region
        magnitudes = np.abs(x0 if like is None else like)
        magnitudes[magnitudes < math.sqrt(np.finfo(np.float64).eps) * length] = 0.0
        largest = float(magnitudes.max())
        floor = rules.COORDINATE_FLOOR * largest if largest > 0 else 1.0 / rules.RADIUS
        self.scale = rules.RADIUS * np.maximum(magnitudes, floor)
        self.radius = 1.0  # in the scaled coordinates u = x / scale
        self.u = x0 / self.scale
        known = f0 is not None
        self.fu = float(f0) if known else math.inf  # (inf: any finite value is lower)
        self.f_start = self.fu
        self.noise = float(noise)
        self.points: list[np.ndarray] = [self.u.copy()] if known else []
        self.values: list[float] = [self.fu] if known else []
        self.hessian = np.zeros((self.dim, self.dim))  # of the model, in u
        self.pending: list[np.ndarray] = ([] if known else [self.u.copy()]) + self._stencil()
        self.predicted = math.nan  # the pending step's predicted decrease (nan: no step)
        self.step_length = math.nan  # its length in u
        self.good_radius = 1.0  # the radius of the last step that kept its prediction
        self.steps = 0
        self.nfev = 0
        self.ended: str | None = None
        self.quiet = 0  # failed steps in a row within the noise (`_below_noise`)
        self.level = self.noise  # the noise near the centre, as its last check measured it
        self.measured = False  # ... and whether a check has measured it (else x0's)
        self.misfit = 0.0  # the last fit's residuals' spread before a check (`fit_model`)
        self.checking = False  # the pending ask measures the centre again (`_check_noise`)
        self.confirming = False  # ... or a step's point that fell far below its prediction
        self.opening = int(opening)
        self.opened = self.opening > 0  # (a deterministic run's opening, gone on or not)
        self.failures = 0  # steps in a row that kept less than `FAILED_RATIO` of their prediction
        self.restarts = 0  # fresh starts from the centre after the radius ran out (`_ran_out`)
        self.restart_value = self.fu  # the centre's value at the last (re)start
        self.ending: list[float] | None = None  # the centre's fresh values before it ends
        self.outliers = 0  # low outliers found at the centre before the end (`_end`)
        self.fresh_next = False  # the next step is the fresh fit's (`fresh_fit_missed_less`)

    @property
    def done(self) -> bool:
        return self.ended is not None

    def go_on(self, rugged: bool = False) -> None:
        """An opening region goes on to its own end: it converged within its opening (the
        phase's differences would read their own rounding; the phase follows its end), or
        (``rugged``) the phase it handed over to found ``f`` rugged at its centre before any
        step (the method follows, as after a rugged ``f``'s region)."""
        self.ended, self.opening = None, 0
        self.opened = self.opened and not rugged

    @property
    def x(self) -> np.ndarray:
        """The centre (lowest value seen) in the run's coordinates."""
        return self.u * self.scale

    @property
    def length(self) -> float:
        """The method's length scale at the hand-over: the radius of the last step that kept
        at least `SHRINK_RATIO` of its prediction, where the model still rose above the
        noise (root mean square over the coordinates, in the run's coordinates)."""
        return float(self.good_radius * np.sqrt(np.mean(self.scale**2)))

    @property
    def noise_stayed(self) -> bool:
        """Whether a noisy region's noise near the centre is still `NOISE_KEPT` of ``x0``'s:
        it did not fall with ``f`` (additive noise), or no check measured it again. Not where
        neither read any (an ``f`` whose noise is in a fraction of the calls, `_end`)."""
        kept = not self.level < active().trust_region.NOISE_KEPT * self.noise
        return self.noisy and kept and self.level + self.noise > 0

    @property
    def ran_out(self) -> bool:
        """Whether a noisy region ran its radius to the end after a check measured noise
        near the centre: steps failed at every radius below the last good one, as they do
        where the noise, not ``f``, decides them; a check's three values may have read it far
        too low (below a third of it about one time in ten). Or it ended at a second low
        outlier for its centre (`_end`), where the radius is what the outliers cut down."""
        return self.ended == "outlier" or (self.ended == "radius" and self._noise_read)

    @property
    def _noise_read(self) -> bool:
        """Whether the region is noisy and a check measured noise near its centre."""
        return self.noisy and self.measured and self.level > 0

    @property
    def rugged_end(self) -> bool:
        """Whether a rugged ``f``'s region (deterministic, not an opening) ran its radius out
        where its last ``d + 1`` values were not all the centre's (a plateau: the method's
        flat queries end the run there, and say so)."""
        if self.noisy or self.opened or self.ended != "radius":
            return False
        last = self.values[-(self.dim + 1) :]
        return len(last) < self.dim + 1 or any(v != self.fu for v in last)

    @property
    def roughness(self) -> float:
        """How far its last ``2 d + 1`` values lie above the centre's at most: at the end of its
        radius, the spread of a rugged ``f``'s roughness or of the noise."""
        return max(self.values[-(2 * self.dim + 1) :]) - self.fu

    @property
    def noise_read(self) -> float:
        """The largest reading of the noise: ``x0``'s, the last check's, the fit's residuals'."""
        return max(self.noise, self.level, self.misfit)

    def _stencil(self) -> list[np.ndarray]:
        """The first points: ``u0 +- e_j`` (radius 1), which give the model's gradient and
        the diagonal of its Hessian."""
        eye = np.eye(self.dim)
        return [self.u + sign * eye[j] for j in range(self.dim) for sign in (1.0, -1.0)]

    def size(self) -> int:
        """The points of the next ask (the model and its step made here)."""
        if not self.pending:
            self._next()
        return len(self.pending)

    def point(self, i: int) -> np.ndarray:
        """Point ``i`` of the pending ask in the run's coordinates (host float64)."""
        return self.pending[i] * self.scale

    def tell(self, values: list[float]) -> None:
        """The values of the pending ask: the centre moves to a lower one, the radius follows
        the ratio of the step's actual to predicted decrease; an opening that has spent its
        evaluations ends."""
        self._take(values)
        if self.opening > 0 and not self.done and self.nfev >= self.opening:
            self.ended = "opening"

    def _take(self, values: list[float]) -> None:
        asked, self.pending = self.pending, []
        self.nfev += len(asked)
        if self.checking:
            self._check_noise(values)
            return
        if self.ending is not None:
            self._end(values)
            return
        if self.confirming:
            self.confirming = False
            self._measured_again(values)
            return
        before, centre = self.fu, self.u
        for u, value in zip(asked, values, strict=True):
            if not math.isfinite(value):
                continue  # missing data: no model term, and a step there failed
            self.points.append(u)
            self.values.append(float(value))
            if value < self.fu:
                self.u, self.fu = u, float(value)
        if self.f_start == math.inf:  # x0 was the first ask's first point
            self.f_start = values[0] if math.isfinite(values[0]) else self.fu
            if not self.values:
                self.ended = "no values"
                return
        if math.isnan(self.predicted):  # the stencil, or a geometry point
            return
        predicted, self.predicted = self.predicted, math.nan
        self.steps += 1
        value = values[0] if math.isfinite(values[0]) else math.inf
        ratio = (before - value) / predicted
        rules = active().trust_region
        self.failures = self.failures + 1 if ratio < rules.FAILED_RATIO else 0
        if ratio >= rules.SHRINK_RATIO:
            self.good_radius = self.radius
        elif math.isfinite(value):
            points, kept = self._usable()
            self.fresh_next = self.fresh_next or fresh_fit_missed_less(
                points, kept, centre, before, self.radius, asked[0], value, predicted
            )
        if ratio >= rules.GROW_RATIO and self.step_length > 0.9 * self.radius:
            self.radius *= rules.GROW
        elif ratio < rules.SHRINK_RATIO:
            if poised(self.points, self.u, self.radius):
                self.radius *= rules.SHRINK
            else:
                self.pending = [geometry_point(self.points, self.u, self.radius)]
        if self.radius < rules.END_RADIUS:
            self._ran_out()
        elif self.noisy and ratio > rules.CONFIRM_RATIO and self.fu == value:
            self.confirming, self.pending = True, [self.u.copy()] * rules.CONFIRM
        elif not self.pending and self._below_noise(ratio, before - value):
            self.checking, self.pending = True, [self.u.copy()] * rules.NOISE_CHECK

    def _below_noise(self, ratio: float, change: float) -> bool:
        """Whether `NOISE_STEPS` steps in a row of a noisy region failed (``ratio`` below
        `SHRINK_RATIO`) by a ``change`` of ``f`` within `NOISE_CHANGE` times the noise near the
        centre (``level``: ``x0``'s, until a check measured it): the steps then judge the
        noise, not ``f``, and the model's slope is the noise over the radius. Until a check
        has measured it, below `MISFIT_RADIUS` the noise is at least the last fit's residuals'
        spread (``misfit``): ``x0``'s two values understate it often enough (below a tenth of
        it one time in twelve) that no step would count as within it, and the radius would
        run to its end."""
        rules = active().trust_region
        noise = self.level
        if not self.measured and self.radius < rules.MISFIT_RADIUS:
            noise = max(noise, self.misfit)
        if not self.noisy or not noise > 0:
            return False
        failed = ratio < rules.SHRINK_RATIO and abs(change) < rules.NOISE_CHANGE * noise
        self.quiet = self.quiet + 1 if failed else 0
        return self.quiet >= rules.NOISE_STEPS

    def _check_noise(self, values: list[float]) -> None:
        """The centre's fresh values: where their spread is still `NOISE_KEPT` of ``level`` or
        more (noise that stays while ``f`` falls: additive) the region ends and the method,
        whose batches average it, takes over; else (noise that fell with ``f``: relative) the
        region goes on with their spread as the noise near the centre, and where it ends the
        method is told the larger of the two. The centre's value becomes the median of its old
        and fresh ones (`_measured_again`)."""
        self.checking, self.quiet, self.measured = False, 0, True
        self._measured_again(values)
        here = sample_std(values)  # (not model points: they would weigh the centre's value)
        if not here < active().trust_region.NOISE_KEPT * self.level:
            self.ended, self.level = "noise", max(self.level, here)
            return
        self.level = here

    def _measured_again(self, values: list[float]) -> None:
        """The centre's value: the median of the one that made it the centre and its fresh
        ``values``; the lowest value seen is the centre again. A low outlier that made its
        point the centre would otherwise stand below every real value, and every step would
        fail against it until the radius ended the region. Asked by the noise check, and in a
        noisy region by a step that fell more than `CONFIRM_RATIO` times its prediction."""
        fresh = [float(v) for v in values if math.isfinite(v)]
        here = [
            i for i, (p, v) in enumerate(zip(self.points, self.values, strict=True))
            if v == self.fu and np.array_equal(p, self.u)
        ]  # fmt: skip
        if not fresh or not here:
            return
        self.values[here[-1]] = float(np.median([self.fu, *fresh]))
        lowest = int(np.argmin(self.values))
        self.u, self.fu = self.points[lowest], self.values[lowest]

    def _next(self) -> None:
        """The model at the centre and its step, or a shrink where it predicts no decrease."""
        rules = active().trust_region
        while not self.pending and self.ended is None:
            g, h = self._model()
            if self.failures >= rules.ALTERNATIVE_AFTER:
                g, h = self._alternative(g, h)
            if self.fresh_next:
                self.fresh_next = False
                g, h, _ = self._fit(np.zeros_like(h))
            s = step_in_ball(g, h, self.radius)
            predicted = -float(g @ s + 0.5 * s @ h @ s)
            if predicted > 0 and math.isfinite(predicted):
                self.pending, self.predicted = [self.u + s], predicted
                self.step_length = float(np.linalg.norm(s))
                return
            self.radius *= rules.SHRINK
            if self.radius < rules.END_RADIUS:
                self._ran_out()

    def _ran_out(self) -> None:
        """The radius ran out: the region ends, unless its centre went lower than at its last
        start by more than the `roughness` (a rugged ``f``'s, or the noise's spread), it is
        not an opening, and, where noisy, a check measured noise near its centre (where none
        did, or it read none, the noise may be in a fraction of the calls only: the last
        values' spread does not read it, and a low outlier would pass for a gain). It then
        starts afresh from its centre (`_restart`). Where no check read noise near the centre
        it is measured again before the region ends (`_end`)."""
        read = not self.noisy or self._noise_read
        if not self.opened and read and self.fu < self.restart_value - self.roughness:
            self._restart()
        elif self.opened or self._noise_read:
            self.ended = "radius"
        else:
            again = active().trust_region.NOISE_CHECK if self.noisy else 1
            self.ending, self.pending = [], [self.u.copy()] * again

    def _restart(self) -> None:
        """A fresh start from the centre (radius 1, the stencil, no points or Hessian kept:
        Py-BOBYQA's hard restart): the points near the centre have been fitting the
        roughness or the noise, and a model of them would again; the stencil's wide
        differences rise above it."""
        self.restarts += 1
        self.restart_value, self.radius, self.good_radius = self.fu, 1.0, 1.0
        self.points, self.values = [self.u.copy()], [self.fu]
        self.hessian = np.zeros((self.dim, self.dim))
        self.pending, self.failures, self.quiet = self._stencil(), 0, 0

    def _end(self, values: list[float]) -> None:
        """The centre's fresh values before the region ends by its radius (one where
        deterministic, `NOISE_CHECK` in all where that differs or the region is noisy). A
        median with the old value more than `NOISE_CHANGE` noises (``level``, or their robust
        spread) above it makes the centre a low outlier and the region noisy: at the first the
        lowest value seen is the centre again (`_measured_again`) and the region goes on at
        its last good radius; at the second it ends (``"outlier"``, `ran_out`). Theory page,
        *A centre measured again before the region ends*."""
        rules = active().trust_region
        fresh = self.ending + [float(v) for v in values if math.isfinite(v)]
        if not self.noisy and all(v == self.fu for v in fresh):
            self.ending, self.ended = None, "radius"
            return
        if not self.noisy and not self.ending:  # (the one repeat differed)
            self.ending, self.pending = fresh, [self.u.copy()] * (rules.NOISE_CHECK - 1)
            return
        self.ending, self.ended = None, "radius"
        if not fresh:
            return
        value = float(np.median([self.fu, *fresh]))
        spread = robust.scale(fresh)
        if value - self.fu > rules.NOISE_CHANGE * max(self.level, spread):
            self.noisy, self.measured, self.level = True, True, spread
            self.outliers += 1
            if self.outliers == 1:
                self._measured_again(fresh)
                self.ended, self.radius = None, self.good_radius
            else:
                self.fu, self.ended = value, "outlier"

    def _alternative(self, g: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """After `ALTERNATIVE_AFTER` failed steps in a row, the model fitted afresh too (no
        Hessian carried from the last fit): where the carried model's slope is
        `ALTERNATIVE_SLOPE` times the fresh one's or more, the fresh one replaces it (Powell's
        alternative model, as in NEWUOA and COBYQA). A Hessian that the least change carried
        from far away (f6's curvature differs 1e4 times across the minimum) then no longer
        sets the steps near the centre."""
        g_fresh, h_fresh, misfit = self._fit(np.zeros_like(h))
        if np.linalg.norm(g) < active().trust_region.ALTERNATIVE_SLOPE * np.linalg.norm(g_fresh):
            return g, h
        self.failures = 0
        self._keep(h_fresh, misfit)
        return g_fresh, h_fresh

    def _usable(self) -> tuple[np.ndarray, np.ndarray]:
        """The points and values a model may use: finite values not `JUMP` times the scale
        of ``f`` above the centre's (a wall or a huge outlier would be all the fit sees)."""
        points, values = np.array(self.points), np.array(self.values)
        reach = active().quasi_newton.JUMP * max(abs(self.fu), abs(self.f_start), self.noise)
        keep = values - self.fu <= reach
        return points[keep], values[keep]

    def _model(self) -> tuple[np.ndarray, np.ndarray]:
        """The model's gradient and Hessian at the centre (in ``u``, `fit_model`), the last
        Hessian carried into the fit; the Hessian is kept for the next."""
        g, h, misfit = self._fit(self.hessian)
        self._keep(h, misfit)
        return g, h

    def _fit(self, prior: np.ndarray) -> tuple[np.ndarray, np.ndarray, float | None]:
        points, values = self._usable()
        spread = self.noisy and not self.measured  # (read by `_below_noise` until a check)
        return fit_model(points, values, self.u, self.fu, self.radius, prior, misfit=spread)

    def _keep(self, h: np.ndarray, misfit: float | None) -> None:
        self.hessian = h
        if misfit is not None:
            self.misfit = misfit
