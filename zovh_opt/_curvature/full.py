"""ZoVH's full curvature model: a symmetric positive definite model of the Hessian, learned
across iterations (``curvature="full"``).

The model is ``A = c W^{-T} W^{-1}``: a scale ``c`` and a whitening ``W`` with
``|det W| = 1``, so that in whitened coordinates it is ``c I`` and queries are
``x +- mu W u``. From ``P`` antithetic pairs the paper's Hessian estimator (eq. (9)) with the
model as control variate measures the model's error; the update is multiplicative in the
whitened coordinates, as CMA-ES's covariance update (the scale from the trace at rate 1/2,
the shape at `shape_rate`, each eigenvalue clipped to `SHAPE_CLIP`), keeps ``A`` positive
definite and costs ``O(P d^2)``; ``W^{-1}`` is formed again every `REFRESH` ``d`` updates.
The update in full: theory page, *The run's parts in detail*, *The full curvature model's
update*; the evidence, *The full curvature model*.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .._arrays.backend import ArraySpace
from ..tuning import active


def shape_rate(dim: int, pairs: int) -> float:
    r"""``beta``, the learning rate of the model's shape: :math:`1.5 P / (d + 1)^2`, at most
    `SHAPE_RATE_CAP` (0.15).

    One iteration's :math:`E / c` has noise of relative size :math:`O(d / \sqrt P)` in each
    of its :math:`d^2` entries, proportional to the model's error (the model is the control
    variate): the log-eigenvalues take a random walk of step :math:`\beta\, O(d / \sqrt P)`
    while the error contracts by :math:`\beta` per iteration, which is stable only for
    :math:`\beta = O(P / d^2)` (CMA-ES's rank-mu rate has the same
    :math:`\mu_{\mathrm{eff}} / d^2` form). Measured (docs, *Theory*): at 4 times this rate
    runs diverge at d = 20 and 40; 1.5 rather than 1 took 10-20 % fewer evaluations on
    rotated Rosenbrock functions (d = 5-40), as many on rotated ellipsoids, and learned the
    inverse Hessian of rotated quadratics (d = 20, condition 1e4) to a median 8.5 % rather
    than 11 % by the end of a default run. The cap binds up to d = 5 with the noise-free
    pairs (the formula is 0.5 at d = 2, 0.17 at d = 5): an over-estimated direction
    shrinks by at most :math:`e^{-\beta / 2}` an update, and with the diagonal model's
    rate 0.05 as the cap COCO's ill-conditioned functions took 10-50 % more evaluations at
    d = 2 and 5; higher caps (0.25, none) made more runs from a bound of a box (whose map
    is not convex near it) stall at d = 3."""
    return min(active().curvature.SHAPE_RATE_CAP, 1.5 * pairs / (dim + 1) ** 2)


class FullCurvature:
    """The model ``A = c W^{-T} W^{-1}`` (module docstring) of one run, on the run's device.

    Parameters
    ----------
    space : ArraySpace
        The run's namespace, dtype and device.
    pairs : int
        ``P``, the pairs per update (sets `shape_rate`).
    """

    def __init__(self, space: ArraySpace, pairs: int) -> None:
        self.space = space
        self.rate = shape_rate(space.dim, pairs)
        self.curvature = math.nan  # c, a float: f -> 2^k f scales it exactly
        self.whitening = None  # W, (d, d); None before `start`
        self.inverse_whitening = None  # W^{-1}
        self.updates = 0  # since W^{-1} was last formed from W

    @property
    def ready(self) -> bool:
        """Whether the model has a scale (`start` was called)."""
        return self.whitening is not None

    def start(self, curvature: float) -> None:
        """Begin as ``A = curvature * I``."""
        space = self.space
        self.curvature = float(curvature)
        eye = space.xp.eye(space.dim, dtype=space.dtype, device=space.compute_device)
        self.whitening, self.inverse_whitening = eye, space.xp.asarray(eye, copy=True)
        self.updates = 0

    def whiten(self, U: Any, whitening: Any = None) -> Any:
        """The points' directions ``W u_m`` of the rows ``U`` (a new array), with the current
        ``W`` or the given one."""
        W = self.whitening if whitening is None else whitening
        return U if W is None else U @ W.T

    def hessian_times(self, v: Any, inverse_whitening: Any = None) -> Any:
        """``W^{-T} W^{-1} v`` (``A v / c``) with the current or the given ``W^{-1}``."""
        Wi = self.inverse_whitening if inverse_whitening is None else inverse_whitening
        return (Wi @ v) @ Wi

    def learn(self, weights: np.ndarray, drawn: Any, directions: Any, *, in_place: bool) -> None:
        """`update` from the pair weights and the drawn rows (the directions ``W u_m`` are
        a separate array, left as they are)."""
        self.update(weights, drawn)

    def transport(self) -> Callable[[Any, Any, Any], Any]:
        r"""``move(rows, deltas, displacement)``: central differences of earlier pairs
        (directions ``rows`` in ``x``) moved to the current point with the model,
        :math:`\delta_m + w_m^T A\, (x - x_b)`."""

        def move(rows: Any, deltas: Any, displacement: Any) -> Any:
            moved = self.hessian_times(displacement)
            moved *= self.curvature
            return deltas + rows @ moved

        return move

    def gradient_of(self, direction: Any, inverse_whitening: Any) -> Any:
        """``A direction / c`` with the model the direction was formed with (its ``W^{-1}``)."""
        return self.hessian_times(direction, inverse_whitening)

    @property
    def snapshot(self) -> Any:
        """What `gradient_of` needs of the model that forms a direction: ``W^{-1}``."""
        return self.inverse_whitening

    def update(self, weights: np.ndarray, U: Any) -> None:
        r"""Move the model by the error :math:`E = \sum_m w_m u_m u_m^T` (whitened
        coordinates), ``weights`` :math:`w_m = r_m / ((P - 1) \mu^2)` on the host, ``U`` the
        drawn rows :math:`u_m` (``P x d``)."""
        space, xp, c = self.space, self.space.xp, self.curvature
        d = space.dim
        gram = space.to_host(U @ U.T)  # the P x P algebra on the host
        k_values, k_vectors = np.linalg.eigh(0.5 * (gram + gram.T))
        keep = k_values > k_values.max() * 1e-10 * len(k_values)
        if not np.isfinite(weights).all() or not keep.any():
            return
        # U^T = Q diag(sqrt(k)) Y^T with Q = U^T Y k^{-1/2} orthonormal (d x r)
        Y, root = k_vectors[:, keep], np.sqrt(k_values[keep])
        small = (Y * root).T @ (weights[:, None] / c * (Y * root))
        values, vectors = np.linalg.eigh(0.5 * (small + small.T))
        mean = min(1.0, max(-1.0, float(values.sum()) / d))
        self.curvature = c * math.exp(active().curvature.FULL_SCALE_RATE * mean)
        # the shape's exponent S = clip(beta (X - mean I)), less its trace t / d: on the
        # eigenvectors G = Q V (d x r) of X beta (lambda - mean) clipped, elsewhere
        # -beta mean; W <- W exp(-S / 2) = e^{(beta mean + t/d) / 2} (W + W G diag(e^{-(rho +
        # beta mean) / 2} - 1) G^T)
        beta = self.rate
        rho = np.clip(
            beta * (values - mean), -active().curvature.SHAPE_CLIP, active().curvature.SHAPE_CLIP
        )
        trace = (float(rho.sum()) - (d - len(rho)) * beta * mean) / d
        G = U.T @ space.from_host(Y / root @ vectors)
        shrink = np.exp(-0.5 * (rho + beta * mean))
        overall = math.exp(0.5 * (beta * mean + trace))
        W, Wi = self.whitening, self.inverse_whitening
        WG = W @ G
        W = W + (WG * space.from_host(shrink - 1.0)) @ G.T
        Wi = Wi + (G * space.from_host(1.0 / shrink - 1.0)) @ (G.T @ Wi)
        W *= overall
        Wi /= overall
        self.updates += 1
        if self.updates >= active().curvature.REFRESH * d:
            Wi = xp.linalg.inv(W)
            self.updates = 0
        self.whitening, self.inverse_whitening = W, Wi

    def move_toward(self, hessian: np.ndarray, limit: float) -> bool:
        r"""Move the model toward a positive definite ``hessian`` (host, ``(d, d)``), by at most
        a factor ``limit`` per eigenvalue: with :math:`X = W^T H W / c = V \rho V^T` (the
        target in the model's whitened coordinates), :math:`\rho` is clipped to
        :math:`[1 / \mathrm{limit}, \mathrm{limit}]` and the model becomes
        :math:`c W^{-T} V \rho V^T W^{-1}`: ``c`` times the geometric mean :math:`\bar\rho` of
        :math:`\rho`, ``W`` times :math:`V \operatorname{diag}(\sqrt{\bar\rho / \rho})`
        (``|det W|`` stays 1), and :math:`W^{-1}` with it. ``False`` (and no change) where
        :math:`X` is not positive definite or not finite."""
        space, xp = self.space, self.space.xp
        W, c = self.whitening, self.curvature
        target = W.T @ space.from_host(hessian) @ W
        values, vectors = xp.linalg.eigh(0.5 * (target + target.T) / c)
        rho = space.to_host(values)
        if not (np.isfinite(rho).all() and rho.min() > 0):
            return False
        bound = math.log(limit)
        rho = np.exp(np.clip(np.log(rho), -bound, bound))
        scale = float(np.exp(np.mean(np.log(rho))))
        self.curvature = c * scale
        self.whitening = W @ (vectors * space.from_host(np.sqrt(scale / rho)))
        shrink = space.from_host(np.sqrt(rho / scale))
        self.inverse_whitening = (vectors.T * shrink[:, None]) @ self.inverse_whitening
        return True

    def inverse(self) -> Any:
        """``A^{-1} = W W^T / c``, a new ``(d, d)`` array."""
        W = self.whitening
        inverse = W @ W.T
        inverse /= self.curvature
        return inverse

    def state(self) -> dict[str, Any]:
        return {
            "curvature": self.curvature,
            "whitening": self.whitening,
            "inverse_whitening": self.inverse_whitening,
            "updates": self.updates,
        }

    def load_state(self, state: dict[str, Any]) -> None:
        W, curvature = state["whitening"], float(state["curvature"])
        if W is None:
            self.curvature, self.whitening, self.inverse_whitening = math.nan, None, None
            self.updates = 0
            return
        d = self.space.dim
        Wi = state["inverse_whitening"]
        for name, a in (("whitening", W), ("inverse whitening", Wi)):
            if a is None or a.shape != (d, d) or not np.isfinite(a).all():
                raise ValueError(f"the curvature model's {name} must be {d} x {d} finite numbers")
        if not (math.isfinite(curvature) and curvature > 0):
            raise ValueError(f"the curvature model's scale must be > 0, got {curvature!r}")
        self.curvature = curvature
        self.whitening = self.space.from_numpy(W)
        self.inverse_whitening = self.space.from_numpy(Wi)
        self.updates = int(state["updates"])
