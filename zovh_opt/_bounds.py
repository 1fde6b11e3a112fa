"""Box constraints: ``bounds=`` read as SciPy reads it, and the smooth map onto the box.

The methods need a smooth objective on all of :math:`\\mathbb{R}^d`: their queries
``x + mu u`` have Gaussian ``u`` and reach any distance, and the estimators are unbiased for
the Gaussian-smoothed objective. So the run lives in unconstrained coordinates ``z``, and
every point it evaluates is ``x = phi(z)``, where ``phi`` maps each coordinate onto its
interval ``[l, u]`` (pycma's ``BoxConstraintsLinQuadTransformation``, Hansen et al.):

- the identity on ``[l + a, u - a]``;
- a parabola that meets the bound with slope 0 at ``z = l - a`` (and ``u + a``):
  ``phi(z) = l + (z - l + a)^2 / (4 a)`` on ``[l - a, l + a]``;
- mirrored beyond, so ``phi`` is periodic with period ``2 (u - l + 2 a)``.

``phi`` is continuously differentiable, so ``f o phi`` is as smooth as the estimators need,
and a minimum on a bound of the box is a smooth minimum of ``f o phi`` (``f`` grows
quadratically in ``z`` away from it), which the step rule converges to like any other. The
margin is ``a = 0.05 (u - l)`` for a finite interval, so the map commutes with a shift or a
rescaling of the box, and ``a = 0.05 max(|b|, 1)`` for a one-sided bound ``b`` (pycma's).
A fixed variable (``l == u``) maps to ``l``.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from scipy.optimize import Bounds, OptimizeWarning

from ._backend import ArraySpace

__all__ = ["Box", "box_of"]

MARGIN = 0.05  # of the interval's width (finite), or of max(|bound|, 1) (one-sided)
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
    lower, upper = _host_bounds(bounds, space.dim)
    if not (np.isfinite(lower).any() or np.isfinite(upper).any()):
        return None, x0
    box = Box(lower, upper, space)
    if box.excludes(x0):
        warnings.warn("Initial guess is not within the specified bounds", OptimizeWarning, 3)
        x0 = box.clip(x0)
    return box, x0


def _host_bounds(bounds: Any, dim: int) -> tuple[np.ndarray, np.ndarray]:
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

    def __init__(self, lower: np.ndarray, upper: np.ndarray, space: ArraySpace) -> None:
        self.space = space
        self.host = (lower, upper)
        has_lower, has_upper = np.isfinite(lower), np.isfinite(upper)
        both = has_lower & has_upper
        width = np.where(both, upper - lower, 0.0)
        margin_lower = np.where(both, MARGIN * width, MARGIN * np.maximum(np.abs(lower), 1.0))
        margin_upper = np.where(both, MARGIN * width, MARGIN * np.maximum(np.abs(upper), 1.0))
        fixed = both & (width == 0)
        # finite stand-ins where a bound is open, so no inf - inf is ever formed
        low = np.where(has_lower, lower, 0.0)
        high = np.where(has_upper, upper, 0.0)
        al = np.where(fixed | ~has_lower, 1.0, margin_lower)
        au = np.where(fixed | ~has_upper, 1.0, margin_upper)
        start = low - 2 * al - width / 2  # one period is [start, start + period)
        period = 2 * (width + al + au)
        arrays = {
            "lower": lower,
            "upper": upper,
            "low": low,
            "high": high,
            "al": al,
            "au": au,
            "start": np.where(both, start, 0.0),
            "period": np.where(both, period, 1.0),
            # reflection and parabola thresholds; +-inf where a side is open
            "below": np.where(has_lower, low - al, -math.inf),
            "above": np.where(has_upper, high + au, math.inf),
            "inner_low": np.where(has_lower, low + al, -math.inf),
            "inner_high": np.where(has_upper, high - au, math.inf),
        }
        self._periodic = bool(both.any())
        self._both = space.from_host(both.astype(np.float64)) > 0 if self._periodic else None
        self._fixed = space.from_host(fixed.astype(np.float64)) > 0 if fixed.any() else None
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

    def _fold(self, y: Any, picked: Any) -> Any:
        """``phi`` of the entries ``y``; ``picked(a)`` gives the per-coordinate array ``a`` at
        those entries."""
        xp = self.space.xp
        start, period = picked(self._start), picked(self._period)
        above, below = picked(self._above), picked(self._below)
        if self._periodic:
            shifted = start + xp.remainder(y - start, period)
            beyond = picked(self._both) & ((y < start) | (y >= start + period))
            y = xp.where(beyond, shifted, y)
        y = xp.where(y > above, 2 * above - y, y)
        y = xp.where(y < below, 2 * below - y, y)
        left = picked(self._low) + (y - below) ** 2 / (4 * picked(self._al))
        right = picked(self._high) - (y - above) ** 2 / (4 * picked(self._au))
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
        distance_low = xp.maximum(x - self._low, xp.zeros_like(x))
        distance_high = xp.maximum(self._high - x, xp.zeros_like(x))
        left = self._below + 2 * xp.sqrt(self._al * distance_low)
        right = self._above - 2 * xp.sqrt(self._au * distance_high)
        z = xp.where(x < self._inner_low, left, x)
        z = xp.where(x > self._inner_high, right, z)
        if self._fixed is not None:
            z = xp.where(self._fixed, self._lower, z)
        return space.to_user(z)

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

    def state(self) -> list[np.ndarray]:
        """The float64 bounds, for a checkpoint."""
        return [self.host[0], self.host[1]]
