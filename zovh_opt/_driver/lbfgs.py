"""Limited-memory BFGS's inverse Hessian times a vector, from secant pairs (the quasi-Newton
phase's direction, `zovh_opt._driver.quasi_newton`).

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

import numpy as np
from array_api_compat import device as _device

from .._arrays.backend import namespace_of, quiet_overflow, to_numpy
from ..estimators import SymmetricOperator
from ..tuning import active

__all__ = ["LbfgsInverse", "initial_matrix", "inverse_times"]


def inverse_times(g: Any, pairs: list[tuple[Any, Any, float]], xp: Any, h0: Any = None) -> Any:
    """``H g`` (a new array) for L-BFGS's inverse Hessian ``H`` of ``pairs`` (``(s, y, rho)``,
    oldest first; none: ``g`` itself), from the initial matrix ``h0`` (`initial_matrix` of the
    pairs where not given)."""
    q = xp.asarray(g, copy=True)
    alphas = []
    for s, y, rho in reversed(pairs):
        a = rho * float(xp.sum(s * q))
        alphas.append(a)
        q -= a * y
    if pairs:
        q *= initial_matrix(pairs, xp) if h0 is None else h0
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
    if error_diagonal < active().quasi_newton.DIAGONAL * error_scalar:
        return _ratios(sy + s * y, yy + y * y, scalar, xp)  # all kept pairs' sums
    return scalar


def _ratios(sy: Any, yy: Any, scalar: float, xp: Any) -> Any:
    """``sy / yy`` for each coordinate, from the sums ``sum_k s_ki y_ki`` and
    ``sum_k y_ki^2`` over pairs (the least-squares diagonal ``D`` of ``s ~ D y``), ``scalar``
    where not positive."""
    ratios = sy / xp.where(yy > 0, yy, xp.ones_like(yy))
    usable = (yy > 0) & (ratios > 0) & xp.isfinite(ratios)
    return xp.where(usable, ratios, xp.full_like(ratios, scalar))


class LbfgsInverse(SymmetricOperator):
    """L-BFGS's inverse Hessian of secant pairs as an operator (the role of SciPy's
    ``LbfgsInvHessProduct``): the quasi-Newton phase's ``hess_inv``.

    ``matvec`` is the two-loop recursion; ``diagonal`` and ``todense`` use the compact form
    ``H = H0 + W' M W`` with ``W = [S, H0 Y]`` (Byrd, Nocedal and Schnabel, *Representations
    of quasi-Newton matrices*, Math. Prog. 63, 1994, Thm. 2.2), ``O(m d)`` for the diagonal.
    The operator is ``factor T H T`` with ``T = diag(scale)`` (`scaled`: the pairs' ``H`` in
    the user's units).

    Parameters
    ----------
    pairs : list of (s, y, rho)
        The secant pairs, oldest first (``rho = 1 / s'y``).
    h0 : float or array, shape (d,)
        The initial matrix, a scalar or a diagonal (`initial_matrix`).
    """

    def __init__(
        self, pairs: list[tuple[Any, Any, float]], h0: Any, factor: float = 1.0, scale: Any = None
    ) -> None:
        self.pairs, self.h0 = list(pairs), h0
        self.factor, self.scale = float(factor), scale
        s = pairs[0][0]
        self.xp, self.device = namespace_of(s), _device(s)
        d = s.shape[0]
        self.shape, self.dtype, self.ndim = (d, d), s.dtype, 2

    def scaled(self, factor: float, scale: Any = None) -> LbfgsInverse:
        """``factor T A T`` of this operator ``A``, ``T = diag(scale)`` (``None``: ``I``)."""
        if self.scale is not None and scale is not None:
            scale = self.scale * scale
        elif scale is None:
            scale = self.scale
        return LbfgsInverse(self.pairs, self.h0, self.factor * factor, scale)

    def matvec(self, v: Any) -> Any:
        """Return ``A @ v`` for ``v`` of shape ``(d,)`` or ``(d, 1)``."""
        xp = namespace_of(v)
        if v.ndim == 2:
            return xp.reshape(self.matvec(xp.reshape(v, (-1,))), (-1, 1))
        if self.scale is None:
            return inverse_times(v, self.pairs, xp, self.h0) * self.factor
        return inverse_times(v * self.scale, self.pairs, xp, self.h0) * (self.factor * self.scale)

    def matmat(self, V: Any) -> Any:
        """Return ``A @ V`` for ``V`` of shape ``(d, n)``."""
        xp = namespace_of(V)
        return xp.stack([self.matvec(V[:, j]) for j in range(V.shape[1])], axis=1)

    def _compact(self) -> tuple[Any, Any]:
        """``W`` (shape ``(2m, d)``) and ``M`` (``(2m, 2m)``) of ``H = H0 + W' M W``."""
        xp = self.xp
        S = xp.stack([s for s, _, _ in self.pairs])
        Y = xp.stack([y for _, y, _ in self.pairs])
        H0Y = Y * self.h0
        SY = np.asarray(to_numpy(xp.matmul(S, Y.T)), dtype=np.float64)  # m x m, on the host
        YHY = np.asarray(to_numpy(xp.matmul(Y, H0Y.T)), dtype=np.float64)
        R_inv = np.linalg.inv(np.triu(SY))
        top = R_inv.T @ (np.diag(np.diag(SY)) + YHY) @ R_inv
        m = len(self.pairs)
        M = np.block([[top, -R_inv.T], [-R_inv, np.zeros((m, m))]])
        return xp.concat([S, H0Y]), xp.asarray(M, dtype=S.dtype, device=self.device)

    def _h0_diagonal(self) -> Any:
        return self.xp.zeros(self.shape[0], dtype=self.dtype, device=self.device) + self.h0

    def _outer(self) -> Any:
        """``factor scale^2``: what the pairs' diagonal is multiplied by."""
        return self.factor if self.scale is None else self.factor * self.scale**2

    def diagonal(self) -> Any:
        """The diagonal, a new array (``O(m d)``)."""
        W, M = self._compact()
        base = self._h0_diagonal() + self.xp.sum(W * self.xp.matmul(M, W), axis=0)
        return base * self._outer()

    def todense(self) -> Any:
        """Return the dense ``(d, d)`` array (costs :math:`O(d^2)` memory)."""
        W, M = self._compact()
        xp = self.xp
        dense = xp.matmul(W.T, xp.matmul(M, W))
        eye = xp.eye(self.shape[0], dtype=self.dtype, device=self.device)
        dense += eye * self._h0_diagonal()[None, :]
        if self.scale is None:
            return dense * self.factor
        return dense * (self.factor * self.scale[:, None] * self.scale[None, :])

    def __repr__(self) -> str:
        d = self.shape[0]
        return f"<{d}x{d} LbfgsInverse of {len(self.pairs)} secant pairs with dtype={self.dtype}>"
