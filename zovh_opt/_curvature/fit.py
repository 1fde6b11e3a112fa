"""A least-squares fit of the Hessian beside the full curvature model, and when it is used.

The full model (`zovh_opt._curvature.full`) moves by the paper's estimator (eq. (9)) at a rate
of order ``P / d^2``: robust where no quadratic describes ``f``, slow where one does.
`CurvatureFit` solves the least-squares fit of the pairs' curvature contrasts instead, a
Kalman filter on the ``d (d + 1) / 2`` entries of a symmetric matrix, with a prior of the
model's scale, forgetting and covariance matching. Both predict each batch before learning
from it (`FitScores`): where the fit describes ``f`` well and better than the model, the
model moves toward it and the step's gradient is the least-squares one
(`least_squares_gradient`). Deterministic objectives only, up to ``d = FIT_MAX_DIMENSION``.
The fit in full: theory page, *The run's parts in detail*, *The least-squares fit*; the
evidence, *The least-squares fit beside the full model*.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..tuning import active


def helmert(pairs: int) -> np.ndarray:
    """``P x (P - 1)`` orthonormal columns, each orthogonal to the ones vector."""
    q, _ = np.linalg.qr(np.column_stack([np.ones(pairs), np.eye(pairs)[:, : pairs - 1]]))
    return q[:, 1:]


class CurvatureFit:
    """The filter (module docstring) of one run: host float64, ``O(n^2)`` memory.

    Parameters
    ----------
    dim : int
        ``d``.
    pairs : int
        ``P``, the pairs of a batch (at least 2).
    """

    def __init__(self, dim: int, pairs: int) -> None:
        self.dim, self.pairs = int(dim), int(pairs)
        rows, columns = np.triu_indices(self.dim)
        self._rows, self._columns = rows, columns
        diagonal = rows == columns
        self._diagonal = diagonal.astype(np.float64)
        self._twice = np.where(diagonal, 1.0, 2.0)  # H_ij and H_ji in w^T H w
        self._walk = np.where(diagonal, 1.0, 0.5)  # Frobenius: off-diagonal variance / 2
        self.size = len(rows)
        self._contrasts = helmert(self.pairs)
        self.forgetting = 1.0 - (self.pairs - 1) / (active().fit.MEMORY * self.size)
        self.entries = None  # the upper triangle of H, (n,); None before `start`
        self.covariance = None  # (n, n)

    @property
    def ready(self) -> bool:
        return self.entries is not None

    def start(self, curvature: float) -> None:
        """Begin at ``curvature * I`` with the prior of the module docstring."""
        c2 = curvature * curvature
        self.entries = curvature * self._diagonal
        self.covariance = (
            c2 * active().fit.SCALE_PRIOR ** 2 * np.outer(self._diagonal, self._diagonal)
        )
        self.covariance[np.diag_indices(self.size)] += (
            c2 * active().fit.SHAPE_PRIOR ** 2 * self._walk
        )

    def hessian(self) -> np.ndarray:
        """The fitted ``H``, ``(d, d)``."""
        H = np.zeros((self.dim, self.dim))
        H[self._rows, self._columns] = self.entries
        H[self._columns, self._rows] = self.entries
        return H

    def equations(self, directions: np.ndarray) -> np.ndarray:
        """The ``(P - 1, n)`` matrix of the contrasts ``C^T (w_m^T H w_m)_m`` in the entries."""
        products = directions[:, self._rows] * directions[:, self._columns] * self._twice
        return self._contrasts.T @ products

    def contrasts(self, values: np.ndarray) -> np.ndarray:
        """``C^T values``: a batch's ``P`` numbers as its ``P - 1`` contrasts."""
        return self._contrasts.T @ values

    def learn(self, observed: np.ndarray, equations: np.ndarray, curvature: float) -> None:
        """Take a batch: its contrasts ``observed`` (``P - 1``), their `equations`, and the
        model's scale ``c`` (the noise floor's unit). Forget, walk (covariance matching), then
        the Kalman update."""
        if not (np.isfinite(observed).all() and np.isfinite(equations).all()):
            return
        variance = (active().fit.NOISE_FLOOR * curvature * self.dim) ** 2
        covariance = self.covariance
        covariance /= self.forgetting
        innovation = observed - equations @ self.entries
        predicted = float(np.sum((equations @ covariance) * equations))
        walk = (curvature * curvature) * self._walk
        spread = float(np.sum(equations * equations @ walk))
        excess = float(innovation @ innovation) - predicted - len(observed) * variance
        if spread > 0 and excess > 0:
            covariance[np.diag_indices(self.size)] += excess / spread * walk
        self.update(observed, equations, variance)

    def update(self, observed: np.ndarray, equations: np.ndarray, variance: float) -> None:
        """The Kalman update of the entries by ``observed = equations @ entries + e`` with
        independent errors of ``variance`` (nothing changes if the gain is not finite). The
        covariance's downdate is ``L^T L``, ``L`` the shared rows over the Cholesky factor of
        the innovations' covariance: symmetric in floating point too."""
        shared = equations @ self.covariance  # (P - 1, n)
        system = shared @ equations.T
        system[np.diag_indices(len(observed))] += variance
        try:
            factor = np.linalg.cholesky(system)
        except np.linalg.LinAlgError:
            return
        whitened = np.linalg.solve(factor, shared)  # L: (P - 1, n)
        step = np.linalg.solve(factor, observed - equations @ self.entries)
        if not (np.isfinite(whitened).all() and np.isfinite(step).all()):
            return
        self.entries = self.entries + whitened.T @ step
        self.covariance -= whitened.T @ whitened

    def state(self) -> dict[str, Any]:
        return {"entries": self.entries, "covariance": self.covariance}

    def load_state(self, state: dict[str, Any]) -> None:
        entries, covariance = state["entries"], state["covariance"]
        if entries is None:
            self.entries = self.covariance = None
            return
        n = self.size
        entries = np.asarray(entries, dtype=np.float64)
        covariance = np.asarray(covariance, dtype=np.float64)
        if entries.shape != (n,) or covariance.shape != (n, n):
            raise ValueError(f"the curvature fit must hold {n} entries and an {n} x {n} covariance")
        self.entries, self.covariance = entries, covariance


class FitScores:
    """How well the model and the fit predict the batches (module docstring): running
    geometric means of their relative errors, and the decisions they make."""

    def __init__(self) -> None:
        self.model = math.nan
        self.fit = math.nan

    def observe(self, model_error: float, fit_error: float) -> None:
        """Take one batch's relative errors (squared norms of the contrasts' errors over the
        squared norm of the contrasts)."""
        self.model = _track(self.model, model_error)
        self.fit = _track(self.fit, fit_error)

    @property
    def adopt(self) -> bool:
        """Whether the model should move toward the fit."""
        return self.fit < active().fit.ACCURATE and self.fit < active().fit.ADOPT_RATIO * self.model

    @property
    def accurate(self) -> bool:
        """Whether the better of the two predicts the batches within ``ACCURATE`` (relative
        squared error): the kept pairs can be moved to ``x`` well enough for the gradient's
        least-squares fit."""
        return min(self.model, self.fit) < active().fit.ACCURATE

    @property
    def error(self) -> float:
        """The relative error of the better prediction (of a curvature, the square root)."""
        return math.sqrt(min(self.model, self.fit))

    def state(self) -> dict[str, Any]:
        return {"model": self.model, "fit": self.fit}

    def load_state(self, state: dict[str, Any]) -> None:
        self.model, self.fit = float(state["model"]), float(state["fit"])


def _track(mean: float, value: float) -> float:
    """The running geometric mean with the next value (a contrast near 0 can make one error
    huge; the logarithm keeps it from ruling a window)."""
    value = math.log(max(value, 1e-300))
    if math.isnan(mean):
        return math.exp(value)
    return math.exp(math.log(mean) + active().fit.SCORE_TRACK * (value - math.log(mean)))


def least_squares_gradient(
    rows: np.ndarray, values: np.ndarray, errors: np.ndarray
) -> np.ndarray | None:
    r"""The weighted least-squares solution :math:`g` of :math:`\text{rows}\, g \approx
    \text{values}` with independent errors of sizes ``errors`` (the minimum-norm one where the
    rows do not determine it); ``None`` where no row is finite or the solve fails.

    The gradient in whitened coordinates from directional derivatives: each row is a
    direction, each value a central difference at ``x`` (moved there from where it was
    measured), each error the size of that value's error. With exact values and as many
    independent rows as ``d`` it is the gradient itself, where the Stein average
    :math:`\frac1M \sum_m \delta_m u_m` is off by :math:`\sqrt{d / M}` relative.
    """
    usable = np.isfinite(values) & np.isfinite(errors) & (errors > 0)
    usable &= np.isfinite(rows).all(axis=1)
    if not usable.any():
        return None
    weights = 1.0 / errors[usable]
    try:
        solution = np.linalg.lstsq(
            rows[usable] * weights[:, None], values[usable] * weights, rcond=None
        )
    except np.linalg.LinAlgError:
        return None
    return solution[0] if np.isfinite(solution[0]).all() else None
