"""ZoVH with a full curvature model accumulated across iterations (``curvature="full"``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._arrays.backend import norm
from .._curvature.fit import CurvatureFit, FitScores, least_squares_gradient
from .._curvature.full import FullCurvature
from ..tuning import active
from .curvature_model import CurvatureModelZoVH, KeptPairs


class FullCurvatureZoVH(CurvatureModelZoVH, curvature="full"):
    r"""ZoVH whose curvature is a full (``d x d``) model learned across iterations.

    The iteration of `PreconditionedZoVH` (their shared part: `CurvatureModelZoVH`) with the
    model :math:`A = c W^{-T} W^{-1}` of `zovh_opt._curvature.full` in place of the diagonal
    one: the pairs are
    :math:`f(x \pm \mu W u_m)`, the step is the model's Newton step
    :math:`\frac{M}{c (d + M + 1)} W \hat g_z \approx \frac{M}{d + M + 1} A^{-1} \nabla f`,
    kept pairs are moved to the current point with :math:`A`, and the model learns from the
    outer products :math:`u_m u_m^T` where the diagonal one takes :math:`u_m^2`, with a
    multiplicative update that keeps it positive definite. ``hess_inv`` is
    :math:`A^{-1}`, a ``(d, d)`` array.

    Up to ``d = 20``, with a deterministic objective, a least-squares fit of the Hessian to
    the same pairs runs beside the model (`zovh_opt._curvature.fit`): where it predicts the
    batches' curvature within 10 % and better than the model, the model moves toward it;
    where either does, the step's gradient is the weighted least-squares fit of the current
    and the kept pairs (exact on a quadratic once they span ``d`` directions) and the step
    the model's full Newton step for it, :math:`W \hat g_z / c`; elsewhere the iteration is
    the one above. The fit costs :math:`O(d^4 P)` host work per iteration.

    Costs per iteration: the whitening of the ``P`` draws and the model's update,
    :math:`O(P d^2)`, and every ``d`` iterations one inverse, :math:`O(d^3)`; memory: ``W``,
    :math:`W^{-1}` and, per kept iteration, its ``W`` (shared while the model is
    unchanged) besides the diagonal iteration's vectors. The ``P`` directions of an
    iteration are drawn as one block and held (``"seeds"``: the kept iterations' drawn
    again), and every pass over them is one matrix product.
    """

    model_kind = "full"
    iteration = "full curvature model (curvature='full')"

    def __init__(self, x0: Any, *, rng: Any = None, **options: Any) -> None:
        super().__init__(x0, rng=rng, **options)
        # the pending ask's drawn rows u_m and the points' directions (W u_m)
        self._drawn, self._whitened, self._sq_norms = None, None, None
        d = self.space.dim
        self.fit = (
            CurvatureFit(d, self.n_directions)
            if d <= active().dimensions.FIT_MAX_DIMENSION
            else None
        )
        self.scores = FitScores()

    @property
    def initial_step(self) -> float:
        """The step rule's first step over ``l``: `FULL_INITIAL_STEP` up to
        `INITIAL_STEP_MAX_DIMENSION`, the rule's own above."""
        return (
            active().method.FULL_INITIAL_STEP
            if self.space.dim <= active().dimensions.INITIAL_STEP_MAX_DIMENSION
            else active().step_rule.INITIAL_STEP
        )

    @classmethod
    def storage_for(cls, dim: int, pairs: int, history: int, space: Any) -> str:
        """``directions="auto"``: ``"vectors"`` (the model itself holds ``d x d``)."""
        return "vectors"

    def pair_split(self, rows: Any) -> tuple[Any, Any]:
        """The ``x + mu W u_m`` and the ``x - mu W u_m`` rows (or values): ``P`` each, ``+``
        first."""
        P = self.n_directions
        return rows[:P], rows[P:]

    def _prepare(self) -> None:
        self._whiten(self._draw(self.n_directions))

    def _whiten(self, U: Any) -> None:
        """Take the drawn rows ``U`` as the pending ask's: their squared norms, then ``U``
        becomes ``W U`` in place (the points' directions)."""
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

    def _combination_norm(self, coefficients: Any) -> float:
        return norm(self.space.from_host(coefficients) @ self._whitened, self.xp)

    def _keep(self, deltas: Any) -> KeptPairs:
        rows = self._whitened if self.directions == "vectors" else None
        return KeptPairs(self._rows[0], self.model.whitening, deltas, self._x, rows)

    def _step_and_learn(
        self, deltas: Any | None, c: float, weights: Any | None, *, keep: bool
    ) -> tuple[Any, float] | None:
        """The step for the pending ``deltas`` and the kept pairs (the fitted one where the
        scores say the pairs can be moved to ``x`` well enough, else the Stein average's, as
        `PreconditionedZoVH`'s, with matrix products over the held rows); then the fit and
        the model learn from the pair ``weights``, and the model moves toward the fit where
        the scores say so."""
        fitted = self.fit is not None and not self.robust  # noise: the model alone
        step = None
        if deltas is not None:
            if fitted and self.scores.accurate:
                step = self._fitted_step(deltas, c)
            if step is None:
                step = self._newton_step(deltas, c)
        if weights is not None:
            if fitted:
                self._score_and_fit(weights, c)
            rows_kept = self.history > 1 and self.directions == "vectors"
            self.model.learn(weights, self._drawn, self._whitened, in_place=not rows_kept)
            if fitted and self.fit.ready and self.scores.adopt:
                self.model.move_toward(self.fit.hessian(), active().fit.ADOPT_RANGE)
        return step

    def _newton_step(self, deltas: Any, c: float) -> tuple[Any, float]:
        P, d = self.n_directions, self.space.dim
        M = P * (1 + len(self._kept))
        scale = c * (d + M + 1)
        step = self.space.from_host(deltas / scale) @ self._whitened
        move = self.model.transport() if self._kept else None
        for kept in self._kept:
            rows = self._kept_rows(kept)
            moved = move(rows, self.space.from_host(kept.deltas), self._x - kept.centre)
            step += (moved / scale) @ rows
        return step, M / (d + M + 1)

    def _score_and_fit(self, weights: Any, c: float) -> None:
        """Score the model's and the fit's predictions of the pending batch's curvature
        contrasts, then let the fit learn from them (a batch without curvature, a plateau,
        tells neither anything)."""
        P, fit = self.n_directions, self.fit
        norms = self._norms()
        model = c * (norms - norms.mean())  # w^T A w = c |u|^2, centred
        measured = 2.0 * (P - 1) * weights + model  # w^T H w, centred: 2 r / mu^2 + the model's
        observed = fit.contrasts(measured)
        size = float(observed @ observed)
        if not (math.isfinite(size) and size > 0):
            return
        directions = self.space.to_host(self._whitened)
        if not fit.ready:
            fit.start(c)
        equations = fit.equations(directions)
        errors = (observed - fit.contrasts(model), observed - equations @ fit.entries)
        self.scores.observe(*(float(e @ e) / size for e in errors))
        fit.learn(observed, equations, c)

    def _fitted_step(self, deltas: Any, c: float) -> tuple[Any, float] | None:
        r"""The model's Newton step :math:`W \hat g_z / c` for the weighted least-squares
        gradient :math:`\hat g_z` of the current pairs (rows :math:`u_m`) and the kept ones
        moved to ``x`` (rows :math:`W^{-1} w_m`); a kept value's error is about
        :math:`\epsilon\, c\, |W^{-1} w_m|\, |W^{-1} (x - x_b)|` (the relative error
        :math:`\epsilon` of the better curvature prediction, `FitScores.error`, times the move
        it was carried over, in units of the Newton step), the current ones' ``BASE_ERROR``
        of the largest value. ``None`` where the fit fails."""
        space, P = self.space, self.n_directions
        Wi = self.model.inverse_whitening
        rows, values, errors = [space.to_host(self._drawn)], [np.asarray(deltas)], [np.zeros(P)]
        move = self.model.transport() if self._kept else None
        for kept in self._kept:
            held = self._kept_rows(kept)
            displacement = self._x - kept.centre
            moved = move(held, space.from_host(kept.deltas), displacement)
            whitened = space.to_host(held @ Wi.T)
            distance = float(norm(Wi @ displacement, self.xp))
            rows.append(whitened)
            values.append(space.to_host(moved))
            size = self.scores.error * c * distance
            errors.append(size * np.sqrt(np.einsum("ij,ij->i", whitened, whitened)))
        values = np.concatenate(values)
        largest = float(np.abs(values[np.isfinite(values)]).max(initial=0.0))
        if not largest > 0:
            return None
        gradient = least_squares_gradient(
            np.concatenate(rows), values, np.concatenate(errors) + active().fit.BASE_ERROR * largest
        )
        if gradient is None:
            return None
        step = space.from_host(gradient) @ self.model.whitening.T
        step /= c
        return step, 1.0

    def _kept_rows(self, kept: KeptPairs) -> Any:
        """The points' directions of a kept iteration (drawn again with seeds storage)."""
        if kept.rows is not None:
            return kept.rows
        return self.model.whiten(self._draw_rows(kept.block, self.n_directions), kept.whitening)

    def _clear_pending(self) -> None:
        super()._clear_pending()
        self._drawn, self._whitened, self._sq_norms = None, None, None

    def state(self) -> dict[str, Any]:
        if self.fit is None:
            return super().state()
        return {**super().state(), "fit": self.fit.state(), "fit_scores": self.scores.state()}

    def load_state(self, state: dict[str, Any]) -> None:
        super().load_state(state)
        if self.fit is not None and "fit" in state:  # written before the fit: a fresh one
            self.fit.load_state(state["fit"])
            self.scores.load_state(state["fit_scores"])
        if self._rows is not None:  # a pending ask, its rows drawn again: its points again
            self._whiten(self._rows[1])

    def _new_model(self) -> FullCurvature:
        return FullCurvature(self.space, self.n_directions)

    def _hess_inv(self) -> Any:
        """The model's :math:`A^{-1}`, a ``(d, d)`` array in the user's namespace."""
        return self.space.to_user(self.model.inverse())

    def _model_array(self, host: Any) -> Any:
        """A checkpoint's ``W`` or ``W^{-1}`` (``(d, d)``)."""
        if host is None:
            return None
        d = self.space.dim
        if host.shape != (d, d):
            raise ValueError(f"expected shape ({d}, {d}), got {host.shape}")
        return self.space.from_numpy(host)
