"""ZoVH with a curvature model accumulated across iterations (``curvature="diagonal"``, the
default of ``method="zovh"``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _robust, estimators
from .._backend import norm
from .._curvature import DiagonalCurvature, DiagonalOperator
from .._step_size import INITIAL_STEP
from ._base import GradientStepMethod
from .zovh import PAPER_ONLY, ZoVH

# history="auto": the step uses the pairs of this many iterations, the current one included
# (the paper's N = 4). COCO bbob-largescale, d = 320, 100 d, zovh alone (a prototype): 0.187,
# 0.199, 0.210, 0.218, 0.221 of the triples with 1, 3, 4, 6, 8 (the docs' theory page); the
# memory kept grows as N - 1.
MODEL_HISTORY = 4


@dataclass
class KeptPairs:
    """The pairs of an earlier iteration, reused by the step (`PreconditionedZoVH`).

    ``rows`` are the points' directions ``s_b * u_m`` (vectors storage), or ``None`` with
    seeds storage, where they are drawn again from ``block`` and multiplied by ``whitening``
    (the same operations, so the same numbers); ``deltas`` are the central differences
    ``delta_m`` at ``centre`` (host float64)."""

    block: int
    whitening: Any  # s_b, (d,), or None before the model had a shape
    deltas: np.ndarray
    centre: Any
    rows: Any


def default_pairs(dim: int) -> int:
    """``n_directions="auto"``: ``P = (4 + floor(3 ln d)) // 2`` pairs, so that ``2 P`` is
    CMA-ES's default population size (at least 2 pairs)."""
    return max(2, (4 + int(3 * math.log(dim))) // 2) if dim > 1 else 2


class PreconditionedZoVH(ZoVH, GradientStepMethod, curvature="diagonal"):
    r"""ZoVH whose curvature is a diagonal model learned across iterations (the default).

    With the model :math:`h \approx \operatorname{diag}(\nabla^2 f)` and the whitening
    :math:`s = (c / h)^{1/2}`, :math:`c = \operatorname{geomean}(h)` (`zovh_opt._curvature`),
    each iteration

    1. evaluates ``P`` antithetic pairs :math:`f(x \pm \mu\, s \circ u_m)`, ``2 P`` values
       (``P = n_directions``);
    2. estimates the gradient in the whitened coordinates by central differences,
       :math:`\hat g_z = \frac1M \sum_m \delta_m u_m` with
       :math:`\delta_m = (y^+_m - y^-_m) / (2 \mu)`, over the ``M = N P`` pairs of the last
       ``N = history`` iterations: those of earlier iterations, measured at their own centres
       :math:`x_b`, are moved to ``x`` with the model,
       :math:`\delta_m + w_m^T \operatorname{diag}(h) (x - x_b)`
       (`zovh_opt.estimators.transported_differences`; ``w_m`` the pair's direction in
       ``x``), as the paper reuses its queries; and steps along the model's Newton step for
       that estimate,

       .. math:: p = \frac{M}{c\,(d + M + 1)}\, s \circ \hat g_z
                 \approx \frac{M}{d + M + 1}\, h^{-1} \circ \nabla f ,

       where :math:`M / (c (d + M + 1))` is the step that minimises the expected value of a
       quadratic with curvature :math:`c I` along an ``M``-direction Gaussian estimate
       (:math:`E \|\hat g_z\|^2 = \|g_z\|^2 (d + M + 1) / M`): ``learning_rate = 1`` is the
       full step, and the step rule ``"auto"`` keeps the rate at most 1;
    3. updates the model from the new values, with the paper's averaged-baseline Hessian
       estimator (eq. (9)) on the pair means, the model itself as a control variate
       (`zovh_opt.estimators.diagonal_hessian_error`).

    The first direction sets the model's scale so that the first step is ``0.1 l`` long
    (``l = |x0|``, as the step rule's first step), so ``f -> a f`` leaves the iterates as they
    were. The step rule judges a trial by the batch mean less the model's smoothing bias
    :math:`\frac{\mu^2}{2} c \overline{\|u\|^2}`.

    Costs per iteration: the draw, the norms, the whitening, the points, the direction over
    ``N P`` rows, the squared directions and their weighted sum, each ``O(P d)`` (the
    direction ``O(N P d)``). Memory: the ``P`` directions, their squares, and about 8 vectors
    of ``d`` besides the ``2 P`` points; across iterations the model and the ``N - 1`` earlier
    iterations' ``P`` directions, centres and whitenings, ``(N - 1)(P + 2) d`` floats. With
    ``directions="seeds"`` their directions are drawn again when used (``(N - 1) P`` rows
    per iteration), ``2 (N - 1) d`` floats kept; the run is the same.
    ``history=1`` is the iteration without reuse.

    ``jac`` is the latest gradient estimate :math:`\hat g_z / s`, ``hess_inv`` the model's
    :math:`\operatorname{diag}(1/h)` as a `DiagonalOperator`.
    """

    rate_ceiling = 1.0  # the direction is the model's full step
    model_kind = "diagonal"
    iteration = "diagonal curvature model (curvature='diagonal')"
    direction_is_gradient = False  # `estimates` gives the gradient from it

    def __init__(self, x0: Any, *, rng: Any = None, **options: Any) -> None:
        super().__init__(x0, rng=rng, **options)  # checks every option's value
        paper = [name for name in PAPER_ONLY if name in options]
        if paper:
            raise ValueError(
                f"{', '.join(paper)}: option(s) of the paper's iteration, which the curvature "
                "model does not use; pass curvature='off' (or a float learning_rate) to run "
                "Algorithm 1"
            )
        if self.curvature not in ("auto", self.model_kind):
            kind = self.model_kind
            raise ValueError(f"{type(self).__name__} is the iteration of curvature={kind!r}")
        self.curvature = self.model_kind
        d = self.space.dim
        if self.n_directions == "auto":
            self.n_directions = default_pairs(d)
        if self.history == "auto":
            self.history = MODEL_HISTORY
        self._kept: list[KeptPairs] = []  # the latest first, at most history - 1
        self.model = self._new_model()
        # the pending ask's drawn rows u_m and the points' directions (s * u_m)
        self._drawn, self._whitened = None, None
        # |u_m|^2 of the pending ask: on the device, then on the host when first needed
        self._sq_norms, self._host_norms = None, None
        self._gradient_scale = None  # (s, c) that the direction was formed with, for `jac`

    @property
    def points_per_iteration(self) -> int:
        return 2 * self.n_directions

    @property
    def _first_step(self) -> float:
        """The first step's length, ``0.1 l``: `_start` sets the model's scale by it."""
        return INITIAL_STEP * self.scale

    def _prepare(self) -> None:
        self._whiten(self._draw(self.n_directions))

    def _whiten(self, U: Any) -> None:
        """Take the drawn rows ``U`` as the pending ask's: their squared norms, then ``U``
        becomes ``s * U`` in place (the points' directions)."""
        self._sq_norms = self.xp.vecdot(U, U)  # to the host at the tell, with the values
        self._drawn = U
        self._whitened = self.model.whiten(U)

    def _layout(self) -> tuple[Any, tuple[float, ...], bool]:
        return self._whitened, (self.smoothing, -self.smoothing), False

    def _norms(self) -> Any:
        """``|u_m|^2`` of the pending ask on the host (one small copy per iteration)."""
        if self._host_norms is None:
            self._host_norms = self.space.to_host(self._sq_norms)
        return self._host_norms

    def _start(self, values: Any) -> None:
        """Set the model's scale so that the first step (rate 1) is ``0.1 l`` long; no start
        while the gradient estimate is 0."""
        P, d = self.n_directions, self.space.dim
        with np.errstate(over="ignore", invalid="ignore"):  # values too large: no start
            delta = (values[:P] - values[P:]) / (2 * self.smoothing)
            length = norm(self.space.from_host(delta) @ self._whitened, self.xp)
        if math.isfinite(length) and length > 0:
            self.model.start(length / ((d + P + 1) * self._first_step))

    def _f_estimate(self, values: Any, mean: float) -> float:
        if not self.model.ready:
            self._start(values)
            if not self.model.ready:
                return mean
        mu = self.smoothing
        bias = 0.5 * mu * mu * self.model.curvature
        if self.robust:  # the median of the pairs' estimates
            P = self.n_directions
            with np.errstate(over="ignore", invalid="ignore"):  # inf - inf: the safeguard's
                return float(np.median((values[:P] + values[P:]) / 2 - bias * self._norms()))
        return mean - bias * float(self._norms().mean())

    def _tell(self, values: Any, *, direction: bool = True) -> None:
        if not self.model.ready:
            self._start(values)
        if not self.model.ready:
            self._direction = None
            self._clear_pending()
            return
        P, mu = self.n_directions, self.smoothing
        c = self.model.curvature
        plus, minus = values[:P], values[P:]
        with np.errstate(over="ignore", invalid="ignore"):
            deltas = (plus - minus) / (2 * mu)
            r = estimators.pair_residuals(plus, minus, self._norms(), mu, c)
        usable = bool(np.isfinite(deltas).all())  # else values too large to difference
        if self.robust and usable and np.isfinite(r).all():
            deltas, r = _robust.clipped(deltas), _robust.clipped(r)
            r -= r.mean()
        if not usable:
            direction = False
            self._direction = None
        if direction:
            self._direction, M = self._newton_step(deltas, c)
            self._gradient_scale = (self.model.snapshot, c, M)
        kept = None
        if usable and self.history > 1:
            rows = self._whitened if self.directions == "vectors" else None
            kept = KeptPairs(self._rows[0], self.model.whitening, deltas, self._x, rows)
        if np.isfinite(r).all():
            if self.robust:  # the noise floor's bound (`StepSizeControl._noise_floor`)
                self.noise_variance = 2.0 * _robust.scale(r) ** 2
            rows_kept = kept is not None and kept.rows is not None
            weights = r / mu / mu / (P - 1)
            self.model.learn(weights, self._drawn, self._whitened, in_place=not rows_kept)
        if kept is not None:
            self._kept.insert(0, kept)
            del self._kept[self.history - 1 :]
        self._clear_pending()

    def _newton_step(self, deltas: np.ndarray, c: float) -> tuple[Any, int]:
        """The step of item 2 (class docstring) and its number of pairs ``M``."""
        P, d = self.n_directions, self.space.dim
        M = P * (1 + len(self._kept))
        scale = c * (d + M + 1)
        step = self.space.from_host(deltas / scale) @ self._whitened
        move = self.model.transport() if self._kept else None
        for kept in self._kept:
            rows = self._kept_rows(kept)
            moved = move(rows, self.space.from_host(kept.deltas), self._x - kept.centre)
            step += (moved / scale) @ rows
        return step, M

    def _kept_rows(self, kept: KeptPairs) -> Any:
        """The points' directions of a kept iteration (drawn again with seeds storage)."""
        if kept.rows is not None:
            return kept.rows
        return self.model.whiten(self._draw_rows(kept.block, self.n_directions), kept.whitening)

    def _clear_pending(self) -> None:
        self._drawn, self._whitened = None, None
        self._sq_norms, self._host_norms = None, None

    def discard(self) -> None:
        super().discard()
        self._clear_pending()

    def _discard_all(self) -> None:
        super()._discard_all()
        self._clear_pending()
        self._gradient_scale = None
        self._kept = []

    def estimates(self) -> dict[str, Any]:
        """``jac``: the latest gradient estimate; ``hess_inv``: the model's ``diag(1/h)``."""
        if not self.model.ready:
            return {}
        out = {"hess_inv": self._hess_inv()}
        if self._direction is not None:
            snapshot, c, M = self._gradient_scale
            jac = self.model.gradient_of(self._direction, snapshot)
            jac *= c * (self.space.dim + M + 1) / M
            out["jac"] = self.space.to_user(jac)
        return out

    def _new_model(self) -> DiagonalCurvature:
        return DiagonalCurvature(self.space)

    def _hess_inv(self) -> DiagonalOperator:
        """The model's ``diag(1 / h)`` in the user's namespace."""
        return DiagonalOperator(self.space.to_user(self.model.inverse_diagonal()))

    def _model_array(self, host: Any) -> Any:
        """A checkpoint's ``s`` (``(d,)``, the model's `snapshot` and kept whitenings)."""
        return self._vector(host)

    def state(self) -> dict[str, Any]:
        scale = self._gradient_scale
        return {
            **super().state(),
            "model": self.model.state(),
            "gradient_whitening": None if scale is None else scale[0],
            "gradient_curvature": math.nan if scale is None else scale[1],
            "gradient_pairs": 0 if scale is None else scale[2],
            "kept": [
                {
                    "block": k.block,
                    "whitening": k.whitening,
                    "deltas": k.deltas,
                    "centre": k.centre,
                    "rows": k.rows,
                }
                for k in self._kept
            ],
        }

    def load_state(self, state: dict[str, Any]) -> None:
        super().load_state(state)
        self.model.load_state(state["model"])
        whitening = self._model_array(state["gradient_whitening"])
        curvature, pairs = float(state["gradient_curvature"]), int(state["gradient_pairs"])
        self._gradient_scale = None if whitening is None else (whitening, curvature, pairs)
        P, d = self.n_directions, self.space.dim
        self._kept = []
        for k in state["kept"]:
            rows, deltas = k["rows"], np.asarray(k["deltas"], dtype=np.float64)
            if deltas.shape != (P,) or (rows is not None and rows.shape != (P, d)):
                raise ValueError(f"a kept iteration must hold {P} pairs in d = {d}")
            if (rows is None) != (self.directions == "seeds"):
                raise ValueError("the kept pairs and the directions storage disagree")
            self._kept.append(
                KeptPairs(
                    int(k["block"]),
                    self._model_array(k["whitening"]),
                    deltas,
                    self._vector(k["centre"]),
                    None if rows is None else self.space.from_numpy(rows),
                )
            )
        if len(self._kept) >= self.history:
            raise ValueError(f"history={self.history} keeps at most {self.history - 1} iterations")
        self._clear_pending()
        if self._rows is not None:  # a pending ask, its rows drawn again: its points again
            self._whiten(self._rows[1])
