"""What ZoVH's curvature-model iterations share (`PreconditionedZoVH`, the diagonal model;
`FullCurvatureZoVH`, the full one): the options, the tell (pair differences and residuals,
the robust reading of a noisy batch, the kept pairs), the model's start and the step rule's f
estimate, ``jac`` and ``hess_inv``, checkpoints. How the directions are held, made into
points and combined into the step is each iteration's own (the hooks at the end)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import estimators
from .._noise import robust as _robust
from ..tuning import active
from ._base import GradientStepMethod
from .zovh import PAPER_ONLY, ZoVH, default_pairs


@dataclass
class KeptPairs:
    """The pairs of an earlier iteration, reused by the step (`PreconditionedZoVH`).

    ``rows``: the held directions (vectors storage; the diagonal model's a `DirectionBlock`
    of the ``u_m``, the full model's an array of the points' directions ``W_b u_m``), or
    ``None`` with seeds storage, where they are drawn again from ``block``; ``whitening`` is
    the model's ``s_b`` (or ``W_b``) when they were measured, ``deltas`` the central
    differences ``delta_m`` at ``centre`` (host float64)."""

    block: int
    whitening: Any  # s_b, (d,), or None before the model had a shape
    deltas: np.ndarray
    centre: Any
    rows: Any


class CurvatureModelZoVH(ZoVH, GradientStepMethod):
    """The part of `PreconditionedZoVH`'s iteration (its docstring has the algorithm) that
    does not depend on the model's form; a subclass names the model (``model_kind``,
    `_new_model`) and fills in the hooks."""

    rate_ceiling = 1.0  # the direction is the model's full step
    model_kind = ""
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
            self.history = active().method.MODEL_HISTORY
        if self.directions == "auto":
            self.directions = self.storage_for(d, self.n_directions, self.history, self.space)
        self._kept: list[KeptPairs] = []  # the latest first, at most history - 1
        self.model = self._new_model()
        # |u_m|^2 of the pending ask's rows, on the host (nan: not drawn yet)
        self._host_norms = None
        # (s, c, shrink) of the direction, for `jac`: the model's whitening and scale it was
        # formed with, and its length over the model's Newton step for the gradient estimate
        self._gradient_scale = None
        self._centre_value = None  # f at the centre measured outside the batches, for `_start`

    @classmethod
    def storage_for(cls, dim: int, pairs: int, history: int, space: Any) -> str:
        """``directions="auto"``'s storage for this iteration."""
        raise NotImplementedError

    @property
    def points_per_iteration(self) -> int:
        return 2 * self.n_directions

    @property
    def _first_step(self) -> float:
        """The first step's length, the step rule's (``0.1 l``; the full model's ``0.3 l`` up
        to d = 10 outside a box): `_start` sets the model's scale by it."""
        # fixed rate
        first = active().step_rule.INITIAL_STEP if self.control is None else self.control.first_step
        return first * self.scale

    def value_at_centre(self, value: float) -> None:
        """``f`` at the centre, measured outside the batches (the driver's measurement of
        ``x0``), for the next `tell`: before the model has a scale, a start where the first
        pairs measure no curvature takes the longest first step (`_start`)."""
        if not self.model.ready:
            self._centre_value = float(value)

    def _start(self, values: Any) -> None:
        """Set the model's scale so that the first step (rate 1) is `_first_step` long, or
        `FIRST_STEP_RANGE` times that where ``f`` is known at the centre and the pairs
        measure no curvature there (`_flat`); no start while the gradient estimate is 0."""
        P, d = self.n_directions, self.space.dim
        with np.errstate(over="ignore", invalid="ignore"):  # values too large: no start
            plus, minus = self.pair_split(values)
            delta = (plus - minus) / (2 * self.smoothing)
            length = self._combination_norm(delta)
        if math.isfinite(length) and length > 0:
            curvature = length / ((d + P + 1) * self._first_step)
            if self._centre_value is not None and self._flat(plus, minus):
                curvature /= active().method.FIRST_STEP_RANGE
                if self.control is not None:
                    self.control.lengthen_first_step(active().method.FIRST_STEP_RANGE)
            self.model.start(curvature)

    def _flat(self, plus: Any, minus: Any) -> bool:
        r"""Whether the pairs measure no curvature: a pair's mean is
        :math:`f(x) + \frac{\mu^2}{2} u_m^T \nabla^2 f\, u_m + O(\mu^4)` and its half
        difference :math:`\mu\, \nabla f^T u_m + O(\mu^3)`; flat where every mean is within
        :math:`\sqrt{\epsilon}` (``x0``'s dtype) of the largest half difference of ``f`` at the
        centre (a linear ``f`` at this scale, up to rounding)."""
        f0 = self._centre_value
        with np.errstate(over="ignore", invalid="ignore"):
            bend = float(np.max(np.abs((plus + minus) / 2 - f0)))
            slope = float(np.max(np.abs(plus - minus))) / 2
        return bend <= math.sqrt(float(np.finfo(self.space.dtype_name).eps)) * slope

    def _f_estimate(self, values: Any, mean: float) -> float:
        if not self.model.ready:
            self._start(values)
            if not self.model.ready:
                return mean
        mu = self.smoothing
        bias = 0.5 * mu * mu * self.model.curvature
        if self.robust:  # the median of the pairs' estimates
            with np.errstate(over="ignore", invalid="ignore"):  # inf - inf: the safeguard's
                plus, minus = self.pair_split(values)
                return float(np.median((plus + minus) / 2 - bias * self._norms()))
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
        plus, minus = self.pair_split(values)
        with np.errstate(over="ignore", invalid="ignore"):
            deltas = (plus - minus) / (2 * mu)
            r = estimators.pair_residuals(plus, minus, self._norms(), mu, c)
        usable = bool(np.isfinite(deltas).all())  # else values too large to difference
        if self.robust and usable and np.isfinite(r).all():
            hit = _robust.outliers(r)
            deltas, r = _robust.clipped(deltas), _robust.clipped(r)
            if hit.any() and not hit.all():  # those pairs leave: the rest's mean difference
                deltas = np.where(hit, 0.0, deltas) * (hit.size / (hit.size - int(hit.sum())))
                r = np.where(hit, float(np.median(r)), r)
            r -= r.mean()
        if not usable:
            direction = False
            self._direction = None
        weights = None
        if np.isfinite(r).all():
            if self.robust:  # the noise floor's bound (`StepSizeControl._noise_floor`)
                spread = _robust.scale(r)
                self.noise_variance = 2.0 * spread * spread  # inf, not OverflowError, at 1e300
            weights = r / mu / mu / (P - 1)
        kept = None
        if usable and self.history > 1:
            kept = self._keep(deltas)
        snapshot = self.model.snapshot  # the whitening of the step, before the model learns
        step = self._step_and_learn(
            deltas if direction else None, c, weights, keep=kept is not None
        )
        if direction:
            self._direction, shrink = step
            self._gradient_scale = (snapshot, c, shrink)
        if kept is not None:
            self._kept.insert(0, kept)
            for dropped in self._kept[self.history - 1 :]:
                self._let_go(dropped.rows)
            del self._kept[self.history - 1 :]
        else:
            self._let_go(self._rows[1])
        self._clear_pending()

    def _clear_pending(self) -> None:
        self._host_norms = None
        self._centre_value = None

    def discard(self) -> None:
        super().discard()
        self._clear_pending()

    def _discard_all(self) -> None:
        super()._discard_all()
        self._clear_pending()
        self._gradient_scale = None
        self._kept = []

    def estimates(self) -> dict[str, Any]:
        """``jac``: the latest gradient estimate; ``hess_inv``: the model's inverse."""
        if not self.model.ready:
            return {}
        out = {"hess_inv": self._hess_inv()}
        if self._direction is not None:
            snapshot, c, shrink = self._gradient_scale
            jac = self.model.gradient_of(self._direction, snapshot)
            jac *= c / shrink
            out["jac"] = self.space.to_user(jac)
        return out

    def state(self) -> dict[str, Any]:
        scale = self._gradient_scale
        return {
            **super().state(),
            "model": self.model.state(),
            "gradient_whitening": None if scale is None else scale[0],
            "gradient_curvature": math.nan if scale is None else scale[1],
            "gradient_shrink": math.nan if scale is None else scale[2],
            "kept": [
                {
                    "block": k.block,
                    "whitening": k.whitening,
                    "deltas": k.deltas,
                    "centre": k.centre,
                    "rows": self._kept_rows_state(k),
                }
                for k in self._kept
            ],
        }

    def _kept_rows_state(self, kept: KeptPairs) -> Any:
        """A kept iteration's held rows as an array for a checkpoint (None: not held)."""
        return kept.rows

    def load_state(self, state: dict[str, Any]) -> None:
        super().load_state(state)
        self.model.load_state(state["model"])
        whitening = self._model_array(state["gradient_whitening"])
        P, d = self.n_directions, self.space.dim
        curvature = float(state["gradient_curvature"])
        if "gradient_shrink" in state:
            shrink = float(state["gradient_shrink"])
        else:  # written before the fitted gradient: the Stein step's M / (d + M + 1)
            M = int(state["gradient_pairs"])
            shrink = M / (d + M + 1) if M > 0 else math.nan
        self._gradient_scale = None if whitening is None else (whitening, curvature, shrink)
        self._kept = []
        for k in state["kept"]:
            rows, deltas = k["rows"], np.asarray(k["deltas"], dtype=np.float64)
            if deltas.shape != (P,) or (rows is not None and rows.shape != (P, d)):
                raise ValueError(f"a kept iteration must hold {P} pairs in d = {d}")
            if (rows is None) != (self.directions == "seeds"):
                raise ValueError("the kept pairs and the directions storage disagree")
            kept_whitening = self._model_array(k["whitening"])
            rows = None if rows is None else self.space.from_numpy(rows)
            self._kept.append(
                KeptPairs(
                    int(k["block"]),
                    kept_whitening,
                    deltas,
                    self.vector(k["centre"]),
                    self._loaded_rows(int(k["block"]), rows, kept_whitening),
                )
            )
        if len(self._kept) >= self.history:
            raise ValueError(f"history={self.history} keeps at most {self.history - 1} iterations")
        self._clear_pending()

    # hooks ----------------------------------------------------------------------------------

    def pair_split(self, rows: Any) -> tuple[Any, Any]:
        """The ``+`` and the ``-`` rows (or values) of a pending ask's ``2 P`` points."""
        raise NotImplementedError

    def _norms(self) -> np.ndarray:
        """``|u_m|^2`` of the pending ask's directions, on the host."""
        raise NotImplementedError

    def _combination_norm(self, coefficients: np.ndarray) -> float:
        """``|sum_m a_m W u_m|`` over the pending directions."""
        raise NotImplementedError

    def _keep(self, deltas: np.ndarray) -> KeptPairs:
        """The pending pairs as an earlier iteration's for the next steps."""
        raise NotImplementedError

    def _step_and_learn(
        self, deltas: np.ndarray | None, c: float, weights: np.ndarray | None, *, keep: bool
    ) -> tuple[Any, float] | None:
        """The model's Newton step for ``deltas`` and the kept pairs, with its shrink (its
        length over the Newton step for the gradient estimate: ``M / (d + M + 1)`` for the
        Stein average of ``M`` pairs; None without ``deltas``), and the model's update from
        the pair ``weights`` (None: none); ``keep``: the pending pairs will be kept for the
        next steps."""
        raise NotImplementedError

    def _let_go(self, rows: Any) -> None:
        """Rows no longer used (a dropped kept iteration's, or the pending ones)."""

    def _loaded_rows(self, block: int, rows: Any, whitening: Any) -> Any:
        """A checkpoint's held rows of a kept iteration, as the iteration keeps them."""
        return rows

    def _new_model(self) -> Any:
        raise NotImplementedError

    def _hess_inv(self) -> Any:
        raise NotImplementedError

    def _model_array(self, host: Any) -> Any:
        """A checkpoint's array of the model (its `snapshot`, kept whitenings)."""
        raise NotImplementedError
