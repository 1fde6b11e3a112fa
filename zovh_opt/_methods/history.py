"""The query history of Algorithm 1: the last ``N`` iterations' directions, values and Gram matrix.

Each iteration draws its ``w`` directions as one block of the run's `DirectionSource`:
``"vectors"`` storage keeps the blocks in a preallocated ``(N w, d)`` ring, ``"seeds"`` keeps
block numbers and draws blocks again when needed; both give the same bits. The Gram matrix
and the values live on the host in float64 (``O(M^2)`` algebra); each iteration forms only
the new block's inner products. On the CPU the passes over the directions run span by span,
one BLAS call over all slots per span, and a step shares its pass with the next block
(`step_and_new_block`). The design and its timings: theory page, *The run's parts in
detail*, *The query history*; docs, *Performance*.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._arrays.backend import STREAM_COLUMNS, ArraySpace, DirectionSource

STORAGES = ("vectors", "seeds")


class QueryHistory:
    """FIFO of the queries of the last ``slots`` iterations (Algorithm 1, lines 5-6).

    Parameters
    ----------
    space : ArraySpace
        Where the directions live.
    source : DirectionSource
        The run's directions.
    slots : int
        ``N``, the number of iterations kept.
    width : int
        ``w``, the directions per iteration.
    storage : {"vectors", "seeds"}
        Keep the directions, or only their block numbers.
    track_gram : bool, optional
        Keep the Gram matrix up to date (ZoVH needs it; a gradient method does not, and skips
        the ``O(M w d)`` inner products).
    """

    def __init__(
        self,
        space: ArraySpace,
        source: DirectionSource,
        slots: int,
        width: int,
        storage: str,
        *,
        track_gram: bool = True,
    ) -> None:
        if storage not in STORAGES:
            raise ValueError(f"directions must be one of {STORAGES}, got {storage!r}")
        self.space, self.source = space, source
        self.slots, self.width, self.storage = slots, width, storage
        # zeros: the CPU passes read every slot's rows, the unused ones with coefficient 0
        self._ring = space.zeros((slots * width, space.dim)) if storage == "vectors" else None
        self._track_gram = track_gram
        self._gram = np.zeros((0, 0))  # in history order
        self._values = np.zeros(0)  # in history order
        self._blocks = [-1] * slots  # block number held by each physical slot
        self._order: list[int] = []  # physical slots in history order, oldest first
        self._pending: tuple[int, int, Any] | None = None  # slot, block, rows
        self._recent: tuple[int, Any] | None = None  # seeds: the newest block, until next ask
        # the pending block's products with every slot (physical order, host), when
        # `step_and_new_block` formed them in its pass: (block, products)
        self._cross: tuple[int, np.ndarray] | None = None
        # CPU passes span by span over the slots (else one product per block)
        self._by_span = source.draws_spans(space)
        d = space.dim
        self._spans = [slice(j, min(j + STREAM_COLUMNS, d)) for j in range(0, d, STREAM_COLUMNS)]
        self._ring_rows: dict[tuple[int, ...], np.ndarray] = {}  # see `_positions`

    def clear(self) -> None:
        """Forget every query (a restart)."""
        self._order, self._pending, self._recent, self._cross = [], None, None, None
        self._gram, self._values = np.zeros((0, 0)), np.zeros(0)

    def __len__(self) -> int:
        return len(self._order) * self.width

    @property
    def pending(self) -> bool:
        """True between `new_block` and `push` (or `discard`)."""
        return self._pending is not None

    @property
    def blocks(self) -> list[int]:
        """Block numbers of the kept iterations, oldest first."""
        return [self._blocks[s] for s in self._order]

    def new_block(self) -> Any:
        """The directions of the next iteration, ``(width, d)``: the same until `push` or
        `discard`."""
        if self._pending is not None:
            return self._pending[2]
        self._recent = None
        slot, block = self._next_slot(), self.source.next_block()
        self._pending = (slot, block, self._draw(block, slot))
        return self._pending[2]

    def _next_slot(self) -> int:
        """The physical slot of the next block: a free one, else the oldest block's (which
        leaves the history at push; its rows are not read again)."""
        if len(self._order) < self.slots:
            return next(s for s in range(self.slots) if s not in self._order)
        return self._order[0]

    @property
    def fuses_steps(self) -> bool:
        """Whether `step_and_new_block` forms a step and the next block in one pass (on the
        CPU); elsewhere it is `step` then `new_block`."""
        return self._by_span and self._track_gram

    def step(self, c: np.ndarray, scale: float, x: Any) -> Any:
        """``x + scale * sum_m c[m] u_m`` over the kept directions, as a new array."""
        step = self.combine(c)
        step *= scale
        step += x
        return step

    def step_and_new_block(self, c: np.ndarray, scale: float, x: Any) -> Any:
        """`step` ``(c, scale, x)``, then `new_block`, in one pass over the directions.

        On the CPU each span of the kept blocks' columns is read once for both the step and
        the next block's inner products (which `push` then uses), and the next block's span
        is drawn into its slot once the block it replaces has been read: one pass over the
        ring instead of three (draw, inner products, step). With ``"seeds"`` storage the kept
        blocks are drawn again once, span by span, and the next block goes into the rows of
        the newest one once they are read: ``N w`` directions drawn per iteration instead of
        ``(2 N - 1) w``. Same bits as `step`, `new_block` and `push` one after the other.
        """
        if self._pending is not None or not self.fuses_steps:
            x = self.step(c, scale, x)
            self.new_block()
            return x
        w, space = self.width, self.space
        slot, block = self._next_slot(), self.source.next_block()
        if self._ring is not None:
            rows = self._ring[slot * w : (slot + 1) * w]
        elif self._recent is not None:
            rows = self._recent[1]
        else:
            rows = space.empty((w, space.dim))
        coef = self._physical(c)
        scratch, total = self._scratch(), None
        stepped = space.empty((space.dim,))
        for span in self._spans:
            columns = self._slot_columns(span, scratch)  # the kept blocks, as `combine` sees
            out = stepped[span]
            np.matmul(coef, columns, out=out)
            out *= scale
            out += x[span]
            new = rows[:, span]  # seeds: the newest block's columns are in `columns` now
            self.source.fill_columns(block, new, span.start)
            if scratch is not None:  # vectors: `columns` is a view of the ring, `new` of it too
                columns[slot * w : (slot + 1) * w] = new  # as `push` sees the slots
            part = new @ columns.T
            if total is None:
                total = part
            else:
                total += part
        self._recent = None
        self._pending = (slot, block, rows)
        self._cross = (block, space.to_host(total))
        return stepped

    def _draw(self, block: int, slot: int) -> Any:
        w, space = self.width, self.space
        if self._ring is None:
            return self.source.draw(block, w, space)
        view = self._ring[slot * w : (slot + 1) * w, ...]
        rows = self.source.draw(block, w, space, out=view)
        if rows is not view:
            view[...] = rows
        return view

    def discard(self) -> None:
        """Drop the pending block (its values are missing). When it was drawn over the oldest
        block, that block leaves the history now, in both storages."""
        if self._pending is None:
            return
        slot = self._pending[0]
        self._pending, self._cross = None, None
        if self._order and self._order[0] == slot:
            self._drop_oldest()

    def _drop_oldest(self) -> None:
        w = self.width
        self._order.pop(0)
        self._values = self._values[w:]
        self._gram = self._gram[w:, w:]

    def push(self, values: np.ndarray) -> None:
        """Add the pending block with its function values (host floats, ``(width,)``)."""
        slot, block, rows = self._pending
        if len(self._order) == self.slots:
            self._drop_oldest()
        if self._track_gram:
            cross = self._inner_products(slot, block, rows)  # (w, M + w) host, history order
            M, w = self._gram.shape[0], self.width
            gram = np.empty((M + w, M + w))
            gram[:M, :M] = self._gram
            gram[M:, :] = cross
            gram[:M, M:] = cross[:, :M].T
            self._gram = gram
        self._values = np.concatenate([self._values, values])
        self._order.append(slot)
        self._blocks[slot] = block
        self._pending = None
        if self._ring is None:
            self._recent = (slot, rows)

    def _inner_products(self, slot: int, block: int, rows: Any) -> np.ndarray:
        """``rows @ r.T`` for the kept blocks ``r`` in history order, then ``rows @ rows.T``,
        on the host: the new block's row and column of the Gram matrix."""
        if not self._by_span:  # one product per block, one device-to-host copy
            pieces = [rows @ self.rows(s).T for s in self._order] + [rows @ rows.T]
            return self.space.to_host(self.space.xp.concat(pieces, axis=1))
        if self._cross is not None and self._cross[0] == block:
            total = self._cross[1]  # formed by `step_and_new_block`
        else:
            total, scratch = None, self._scratch()
            for span in self._spans:
                part = rows[:, span] @ self._slot_columns(span, scratch).T
                if total is None:
                    total = part
                else:
                    total += part
            total = self.space.to_host(total)
        self._cross = None
        return total[:, self._positions([*self._order, slot])]

    def _positions(self, slots: list[int]) -> np.ndarray:
        """Rows of the ring (physical order) of ``slots``' directions, in the order given."""
        key = tuple(slots)
        rows = self._ring_rows.get(key)
        if rows is None:  # a run meets about N orders (rotations of the ring), more on discards
            if len(self._ring_rows) > 4 * self.slots:
                self._ring_rows.clear()
            w = self.width
            rows = self._ring_rows[key] = np.array([s * w + k for s in slots for k in range(w)])
        return rows

    def _scratch(self) -> Any:
        """With ``"seeds"`` storage, room for one span of every slot; else None."""
        if self._ring is not None and not self._pending_overwrote_a_kept_block():
            return None
        return self.space.empty((self.slots * self.width, min(STREAM_COLUMNS, self.space.dim)))

    def _pending_overwrote_a_kept_block(self) -> bool:
        return self._pending is not None and self._pending[0] in self._order

    def _slot_columns(self, span: slice, scratch: Any) -> Any:
        """Columns ``span`` of every slot's directions, ``(slots * width, span)`` in physical
        order (NumPy): the kept blocks and the pending one as they are; slots holding neither
        are 0 with ``"seeds"`` and old directions with ``"vectors"`` (read only with
        coefficient 0).

        With ``"vectors"`` this is a view of the ring, unless the pending block was drawn over
        a block still kept (between an ask and its tell), which is then drawn again.
        """
        if scratch is None:
            return self._ring[:, span]
        w, columns = self.width, span.stop - span.start
        out = scratch[:, :columns]
        pending_slot, pending_rows = (
            (None, None) if self._pending is None else (self._pending[0], self._pending[2])
        )
        for s in range(self.slots):
            rows = out[s * w : (s + 1) * w]
            if s in self._order:
                held = self._held(s)
                if held is None:
                    self.source.fill_columns(self._blocks[s], rows, span.start)
                else:
                    rows[...] = held[:, span]
            elif s == pending_slot:
                rows[...] = pending_rows[:, span]
            else:
                rows[...] = 0
        return out

    def state(self) -> dict[str, Any]:
        """The history as plain data and arrays (for a checkpoint); see `load_state`."""
        return {
            "ring": self._ring,
            "gram": self._gram,
            "values": self._values,
            "blocks": list(self._blocks),
            "order": list(self._order),
            "pending": None if self._pending is None else list(self._pending[:2]),
        }

    def load_state(self, state: dict[str, Any]) -> None:
        """Continue from a `state` of a history with the same shape and source."""
        order = [int(s) for s in state["order"]]
        blocks = [int(b) for b in state["blocks"]]
        M = len(order) * self.width
        gram, values = state["gram"], state["values"]
        if (
            len(blocks) != self.slots
            or len(set(order)) != len(order)
            or not set(order) <= set(range(self.slots))
            or values.shape != (M,)
            or gram.shape != ((M, M) if self._track_gram else (0, 0))
            or gram.dtype != np.float64
            or values.dtype != np.float64
        ):
            raise ValueError("the query history's blocks, Gram matrix and values disagree")
        if self._ring is not None:
            if state["ring"] is None or state["ring"].shape != self._ring.shape:
                raise ValueError(f"expected a ring buffer of shape {self._ring.shape}")
            self._ring = self.space.from_numpy(state["ring"])
        self._gram, self._values, self._blocks, self._order = gram, values, blocks, order
        self._recent, self._pending, self._cross = None, None, None
        if state["pending"] is not None:
            slot, block = (int(v) for v in state["pending"])
            if slot not in range(self.slots):
                raise ValueError(f"pending slot {slot} out of range")
            if self._ring is None:
                rows = self.source.draw(block, self.width, self.space)
            else:  # the ring already holds the block's rows
                rows = self._ring[slot * self.width : (slot + 1) * self.width, ...]
            self._pending = (slot, block, rows)

    def rows(self, slot: int) -> Any:
        """The ``(width, d)`` directions of the block kept in physical ``slot``."""
        held = self._held(slot)
        if held is None:
            return self.source.draw(self._blocks[slot], self.width, self.space)
        return held

    def _held(self, slot: int) -> Any:
        """The directions of the block kept in ``slot`` where they are in memory (the newest
        block with ``"seeds"``, the ring with ``"vectors"`` unless the pending block was drawn
        over them), else None: they are to be drawn again."""
        if self._recent is not None and self._recent[0] == slot:
            return self._recent[1]
        if self._ring is None or (self._pending is not None and self._pending[0] == slot):
            return None
        w = self.width
        return self._ring[slot * w : (slot + 1) * w, ...]

    def gram(self) -> np.ndarray:
        """``U U^T`` of the kept directions in history order, ``(M, M)`` host float64."""
        return self._gram

    def values(self) -> np.ndarray:
        """The kept function values in history order, ``(M,)`` host float64."""
        return self._values

    def combine(self, c: np.ndarray) -> Any:
        """``sum_m c[m] u_m`` over the kept directions (``c`` on the host, history order).

        On the CPU each span of `STREAM_COLUMNS` columns of the sum is one product of the
        coefficients with that span of every slot, formed in cache with no full-size
        temporary, the same for both storages.
        """
        if not self._by_span:
            coef, w, total = self.space.from_host(c), self.width, None
            for j, slot in enumerate(self._order):
                part = coef[j * w : (j + 1) * w] @ self.rows(slot)
                if total is None:
                    total = part
                else:
                    total += part
            return total
        coef = self._physical(c)
        total, scratch = self.space.empty((self.space.dim,)), self._scratch()
        for span in self._spans:
            np.matmul(coef, self._slot_columns(span, scratch), out=total[span])
        return total

    def _physical(self, c: np.ndarray) -> Any:
        """Coefficients ``c`` in history order placed at their slots' rows (0 elsewhere)."""
        physical = np.zeros(self.slots * self.width)
        physical[self._positions(self._order)] = c
        return self.space.from_host(physical)

    def snapshot(self, positions: slice = slice(None)) -> BlockRows:
        """The kept directions as immutable `BlockRows` (drawn again on use), keeping only the
        rows at ``positions`` within each block."""
        return BlockRows(self.source, self.blocks, self.width, self.space, positions)


class BlockRows:
    """Directions given by block numbers of a run, drawn again whenever they are used.

    Implements the row protocol of `zovh_opt.estimators.InverseHessianOperator` in the user's
    namespace: ``dim``, ``len``, ``dot(v)``, ``combine(c)`` and ``stacked()``. It keeps
    ``O(M)`` numbers, so an operator built on it stays valid while the run goes on.
    """

    def __init__(
        self,
        source: DirectionSource,
        blocks: list[int],
        width: int,
        space: ArraySpace,
        positions: slice = slice(None),
    ) -> None:
        self._source = source.copy()
        self._blocks, self._width, self._space = list(blocks), width, space
        self._positions = positions
        self.dim = space.dim
        self._per_block = len(range(width)[positions])

    def __len__(self) -> int:
        return len(self._blocks) * self._per_block

    def _block(self, block: int) -> Any:
        rows = self._source.draw(block, self._width, self._space)
        return self._space.to_user(rows[self._positions, ...])

    def dot(self, v: Any) -> Any:
        xp = self._space.user
        return xp.concat([self._block(b) @ v for b in self._blocks])

    def combine(self, c: Any) -> Any:
        n, total = self._per_block, None
        for j, b in enumerate(self._blocks):
            part = c[j * n : (j + 1) * n] @ self._block(b)
            total = part if total is None else total + part
        return total

    def stacked(self) -> Any:
        return self._space.user.concat([self._block(b) for b in self._blocks], axis=0)
