"""Between the user's ``x`` and the run's own coordinates: the box map and the run's units.

The method runs in coordinates ``z`` of its own: ``x = phi(unit * s * z)``, where ``phi`` maps
onto the box of ``bounds`` (`zovh_opt._driver.bounds`; the identity without bounds), ``s`` is the
option ``x_scale`` (the scales the user knows, per coordinate; by default the bounds' scales
where every coordinate has a bound, `Box.bound_scales`, else 1) and ``unit`` is a
power of two, 1 unless the scale of ``x`` is extreme (`run_unit`). Its values are ``f / f_unit``,
``f_unit`` likewise a power of two fixed by the first finite values. With the step rule every
iterate is then what it would be at unit scales, bit for bit; the driver sees only user
points and values.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .._arrays.backend import ArraySpace, namespace_of, norm, to_numpy
from .._curvature.diagonal import DiagonalOperator
from .._methods.step_size import length_scale
from ..tuning import active
from .bounds import Box, box_of
from .lbfgs import LbfgsInverse

__all__ = ["Coordinates", "run_unit"]

SCALE_FREE = ("learning_rate", "smoothing", "regularization")  # "auto": in no unit


def run_unit(scale: float, dtype: str, method_options: dict[str, Any]) -> float:
    """The run's unit of length (or of f): 1, or for a scale beyond ``2**(maxexp / 16)`` (or
    below its inverse; ``2**64`` in float64, ``2**8`` in float32) a power of two near it.

    The step rule is scale-free: ``x -> a x`` for a power of two ``a`` gives the same
    iterates, bit for bit, as long as no number leaves the floats' range. The curvature model
    holds ``f / length**2``, which at ``|x0| = 1e160`` with ``f ~ 1`` is ``1e-320`` (below
    float64's normal range, and 0 soon after): in units of the scale it stays near 1. Only
    where every option is scale-free (``learning_rate``, ``smoothing`` and
    ``regularization`` left ``"auto"``); a number given for one of them is in the user's
    units, and the run keeps them.
    """
    if not scale_free(method_options):
        return 1.0
    limit = 2.0 ** (np.finfo(np.dtype(dtype)).maxexp // 16)
    if 1 / limit <= scale <= limit or not math.isfinite(scale):
        return 1.0
    return power_of_two_near(scale)


def power_of_two_near(value: float) -> float:
    """The power of two of ``value``'s binary exponent (within a factor 2 of it, ``value >
    0``): dividing by it is exact."""
    return math.ldexp(1.0, math.frexp(value)[1])


def scale_free(method_options: dict[str, Any]) -> bool:
    """Whether every option of `SCALE_FREE` is left ``"auto"`` (a number is in the user's
    units)."""
    return all(isinstance(method_options.get(name, "auto"), str) for name in SCALE_FREE)


def scales_from_bounds(method_options: dict[str, Any]) -> bool:
    """Whether ``x_scale`` left ``None`` takes the bounds' scales (`Box.bound_scales`): only
    where every option is scale-free (a number given for one is in the user's units, which
    scaled coordinates would change) and the method is not the paper's iteration as it is
    (``curvature="off"``)."""
    return method_options.get("curvature", "auto") != "off" and scale_free(method_options)


def scales_of(x_scale: Any, scales: Any, space: ArraySpace) -> Any:
    """The option ``x_scale`` as a compute array ``s`` of ``d`` positive numbers.

    ``"x0"``: each coordinate's own scale at the start, ``scales`` (``|x0_i|``; with bounds
    capped at the width, and where ``x0_i = 0`` the width capped at 1; 1 without bounds), as
    Nelder-Mead's initial simplex takes its steps from ``x0``. Numbers are the scales the user
    knows, as ``x_scale`` of ``scipy.optimize.least_squares`` or ``CMA_stds`` of pycma.
    """
    xp = space.xp
    if isinstance(x_scale, str):  # "x0", checked with the options
        return xp.where(scales > 0, scales, xp.ones_like(scales))
    host = np.asarray(x_scale, dtype=np.float64)
    if host.ndim == 0:  # one number for every coordinate
        host = np.full(space.dim, float(host))
    if host.shape != (space.dim,):
        raise ValueError(
            f"x_scale must be 'x0' or {space.dim} positive numbers (one per coordinate), "
            f"got shape {host.shape}"
        )
    return space.from_host(host)


class Coordinates:
    """The map between user points and the run's, and between ``f`` and the run's values.

    Built by `start`; the driver asks it for user points (`to_user`), values in the run's
    unit (`values`) and estimates in the user's (`estimates`).

    Parameters
    ----------
    box : Box or None
        The box of ``bounds``, or ``None``.
    unit : float
        The run's unit of length (`run_unit`).
    xp : namespace
        The user's array namespace.
    """

    def __init__(self, box: Box | None, unit: float, xp: Any, x_scale: Any = None) -> None:
        self.box = box
        self.unit = unit
        self.f_unit = 1.0  # set by `found_f_scale`
        self.xp = xp
        self.x_scale = x_scale  # s, a compute array, or None (1)

    @classmethod
    def start(
        cls, x0: Any, bounds: Any, method_options: dict[str, Any], x_scale: Any = None
    ) -> tuple[Coordinates, Any, float]:
        """The coordinates of a run from ``x0``, ``z0`` (a new array) and the length scale
        there (in the run's unit).

        With bounds, ``x0`` is clipped into the box (SciPy's ``OptimizeWarning``), moved off
        a bound it sits on (`Box.start`), and the length scale knows the box
        (`Box.coordinate_scales`). ``x_scale`` is the option: ``None``, ``"x0"`` or ``d``
        positive numbers (`scales_of`).
        """
        space = ArraySpace(x0)
        box, x0 = box_of(bounds, x0, space)
        scales = space.xp.abs(space.to_compute(x0)) if box is None else box.coordinate_scales(x0)
        if x_scale is None and box is not None and scales_from_bounds(method_options):
            x_scale = box.bound_scales(x0)
        if box is not None:
            x0 = box.start(x0)
        s = None if x_scale is None else scales_of(x_scale, scales, space)
        if s is not None:
            x0, scales = space.to_user(space.to_compute(x0) / s), scales / s
        scale = length_scale(norm(scales), space.dim)
        unit = run_unit(scale, space.dtype_name, method_options)
        if unit != 1.0:
            x0, scale = x0 / unit, scale / unit
        return cls(box, unit, namespace_of(x0), s), x0, scale

    @property
    def first_step(self) -> float | None:
        """The step rule's first step over the length scale: the method's own (``None``),
        or in a box the rule's `INITIAL_STEP` (the box map folds f at the faces, where the
        full model's longer first step made runs from a face stall)."""
        return None if self.box is None else active().step_rule.INITIAL_STEP

    def narrowest_width(self) -> float:
        """The narrowest width ``u - l`` of the box's finite intervals (fixed variables
        aside) in the run's coordinates, where the box map repeats with a period of about
        twice it (`zovh_opt._driver.bounds`); ``inf`` where no coordinate has two finite bounds."""
        if self.box is None:
            return math.inf
        lower, upper = self.box.host
        with np.errstate(over="ignore", invalid="ignore"):
            widths = upper - lower
        if self.x_scale is not None:
            widths = widths / np.asarray(to_numpy(self.x_scale), dtype=np.float64)
        widths = widths[np.isfinite(widths) & (widths > 0)] / self.unit
        return float(widths.min()) if widths.size else math.inf

    def in_one_period(self, z: Any) -> Any:
        """The run's point ``z`` (a compute array of shape ``(d,)``) moved by whole periods of
        the box map into the period that holds the box (`Box.one_period`): the same user
        point, its entries of the size of the box's. ``z`` itself where it is there already,
        or the box has no period (no bounds, one-sided ones)."""
        if self.box is None:
            return z
        # (the unit is a power of two: without x_scale both products are exact)
        scale = self.unit if self.x_scale is None else self.unit * self._compute_scale(z)
        found = self.box.one_period(z * scale)
        if found is None:
            return z
        moved, shifted = found
        return namespace_of(z).where(moved, shifted / scale, z)

    def difference_caps(self) -> np.ndarray | None:
        """The longest difference step of each coordinate in the run's coordinates (host
        float64): `DIFFERENCE_IN_MARGIN` of its narrowest margin of the box map, which a
        forward difference of a coordinate far from 0 in a narrow box would otherwise reach
        across (float32: ``sqrt(eps) |z|``); ``None`` without a box."""
        if self.box is None:
            return None
        caps = active().quasi_newton.DIFFERENCE_IN_MARGIN * self.box.margins / self.unit
        if self.x_scale is not None:
            caps = caps / np.asarray(to_numpy(self.x_scale), dtype=np.float64)
        return caps

    @property
    def all_fixed(self) -> bool:
        """Whether the bounds fix every variable: there is nothing to search."""
        return self.box is not None and self.box.all_fixed

    @property
    def identity(self) -> bool:
        """Whether the run's points are the user's (no box, unit 1, no ``x_scale``)."""
        return self.box is None and self.unit == 1.0 and self.x_scale is None

    def to_user(self, z: Any) -> Any:
        """A new array of the run's point(s) ``z`` in the user's coordinates."""
        if self.unit != 1.0:
            z = z * self.unit
        if self.x_scale is not None:
            z = z * self._compute_scale(z)
        return self.box.to_box(z) if self.box is not None else self.xp.asarray(z, copy=True)

    def to_run(self, x: Any) -> Any:
        """A new array of the user's point ``x`` (in the box) in the run's coordinates: the
        inverse of `to_user` (with bounds, the preimage `Box.from_box` gives)."""
        z = self.box.from_box(x) if self.box is not None else self.xp.asarray(x, copy=True)
        if self.x_scale is not None:
            z = z / self._compute_scale(z)
        return z / self.unit if self.unit != 1.0 else z

    def _compute_scale(self, z: Any) -> Any:
        """``s`` in the namespace of ``z`` (CPU PyTorch runs hand out tensors)."""
        xp = namespace_of(z)
        return self.x_scale if xp is namespace_of(self.x_scale) else xp.asarray(self.x_scale)

    def found_f_scale(self, scale: float, dtype: str, method_options: dict[str, Any]) -> None:
        """Fix the unit of ``f`` from its scale at the first finite values: the curvature
        model's float32 arrays hold ``f / length**2``, which overflows for ``f ~ 1e38``."""
        self.f_unit = run_unit(scale, dtype, method_options)

    def values(self, values: np.ndarray) -> np.ndarray:
        """The values in the run's unit of ``f`` (in place: exact, a power of two)."""
        if self.f_unit != 1.0:
            values /= self.f_unit
        return values

    def estimates(self, method_estimates: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """The method's ``jac`` and ``hess_inv`` (``method_estimates()``) in the user's
        units; none with a box (they would be derivatives of ``f o phi``, which at a bound say
        nothing about ``f``)."""
        if self.box is not None:
            return {}
        estimates = method_estimates()
        unit, f_unit, s = self.unit, self.f_unit, self.x_scale
        if unit == 1.0 and f_unit == 1.0 and s is None:
            return estimates
        # (unit^2 may overflow a float where the array holds inf or 0 honestly)
        with np.errstate(over="ignore", under="ignore"):
            if "jac" in estimates:
                jac = estimates["jac"] * (f_unit / unit)
                estimates["jac"] = jac if s is None else jac / self._compute_scale(jac)
            inverse = estimates.pop("hess_inv", None)
            if isinstance(inverse, LbfgsInverse):
                scale = None if s is None else self._compute_scale(inverse.pairs[0][0])
                estimates["hess_inv"] = inverse.scaled(unit * unit / f_unit, scale)
            elif isinstance(inverse, DiagonalOperator):
                diagonal = inverse.diagonal() * (unit / f_unit)
                diagonal *= unit
                if s is not None:
                    diagonal *= self._compute_scale(diagonal) ** 2
                estimates["hess_inv"] = DiagonalOperator(diagonal)
            elif inverse is not None and not hasattr(inverse, "matvec"):  # the full model (d, d)
                dense = inverse * (unit / f_unit)
                dense *= unit
                if s is not None:
                    scale = self._compute_scale(dense)
                    dense *= scale[:, None] * scale[None, :]
                estimates["hess_inv"] = dense
        return estimates

    def state(self) -> dict[str, Any]:
        return {
            "bounds": None if self.box is None else self.box.state(),
            "unit": self.unit,
            "f_unit": self.f_unit,
            "x_scale": self.x_scale,
        }

    def load_state(self, state: dict[str, Any], space: ArraySpace) -> None:
        """Continue from `state` (checkpoints written before the units, or the one-sided
        margins' scales, were kept hold none: 1, as the runs that wrote them had)."""
        bounds = state["bounds"]
        if (bounds is None) != (self.box is None):
            raise ValueError("the bounds of the state and of the run disagree")
        if bounds is not None:
            self.box = Box(*bounds[:2], space, bounds[2] if len(bounds) > 2 else None)
        self.unit = float(state.get("unit", 1.0))
        self.f_unit = float(state.get("f_unit", 1.0))
        s = state.get("x_scale")
        self.x_scale = None if s is None else space.from_numpy(s)
