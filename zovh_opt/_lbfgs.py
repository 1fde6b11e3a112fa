"""Limited-memory BFGS's inverse Hessian times a vector, from secant pairs (the quasi-Newton
phase's direction, `zovh_opt._gradient_phase`).

Nocedal, *Updating quasi-Newton matrices with limited storage*, Math. Comp. 35, 1980: the
two-loop recursion over the pairs ``s = x' - x``, ``y = g' - g`` (oldest first, each with
``rho = 1 / s'y``), whose initial matrix ``H0`` is the newest pair's ``s'y / y'y``, or the
diagonal ``H0 = diag(sum_k s_ki y_ki / sum_k y_ki^2)`` over the pairs where the older pairs'
diagonal predicted the newest pair's ``s`` from its ``y`` with `DIAGONAL` times the older
scalar's squared error: exact after two pairs on a separable quadratic (theory page, *The
phase's initial matrix*).
"""

from __future__ import annotations

from typing import Any

from ._backend import quiet_overflow

__all__ = ["DIAGONAL", "initial_matrix", "inverse_times"]

# the two-loop recursion's H0 is diagonal where that diagonal, fitted on the older pairs,
# predicts the newest pair with this fraction of the scalar's squared error (`initial_matrix`;
# a separable quadratic of condition 1e4 at d = 1000 solved in 12-19 steps, where the scalar's
# 99 steps ended 28 above; COCO's rotated functions rarely go below 0.5: theory page)
DIAGONAL = 0.1


def inverse_times(g: Any, pairs: list[tuple[Any, Any, float]], xp: Any) -> Any:
    """``H g`` (a new array) for L-BFGS's inverse Hessian ``H`` of ``pairs`` (``(s, y, rho)``,
    oldest first; none: ``g`` itself)."""
    q = xp.asarray(g, copy=True)
    alphas = []
    for s, y, rho in reversed(pairs):
        a = rho * float(xp.sum(s * q))
        alphas.append(a)
        q -= a * y
    if pairs:
        q *= initial_matrix(pairs, xp)
    for (s, y, rho), a in zip(pairs, reversed(alphas), strict=True):
        q += (a - rho * float(xp.sum(y * q))) * s
    return q


def initial_matrix(pairs: list[tuple[Any, Any, float]], xp: Any) -> Any:
    """L-BFGS's ``H0`` (a float or a diagonal): the newest pair's ``s'y / y'y``, or the
    ratios `_ratios` of all kept pairs where those of the older pairs predicted the newest
    pair's ``s`` from its ``y`` within `DIAGONAL` times the squared error of the older pair's
    scalar (a separable curvature; module docstring)."""
    s, y, rho = pairs[-1]
    scalar = 1.0 / (rho * float(xp.sum(y * y)))
    if len(pairs) < 2:
        return scalar
    older = pairs[:-1]
    _, y_older, rho_older = older[-1]
    scalar_older = 1.0 / (rho_older * float(xp.sum(y_older * y_older)))
    sy = sum(s_k * y_k for s_k, y_k, _ in older)  # the older pairs' sums, once
    yy = sum(y_k * y_k for _, y_k, _ in older)
    # a linear f's pairs (y at the rounding of f) can give ratios without bound: an infinite
    # or nan error rejects the diagonal, without NumPy's warnings
    with quiet_overflow():
        error_diagonal = float(xp.sum((s - _ratios(sy, yy, scalar_older, xp) * y) ** 2))
        error_scalar = float(xp.sum((s - scalar_older * y) ** 2))
    if error_diagonal < DIAGONAL * error_scalar:
        return _ratios(sy + s * y, yy + y * y, scalar, xp)  # all kept pairs' sums
    return scalar


def _ratios(sy: Any, yy: Any, scalar: float, xp: Any) -> Any:
    """``sy / yy`` for each coordinate, from the sums ``sum_k s_ki y_ki`` and
    ``sum_k y_ki^2`` over pairs (the least-squares diagonal ``D`` of ``s ~ D y``), ``scalar``
    where not positive."""
    ratios = sy / xp.where(yy > 0, yy, xp.ones_like(yy))
    usable = (yy > 0) & (ratios > 0) & xp.isfinite(ratios)
    return xp.where(usable, ratios, xp.full_like(ratios, scalar))
