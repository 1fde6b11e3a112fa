"""ZoVH with a curvature model accumulated across iterations (``curvature="diagonal"``, the
default of ``method="zovh"``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._arrays import threads as _threads
from .._curvature.carried_transport import CarriedTransport
from .._curvature.diagonal import DiagonalCurvature, DiagonalOperator
from ..tuning import active
from .curvature_model import CurvatureModelZoVH, KeptPairs, default_pairs
from .direction_block import DirectionBlock, inner_products, weighted_sums

__all__ = ["PreconditionedZoVH", "default_pairs"]

# directions="auto" holds no direction where the held ones would take more than this many
# bytes: (N P + 14) d floats at the peak (d = 1.3e6 in float64 at the default P and N). Drawing
# them again costs 1.8x the held iteration's own time per evaluation at d = 1e6 on one thread
# (the docs' performance page), where the held peak is 0.8 GB.
STREAM_ABOVE_BYTES = 2**30


class PreconditionedZoVH(CurvatureModelZoVH, curvature="diagonal"):
    r"""ZoVH whose curvature is a diagonal model learned across iterations (the default).

    With the model :math:`h \approx \operatorname{diag}(\nabla^2 f)` and the whitening
    :math:`s = (c / h)^{1/2}`, :math:`c = \operatorname{geomean}(h)`
    (`zovh_opt._curvature.diagonal`), each iteration

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
    (``l = |x0|``, as the step rule's first step), or 100 times that where ``f(x0)`` is
    known (`value_at_centre`, which `zovh_opt.minimize` calls after measuring ``x0``) and
    the first pairs measure no curvature (`CurvatureModelZoVH._flat`); so ``f -> a f``
    leaves the iterates as they were. The step rule judges a trial by the batch mean less
    the model's smoothing bias :math:`\frac{\mu^2}{2} c \overline{\|u\|^2}`.

    The directions are rows of their own random streams (`zovh_opt._methods.direction_block`): a
    point draws its one direction, and the step's two passes (the kept pairs' inner products
    for the move to ``x``; the step and the model's update) run span of columns by span of
    columns over the ``N P`` rows. Costs per iteration: the ``2 P`` points, the norms, and
    the passes over ``N P`` rows, ``O(N P d)``. Memory with ``directions="vectors"``: the
    ``N P`` directions (the pending block and the kept iterations'), about ``(N P + 14) d``
    floats at the peak; with ``"seeds"`` (``"auto"`` where those would exceed 1 GiB) none
    of them: a pair's points draw their direction (once, asked in order: the pairs are
    adjacent) and the step's pass draws the ``N P`` rows again, ``(N + 1) P`` rows of ``d``
    numbers per iteration where the held path draws ``P`` (the kept rows' transport is
    formed a step ahead, in that pass: `zovh_opt._curvature.carried_transport`; after an undone
    trial, in a pass of its own); the model, the iterate, the step and the kept centres and
    whitenings are about 16 ``d`` floats at the peak. Rows are drawn in threads where the
    process has cores (`zovh_opt._arrays.threads`). The run is the same, bit for bit.
    ``history=1`` is the iteration without reuse.

    ``jac`` is the latest gradient estimate :math:`\hat g_z / s`, ``hess_inv`` the model's
    :math:`\operatorname{diag}(1/h)` as a `DiagonalOperator`.
    """

    model_kind = "diagonal"
    iteration = "diagonal curvature model (curvature='diagonal')"

    def __init__(self, x0: Any, *, rng: Any = None, **options: Any) -> None:
        super().__init__(x0, rng=rng, **options)
        self._row_layout = "rows"  # checkpoints written before 0.6: "block"
        self._spare = None  # held rows no longer used, to draw the next block into
        self._last_row = None  # (m, mu s u_m) of the latest pair asked for
        self._ahead = None  # (m, u_m) drawn ahead of its pair's points (`_pending_row`)
        self._row_buffers = None  # where `_pending_row` draws rows that are not held (an ask)
        self._carried: CarriedTransport | None = None  # the next transport, formed ahead

    @classmethod
    def storage_for(cls, dim: int, pairs: int, history: int, space: Any) -> str:
        """``directions="auto"``: ``"seeds"`` (no direction held) where the held directions'
        peak, ``(N P + 14) d`` floats, would exceed `STREAM_ABOVE_BYTES`, or a quarter of the
        GPU's free memory where the array library reports it; else ``"vectors"``."""
        itemsize = 4 if space.dtype_name == "float32" else 8
        held = (history * pairs + 14) * dim * itemsize
        free = space.free_memory()
        limit = STREAM_ABOVE_BYTES if free is None else min(STREAM_ABOVE_BYTES, free // 4)
        return "seeds" if held > limit else "vectors"

    def _prepare(self) -> None:
        self._rows = (block := self.source.next_block(), self._draw_rows(block, self.n_directions))
        self._host_norms, self._last_row = np.full(self.n_directions, math.nan), None
        self._ahead = None

    def _draw_rows(self, block: int, n: int) -> DirectionBlock:
        """Block ``block``'s ``n`` rows, held or not (`DirectionBlock`); held, they are drawn
        into the rows of the latest kept iteration that was let go (fresh memory of this size
        costs a page fault per 4 KiB at its first write; the CHANGELOG has the timing)."""
        held = self.directions == "vectors" or self._row_layout == "block"
        spare, self._spare = self._spare, None
        return DirectionBlock(
            self.source, block, n, self.space, held=held, layout=self._row_layout, out=spare
        )

    def pair_split(self, rows: Any) -> tuple[Any, Any]:
        """The ``x + mu s u_m`` and the ``x - mu s u_m`` rows (or values) of a pending ask's
        ``2 P`` points: pairs are adjacent, ``+`` first."""
        return rows[0::2], rows[1::2]

    def pending_point(self, i: int) -> Any:
        """Point ``i`` of the pending ask: ``x + mu s u_m`` for ``i = 2 m``, ``x - mu s u_m``
        for ``i = 2 m + 1``; ``u_m`` drawn from its stream unless held (drawn once for a pair
        asked for in order)."""
        if not self._asked:
            raise RuntimeError("there is no pending ask")
        m = i // 2
        if self._last_row is None or self._last_row[0] != m:
            self._last_row = (m, self._scaled_row(m))
        w = self._last_row[1]
        point = self._x + w if i % 2 == 0 else self._x - w
        return self.space.to_user(point)

    def _scaled_row(self, m: int) -> Any:
        """``mu s u_m`` (and ``|u_m|^2`` into the pending norms)."""
        u, own = self._pending_row(m)
        if math.isnan(self._host_norms[m]):
            self._host_norms[m] = float(self.xp.vecdot(u, u))
        s = self.model.whitening
        if s is None:
            return u * self.smoothing
        if own:  # a buffer of the method's: scaled in place
            u *= s
            w = u
        else:
            w = u * s
        w *= self.smoothing
        return w

    def _pending_row(self, m: int) -> tuple[Any, bool]:
        """``u_m`` of the pending ask for its points, and whether it is the method's to
        overwrite: a view of held rows; else drawn into one of two buffers (fresh memory of
        this size costs a page fault per 4 KiB), and where threads draw
        (`zovh_opt._arrays.threads`) two at a time, ``u_m`` and ``u_{m+1}`` side by side, the second
        kept for the next pair."""
        rows, ahead, self._ahead = self._rows[1], self._ahead, None
        if rows.held:
            return rows.row(m), False
        if ahead is not None and ahead[0] == m:
            return ahead[1], True
        count = 1
        if m + 1 < self.n_directions and rows.drawn_in_threads:
            count = len(_threads.groups(2, self.space.dim))
        if self._row_buffers is None:
            self._row_buffers = []
        while len(self._row_buffers) < count:
            self._row_buffers.append(self.space.empty((self.space.dim,)))
        self._last_row = None  # its buffer is drawn into
        drawn = rows.rows_from(m, count, out=self._row_buffers[:count])
        if count == 2:
            self._ahead = (m + 1, drawn[1])
        return drawn[0], True

    def pending_points(self) -> Any:
        """The points of the pending ask, as a ``(2 P, d)`` array (`pending_point`'s rows)."""
        points = self.space.empty((self.points_per_iteration, self.space.dim))
        for i in range(self.points_per_iteration):
            points[i, ...] = self.space.to_compute(self.pending_point(i))
        return self.space.to_user(points)

    def _norms(self) -> np.ndarray:
        """``|u_m|^2`` of the pending ask on the host (rows not drawn yet drawn for it)."""
        for m in np.flatnonzero(np.isnan(self._host_norms)).tolist():
            u = self._rows[1].row(m)
            self._host_norms[m] = float(self.xp.vecdot(u, u))
        return self._host_norms

    def _combination_norm(self, coefficients: np.ndarray) -> float:
        """``|sum_m a_m u_m|`` over the pending rows (the model has no shape yet: ``s = 1``)."""
        a, total = self.space.from_host(coefficients), 0.0
        for _, U in self._rows[1].spans():
            part = a @ U
            total += float(self.xp.vecdot(part, part))
        return math.sqrt(total)

    def _let_go(self, rows: DirectionBlock | None) -> None:
        """Rows no longer used: held, the next block is drawn into them."""
        if rows is not None and rows.held and rows.layout == "rows":
            self._spare = rows.rows

    def _keep(self, deltas: np.ndarray) -> KeptPairs:
        """The pending pairs as an earlier iteration's for the next steps (before `learn`)."""
        block, rows = self._rows
        held = rows if self.directions == "vectors" else None
        return KeptPairs(block, self.model.whitening, deltas, self._x, held)

    def _step_and_learn(
        self, deltas: np.ndarray | None, c: float, weights: np.ndarray | None, *, keep: bool
    ) -> tuple[Any, float] | None:
        r"""The step of item 2 (class docstring) for the pending pairs' ``deltas`` and its
        shrink ``M / (d + M + 1)`` (None without ``deltas``); and the model's update from the pair
        ``weights`` (none without), in one pass over the rows, span by span:
        :math:`p = \frac{1}{c (d + M + 1)} \sum_b s_b \circ \sum_m \delta'_{bm} u_{bm}`
        and :math:`e = \sum_m w_m u_m^2`; in the same pass, the next iteration's transport
        of the rows it will keep (``keep``: the pending ones too), `CarriedTransport`."""
        P, d = self.n_directions, self.space.dim
        blocks, coefficients, M = [], [], P * (1 + len(self._kept))
        s = self.model.whitening
        carried = []  # (position in blocks, block, s_b, x_b)
        if deltas is not None:
            scale = c * (d + M + 1)
            blocks.append((self._rows[1], s))
            coefficients.append(self.space.from_host(deltas / scale))
            moved = self._moved_differences()
            for j, (kept, delta) in enumerate(zip(self._kept, moved, strict=True)):
                blocks.append((self._kept_block(kept), kept.whitening))
                coefficients.append(self.space.from_host(delta / scale))
                if keep and j < self.history - 2:
                    carried.append((j + 1, kept.block, kept.whitening, kept.centre))
        previous, self._carried = self._carried, None
        learn = weights is not None
        if not blocks and not learn:
            return None
        if not blocks:
            blocks.append((self._rows[1], None))
        if keep:  # the pending pairs, measured at x
            carried.insert(0, (0, self._rows[0], s, self._x))
        start = self._x if deltas is not None else self._centre  # x_{t+1} before the step
        products = {b: [None, None] for _, b, _, _ in carried}
        also = self._transport_products(carried, products, start, c, learn)
        step, error = weighted_sums(
            self.space,
            blocks,
            coefficients if deltas is not None else None,
            weights,
            also if carried else None,
        )
        factor = self.model.update(error) if learn else 1.0
        if carried:
            host = {}
            for b, (A, B) in products.items():
                A = np.zeros(P) if A is None else self.space.to_host(A)
                host[b] = (A, None if B is None else self.space.to_host(B))
            self._carried = CarriedTransport(start, host)
            self._carried.factor = math.nan if factor is None else factor
            if deltas is None and previous is not None and self._row_layout == "rows":
                # an undone trial, back to the centre (checkpoints written before 0.6 go on
                # as they were written: the transport from the rows)
                kept = [k.block for k in self._kept[: self.history - 2]]
                self._carried.adopt(previous, kept)
        return None if step is None else (step, M / (d + M + 1))

    def _transport_products(
        self, carried: list, products: dict, start: Any, c: float, learn: bool
    ) -> Any:
        r"""The span-wise part of `weighted_sums` that forms `CarriedTransport`'s
        :math:`A_b = U_b (s_b\, h\, e^{\beta\rho} (a - x_b))` and
        :math:`B_b = U_b (s_b\, h\, e^{\beta\rho} p)` into ``products``, ``h = c / s^2``
        the model before its update, ``rho = clip(e / c, -1, 1)`` (no factor without
        ``learn``)."""
        s, xp = self.model.whitening, self.xp

        def also(columns: slice, rows: list, step: Any, error: Any) -> None:
            g = c / (s[columns] * s[columns])
            if learn:
                rho = xp.clip(error / c, -1.0, 1.0)
                rho *= active().curvature.DIAGONAL_SHAPE_RATE
                g *= xp.exp(rho)
            for position, block, s_b, centre in carried:
                U, sums = rows[position], products[block]
                w = g if s_b is None else g * s_b[columns]
                parts = []
                if centre is not start:  # else A_b = 0
                    v = start[columns] - centre[columns]
                    v *= w
                    parts.append((0, U @ v))
                if step is not None:
                    parts.append((1, U @ (step * w)))
                for k, part in parts:
                    sums[k] = part if sums[k] is None else sums[k] + part

        return also

    def _moved_differences(self) -> list[np.ndarray]:
        r"""The kept iterations' central differences moved to ``x`` with the model
        (`zovh_opt.estimators.transported_differences`):
        :math:`\delta_{bm} + u_{bm}^T (s_b \circ h \circ (x - x_b))`, ``h = c / s^2``: from
        the products the last step's pass formed (`CarriedTransport`), or one pass over the
        kept rows without them, span by span (host float64)."""
        out: list[Any] = [None] * len(self._kept)
        for i, kept in enumerate(self._kept):
            moved = None if self._carried is None else self._carried.deltas(kept.block, self._x)
            if moved is not None:
                out[i] = kept.deltas + moved
        missing = [i for i, o in enumerate(out) if o is None]
        if not missing:
            return out
        s, c, x = self.model.whitening, self.model.curvature, self._x
        kept = [self._kept[i] for i in missing]

        def moves(columns: slice) -> list[Any]:  # s_b h (x - x_b) on these columns
            h = c / (s[columns] * s[columns]) if s is not None else c
            out = []
            for k in kept:
                v = x[columns] - k.centre[columns]
                v *= h
                if k.whitening is not None:
                    v *= k.whitening[columns]
                out.append(v)
            return out

        sums = inner_products([self._kept_block(k) for k in kept], moves)
        for i, k, a in zip(missing, kept, sums, strict=True):
            out[i] = k.deltas + self.space.to_host(a)
        return out

    def _move(self, learning_rate: float) -> None:
        before = self._x
        super()._move(learning_rate)
        if self._carried is not None and self._x is not before:
            self._carried.moved(before, self._x, learning_rate)

    def _kept_block(self, kept: KeptPairs) -> DirectionBlock:
        """The rows of a kept iteration: held, or drawn again from their streams."""
        if kept.rows is not None:
            return kept.rows
        return DirectionBlock(
            self.source,
            kept.block,
            self.n_directions,
            self.space,
            held=False,
            layout=self._row_layout,
        )

    def _clear_pending(self) -> None:
        super()._clear_pending()
        self._last_row = self._ahead = self._row_buffers = None

    def _new_model(self) -> DiagonalCurvature:
        return DiagonalCurvature(self.space)

    def _hess_inv(self) -> DiagonalOperator:
        """The model's ``diag(1 / h)`` in the user's namespace."""
        return DiagonalOperator(self.space.to_user(self.model.inverse_diagonal()))

    def _model_array(self, host: Any) -> Any:
        """A checkpoint's ``s`` (``(d,)``, the model's `snapshot` and kept whitenings)."""
        return self.vector(host)

    def _discard_all(self) -> None:
        super()._discard_all()
        self._carried = None

    def state(self) -> dict[str, Any]:
        carried = self._carried
        return {
            **super().state(),
            "row_layout": self._row_layout,
            "pending_norms": self._host_norms,
            "carried": None if carried is None else carried.state(self._x, self._centre),
        }

    def _kept_rows_state(self, kept: KeptPairs) -> Any:
        return None if kept.rows is None else kept.rows.rows

    def load_state(self, state: dict[str, Any]) -> None:
        # before 0.6 the directions were drawn a block at a time, and kept rows were whitened
        self._row_layout = state.get("row_layout", "block")
        super().load_state(state)
        self._carried = CarriedTransport.from_state(state.get("carried"), self._x, self._centre)
        if self._rows is not None:
            norms, P = state.get("pending_norms"), self.n_directions
            self._host_norms = np.full(P, math.nan) if norms is None else np.array(norms, float)

    def _loaded_rows(self, block: int, rows: Any, whitening: Any) -> Any:
        """A checkpoint's held rows of a kept iteration (whitened before 0.6: unwhitened)."""
        if rows is None:
            return None
        if self._row_layout == "block" and whitening is not None:
            rows = rows / whitening
        return DirectionBlock(
            self.source,
            block,
            self.n_directions,
            self.space,
            held=True,
            rows=rows,
            layout=self._row_layout,
        )
