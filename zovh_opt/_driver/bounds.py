"""Box constraints: ``bounds=`` read as SciPy reads it, and the smooth map onto the box.

The methods' Gaussian queries reach any distance, so the run lives in unconstrained
coordinates ``z`` and evaluates ``x = phi(z)``: pycma's ``BoxConstraintsLinQuadTransformation``
(Hansen et al.), the identity inside a margin ``a`` of each bound, a parabola meeting the bound
with slope 0, mirrored beyond (periodic). ``phi`` is continuously differentiable, so a minimum
on a bound is a smooth minimum of ``f o phi``. The margin is ``0.05 (u - l)`` for a finite
interval and ``0.05 max(|b|, s)`` for a one-sided bound ``b`` (``s`` the coordinate's scale in
``x0``: `one_sided_scales` says why); a fixed variable (``l == u``) maps to ``l``. The map in
full: the theory page, *The run's parts in detail*, and the bounds guide.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from scipy.optimize import Bounds, OptimizeWarning

from .._arrays.backend import ArraySpace
from ..tuning import active

__all__ = ["Box", "box_of"]

SPARSE = 0.05  # fold only the entries outside the identity part when they are this few


def box_of(bounds: Any, x0: Any, space: ArraySpace) -> tuple[Box | None, Any]:
    """The `Box` of ``bounds`` for a run from ``x0``, and ``x0`` clipped into it.

    ``bounds`` is ``None``, a ``scipy.optimize.Bounds`` or a sequence of ``d`` pairs
    ``(min, max)`` with ``None`` for an open end, as in ``scipy.optimize.minimize``. Bounds that
    constrain nothing give ``None``. An ``x0`` outside the box is clipped into it with SciPy's
    ``OptimizeWarning``.

    Raises
    ------
    ValueError
        If the bounds are not numbers, do not match ``x0``'s length, are NaN, or a lower bound
        exceeds its upper bound.
    """
    if bounds is None:
        return None, x0
    lower, upper = host_bounds(bounds, space.dim)
    if not (np.isfinite(lower).any() or np.isfinite(upper).any()):
        return None, x0
    box = Box(lower, upper, space, one_sided_scales(x0, lower, upper, space))
    if box.excludes(x0):
        warnings.warn("Initial guess is not within the specified bounds", OptimizeWarning, 3)
        x0 = box.clip(x0)
    return box, x0


def one_sided_scales(x0: Any, lower: np.ndarray, upper: np.ndarray, space: ArraySpace) -> Any:
    """Each coordinate's scale for the margin of a one-sided bound: ``|x0_i|`` (clipped into
    the box), or where that is 0 the root mean square of the others (1 when all are 0).

    pycma's margin is ``0.05 max(|b|, 1)``: absolute, so at ``x ~ 1e-17`` the map near a
    bound at 0 would be a parabola 17 orders of magnitude too wide. With this scale in place
    of 1 the map commutes with a rescaling of ``x`` and its bounds.
    """
    x = np.abs(np.clip(space.to_host(space.to_compute(x0)), lower, upper))
    nonzero = x[x > 0]
    return np.where(x > 0, x, _root_mean_square(nonzero) if nonzero.size else 1.0)


def _root_mean_square(values: np.ndarray) -> float:
    """The root mean square of positive finite ``values``, divided by the largest first so
    that the squares stay in range."""
    largest = float(values.max())
    return largest * float(np.sqrt(np.mean((values / largest) ** 2)))


def host_bounds(bounds: Any, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """``bounds`` as two float64 arrays of length ``dim``, checked."""
    if isinstance(bounds, Bounds):
        lower, upper = bounds.lb, bounds.ub
    else:
        try:
            pairs = list(bounds)
            if any(len(pair) != 2 for pair in pairs):
                raise TypeError
        except TypeError:
            raise TypeError(
                "bounds must be a scipy.optimize.Bounds or a sequence of (min, max) pairs, "
                f"got {type(bounds).__name__}"
            ) from None
        if len(pairs) != dim:
            raise ValueError("The number of bounds is not compatible with the length of `x0`.")
        lower = [-math.inf if lo is None else lo for lo, _ in pairs]
        upper = [math.inf if hi is None else hi for _, hi in pairs]
    try:
        lower = np.asarray(lower, dtype=np.float64)
        upper = np.asarray(upper, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise TypeError(f"bounds must be real numbers or None: {error}") from None
    try:
        lower = np.broadcast_to(lower, (dim,)).copy()
        upper = np.broadcast_to(upper, (dim,)).copy()
    except ValueError as error:
        raise ValueError(
            "The number of bounds is not compatible with the length of `x0`."
        ) from error
    if np.isnan(lower).any() or np.isnan(upper).any():
        raise ValueError("bounds must not be NaN (use None or +-inf for an open end)")
    if (upper < lower).any():
        raise ValueError("An upper bound is less than the corresponding lower bound.")
    if (lower == math.inf).any() or (upper == -math.inf).any():
        raise ValueError("bounds leave no finite point: a lower bound is +inf or an upper -inf")
    return lower, upper


class Box:
    """The box ``[lower, upper]`` and the smooth periodic map ``phi`` from all of R^d onto it.

    Parameters
    ----------
    lower, upper : numpy.ndarray
        float64 bounds of length ``d``; ``-inf`` and ``inf`` for open ends, ``lower <= upper``.
    space : ArraySpace
        Where the run's arrays live; the bounds are kept there in the run's dtype.
    """

    def __init__(
        self,
        lower: np.ndarray,
        upper: np.ndarray,
        space: ArraySpace,
        scales: np.ndarray | None = None,
    ) -> None:
        self.space = space
        self.host = (lower, upper)
        self.scales = np.ones_like(lower) if scales is None else np.asarray(scales, np.float64)
        lower, upper = _inward(lower, upper, space.dtype_name)
        dtype = np.dtype(space.dtype_name)
        has_lower, has_upper = np.isfinite(lower), np.isfinite(upper)
        both = has_lower & has_upper
        # halves first: the width of a box wider than the largest float is not formed
        half = np.where(both, upper / 2 - lower / 2, 0.0)
        margin_lower = np.where(
            both, 2 * active().box.MARGIN * half, active().box.MARGIN * self._one_sided(lower)
        )
        margin_upper = np.where(
            both, 2 * active().box.MARGIN * half, active().box.MARGIN * self._one_sided(upper)
        )
        fixed = both & (half == 0)
        # finite stand-ins where a bound is open, so no inf - inf is ever formed
        low = np.where(has_lower, lower, 0.0)
        high = np.where(has_upper, upper, 0.0)
        al = np.where(fixed | ~has_lower, 1.0, margin_lower)
        au = np.where(fixed | ~has_upper, 1.0, margin_upper)
        with np.errstate(over="ignore", invalid="ignore"):
            start = low - 2 * al - half  # one period is [start, start + period)
            period = 4 * half + 2 * (al + au)
            # a period the run's dtype cannot hold: the map reflects once at each side and
            # the clip does the rest (only points beyond the largest float are affected)
            periodic = both & np.isfinite(start.astype(dtype)) & np.isfinite(period.astype(dtype))
            below = np.where(has_lower, low - al, -math.inf)
            above = np.where(has_upper, high + au, math.inf)
        arrays = {
            "lower": lower,
            "upper": upper,
            "low": low,
            "high": high,
            "al": al,
            "au": au,
            "start": np.where(periodic, start, 0.0),
            "period": np.where(periodic, period, 1.0),
            # reflection and parabola thresholds; +-inf where a side is open
            "below": below,
            "above": above,
            "inner_low": np.where(has_lower, low + al, -math.inf),
            "inner_high": np.where(has_upper, high - au, math.inf),
            # the start's coordinates closer to a bound than this are moved to it (`start`)
            "start_low": np.where(has_lower & ~fixed, low + al / 4, -math.inf),
            "start_high": np.where(has_upper & ~fixed, high - au / 4, math.inf),
        }
        self.fixed_count = int(fixed.sum())
        # each coordinate's narrowest margin (host float64; inf where no side is bounded)
        self.margins = np.minimum(
            np.where(has_lower & ~fixed, al, math.inf), np.where(has_upper & ~fixed, au, math.inf)
        )
        with np.errstate(over="ignore"):  # a width beyond the largest float: the largest
            widths = np.where(both, np.minimum(2 * half, np.finfo(dtype).max), math.inf)
        self._widths = space.from_host(widths) if both.any() else None
        self._periodic = bool(periodic.any())
        self._both = space.from_host(periodic.astype(np.float64)) > 0 if self._periodic else None
        self._fixed = space.from_host(fixed.astype(np.float64)) > 0 if fixed.any() else None
        with np.errstate(over="ignore"):  # a threshold beyond the dtype's range is +-inf
            for name, values in arrays.items():
                setattr(self, "_" + name, space.from_host(values))

    def to_box(self, z: Any) -> Any:
        """``phi(z)`` for a user array ``z`` of shape ``(d,)`` or ``(n, d)``: a new array.

        Entries in the identity part ``[l + a, u - a]`` are copied; when the others (near a
        bound or beyond it, and fixed variables) are few, only they go through the fold, so a
        step inside the box costs two comparisons and a copy.
        """
        space = self.space
        xp = space.xp
        y = xp.asarray(space.to_compute(z), copy=True)
        outside = (y < self._inner_low) | (y > self._inner_high)
        count = int(xp.sum(xp.astype(outside, xp.int64)))
        if count == 0:
            return space.to_user(y)
        if count > SPARSE * math.prod(y.shape):  # many: fold every entry, no gathers
            return space.to_user(self._fold(y, lambda a: a))
        columns = xp.nonzero(outside)[-1]
        y[outside] = self._fold(y[outside], lambda a: xp.take(a, columns))
        return space.to_user(y)

    def one_period(self, z: Any) -> tuple[Any, Any] | None:
        """The compute array ``z`` moved by whole periods into the period ``[start, start +
        period)`` that holds the box, coordinate by coordinate: ``(moved, shifted)``, where
        ``moved`` marks the entries outside it and ``shifted`` holds every entry moved there
        (as `_fold` moves them, so that ``phi`` of the shifted point is ``phi(z)`` bit for bit);
        ``None`` where every entry is in it already or no coordinate has a period.

        A run's iterate that steps across the box a few times lands periods away in ``z``
        while ``phi(z)`` stays in the box, and a forward difference step relative to ``|z|``
        is then as much coarser (`zovh_opt._driver.quasi_newton`).
        """
        if not self._periodic:
            return None
        xp = self.space.xp
        start, period = self._start, self._period
        moved = self._both & ((z < start) | (z >= start + period))
        if not bool(xp.any(moved)):
            return None
        return moved, start + xp.remainder(z - start, period)

    def _fold(self, y: Any, picked: Any) -> Any:
        """``phi`` of the entries ``y``; ``picked(a)`` gives the per-coordinate array ``a`` at
        those entries."""
        xp = self.space.xp
        above, below = picked(self._above), picked(self._below)
        with np.errstate(over="ignore", invalid="ignore"):  # NumPy's warnings, for +-inf
            if self._periodic:
                start, period = picked(self._start), picked(self._period)
                shifted = start + xp.remainder(y - start, period)
                beyond = picked(self._both) & ((y < start) | (y >= start + period))
                y = xp.where(beyond, shifted, y)
            # reflections written as b + (b - y): 2 b overflows for a bound near the largest float
            y = xp.where(y > above, above + (above - y), y)
            y = xp.where(y < below, below + (below - y), y)
            al, au = picked(self._al), picked(self._au)
            # (y - b)^2 / (4 a) as a t^2 with t = (y - b) / (2 a) in [0, 1]: no overflow
            left = picked(self._low) + ((y - below) / (2 * al)) ** 2 * al
            right = picked(self._high) - ((above - y) / (2 * au)) ** 2 * au
            y = xp.where(y < picked(self._inner_low), left, y)
            y = xp.where(y > picked(self._inner_high), right, y)
        lower, upper = picked(self._lower), picked(self._upper)
        if self._fixed is not None:
            y = xp.where(picked(self._fixed), lower, y)
        return xp.minimum(xp.maximum(y, lower), upper)  # rounding never leaves the box

    def from_box(self, x: Any) -> Any:
        """The ``z`` in ``[l - a, u + a]`` with ``phi(z) = x``, for ``x`` in the box."""
        space = self.space
        xp = space.xp
        x = space.to_compute(x)
        # distances to the bounds, formed only where they are at most a: never overflow
        distance_low = xp.maximum(xp.minimum(x, self._inner_low) - self._low, xp.zeros_like(x))
        distance_high = xp.maximum(self._high - xp.maximum(x, self._inner_high), xp.zeros_like(x))
        left = self._below + 2 * xp.sqrt(self._al) * xp.sqrt(distance_low)
        right = self._above - 2 * xp.sqrt(self._au) * xp.sqrt(distance_high)
        z = xp.where(x < self._inner_low, left, x)
        z = xp.where(x > self._inner_high, right, z)
        if self._fixed is not None:
            z = xp.where(self._fixed, self._lower, z)
        return space.to_user(z)

    def start(self, x0: Any) -> Any:
        """The run's first ``z`` for a start ``x0`` in the box: `from_box`, except that a
        coordinate within a quarter margin of a bound starts at ``z = l`` (``u``), where
        ``phi(z) = l + a / 4`` and ``phi`` has slope 1/2.

        On the bound itself ``phi`` has slope 0, ``f o phi`` is even about that ``z`` in the
        coordinate, and every smoothed estimate of its slope there is 0: a run started on a
        face would never leave it, though ``f`` falls into the box.
        """
        xp = self.space.xp
        x = self.space.to_compute(x0)
        x = xp.where(x < self._start_low, self._start_low, x)
        x = xp.where(x > self._start_high, self._start_high, x)
        return self.from_box(self.space.to_user(x))

    def excludes(self, x: Any) -> bool:
        """Whether some entry of the user array ``x`` lies outside the box."""
        xp = self.space.xp
        x = self.space.to_compute(x)
        return bool(xp.any((x < self._lower) | (x > self._upper)))

    def clip(self, x: Any) -> Any:
        """The user array ``x`` clipped into the box (a new array)."""
        xp = self.space.xp
        x = self.space.to_compute(x)
        return self.space.to_user(xp.minimum(xp.maximum(x, self._lower), self._upper))

    def coordinate_scales(self, x0: Any) -> Any:
        """Each coordinate's own scale for a start ``x0`` in the box (a compute array):
        ``|x0_i|`` capped at the width ``u - l``, and where ``x0_i = 0`` the width capped at 1
        (without bounds, ``x0 = 0`` has ``l = sqrt(d)``, 1 per coordinate). Their norm is the
        run's length scale (`zovh_opt._driver.coordinates`), not ``|z0|``: a start near a bound may
        sit near ``z = 0`` by accident of the margins."""
        xp = self.space.xp
        x = xp.abs(self.space.to_compute(x0))
        if self._widths is not None:
            x = xp.where(x > 0, xp.minimum(x, self._widths), xp.minimum(self._widths, 1.0))
        return x

    def _one_sided(self, bound: np.ndarray) -> np.ndarray:
        """The scale of a one-sided bound's margin, ``max(|b|, s)`` (module docstring)."""
        return np.maximum(np.abs(bound), self.scales)

    def bound_scales(self, x0: Any) -> np.ndarray | None:
        """Each coordinate's scale as the bounds give it, for ``x_scale``'s default: the width
        ``u - l`` of a finite interval, and for a one-sided bound the distance of ``x0_i`` (in
        the box) from it; ``None`` unless every coordinate has a bound, or where the scales
        are all the same (the run is the same at any common scale).

        A positivity bound says that ``x_i`` is a magnitude and ``x0_i`` its size, as
        Nelder-Mead's initial simplex assumes of every start. Where that distance is within
        the bound's margin (a start on the bound, up to the rounding of ``x0``) it says
        nothing of the size: the root mean square of the other coordinates' scales stands in
        (a bound at 0.068 made a start on it a scale of 0.068 against 6.6 to 83 for the
        others, and the run stalled), or, where every coordinate starts on its bound, the
        margin's own scale ``max(|b|, s)``; where a width is 0 or beyond the floats, ``s``
        (`one_sided_scales`).
        """
        lower, upper = self.host
        has_lower, has_upper = np.isfinite(lower), np.isfinite(upper)
        if not (has_lower | has_upper).all():
            return None
        x = np.clip(self.space.to_host(self.space.to_compute(x0)), lower, upper)
        with np.errstate(over="ignore", invalid="ignore"):
            widths = upper - lower
            distances = np.where(has_lower, x - lower, upper - x)
            margin_scales = self._one_sided(np.where(has_lower, lower, upper))
        scales = np.where(has_lower & has_upper, widths, distances)
        near = ~(has_lower & has_upper) & (distances < active().box.MARGIN * margin_scales)
        told = ~near & np.isfinite(scales) & (scales > 0)
        if near.any() and told.any():  # the others' root mean square, as `one_sided_scales`
            scales = np.where(near, _root_mean_square(scales[told]), scales)
        else:
            scales = np.where(near, margin_scales, scales)
        scales = np.where(np.isfinite(scales) & (scales > 0), scales, self.scales)
        return None if np.all(scales == scales[0]) else scales

    @property
    def all_fixed(self) -> bool:
        """Whether the bounds fix every variable (``lower == upper``)."""
        return self.fixed_count == self.space.dim

    def state(self) -> list[np.ndarray]:
        """The float64 bounds and the one-sided margins' scales, for a checkpoint."""
        return [self.host[0], self.host[1], self.scales]


def _inward(lower: np.ndarray, upper: np.ndarray, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """The float64 bounds rounded inward to numbers of ``dtype`` (float32 cannot hold 0.1: its
    nearest number above would let points out of the box), as float64 arrays.

    A bound beyond the dtype's range becomes its largest number (a lower bound above it, or an
    upper bound below minus it, leave no point: ``ValueError``); a fixed variable whose value
    the dtype cannot hold takes the nearest number.
    """
    if dtype == "float64":
        return lower, upper
    kind = np.dtype(dtype)
    with np.errstate(over="ignore"):
        lo, hi = lower.astype(kind), upper.astype(kind)
    lo = np.where(lo.astype(np.float64) < lower, np.nextafter(lo, kind.type(np.inf)), lo)
    hi = np.where(hi.astype(np.float64) > upper, np.nextafter(hi, kind.type(-np.inf)), hi)
    if (lo == np.inf).any() or (hi == -np.inf).any():
        raise ValueError(f"bounds leave no finite {dtype} point: a bound is beyond its range")
    crossed = lo > hi  # an interval narrower than the dtype's spacing: its nearest number
    if crossed.any():
        with np.errstate(over="ignore"):
            nearest = lower.astype(kind)
        lo, hi = np.where(crossed, nearest, lo), np.where(crossed, nearest, hi)
    return lo.astype(np.float64), hi.astype(np.float64)
