"""ZoVH with a full curvature model accumulated across iterations (``curvature="full"``)."""

from __future__ import annotations

from typing import Any

from .._backend import norm
from .._full_curvature import FullCurvature
from .curvature_model import CurvatureModelZoVH, KeptPairs


class FullCurvatureZoVH(CurvatureModelZoVH, curvature="full"):
    r"""ZoVH whose curvature is a full (``d x d``) model learned across iterations.

    The iteration of `PreconditionedZoVH` (their shared part: `CurvatureModelZoVH`) with the
    model :math:`A = c W^{-T} W^{-1}` of `zovh_opt._full_curvature` in place of the diagonal
    one: the pairs are
    :math:`f(x \pm \mu W u_m)`, the step is the model's Newton step
    :math:`\frac{M}{c (d + M + 1)} W \hat g_z \approx \frac{M}{d + M + 1} A^{-1} \nabla f`,
    kept pairs are moved to the current point with :math:`A`, and the model learns from the
    outer products :math:`u_m u_m^T` where the diagonal one takes :math:`u_m^2`, with a
    multiplicative update that keeps it positive definite. ``hess_inv`` is
    :math:`A^{-1}`, a ``(d, d)`` array.

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
    ) -> tuple[Any, int] | None:
        """The Newton step (``M`` pairs) as `PreconditionedZoVH`'s, with matrix products over
        the held rows, then the model's update from the pair ``weights``."""
        step = None if deltas is None else self._newton_step(deltas, c)
        if weights is not None:
            rows_kept = self.history > 1 and self.directions == "vectors"
            self.model.learn(weights, self._drawn, self._whitened, in_place=not rows_kept)
        return step

    def _newton_step(self, deltas: Any, c: float) -> tuple[Any, int]:
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
        super()._clear_pending()
        self._drawn, self._whitened, self._sq_norms = None, None, None

    def load_state(self, state: dict[str, Any]) -> None:
        super().load_state(state)
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
