"""The ``P`` directions of one iteration of the diagonal curvature model, held or drawn again.

Row ``m`` of block ``b`` is a stream of its own (`zovh_opt._backend.RowStreams`), so the
model needs no ``(P, d)`` array: a point for ``fun`` draws its one direction, and the step's
passes draw the block again span of columns by span of columns into a scratch of ``P x w``
numbers. A held block (``directions="vectors"``) is drawn once and copied span by span into
the same scratch, so every product sees the same numbers in the same layout and the two
storages give the same run, bit for bit.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ._backend import ArraySpace, DirectionSource, RowStreams


class DirectionBlock:
    """Directions ``u_0 .. u_{n-1}`` of block ``block`` (standard normal, unwhitened).

    Parameters
    ----------
    source : DirectionSource
        The run's source.
    block, n : int
        The block number and its number of rows.
    space : ArraySpace
        Where the rows live.
    held : bool
        Draw the rows now and keep them (``(n, d)``), or draw them again when used.
    rows : array, optional
        The held rows (a checkpoint's), instead of drawing them.
    layout : {"rows", "block"}
        ``"rows"``: a stream per row. ``"block"``: the layout of checkpoints written before
        0.6, one stream per span of all rows (`DirectionSource.draw`), drawn whole when used.
    out : array, optional
        An ``(n, d)`` array no longer used, to draw held rows into.
    """

    def __init__(
        self,
        source: DirectionSource,
        block: int,
        n: int,
        space: ArraySpace,
        *,
        held: bool,
        rows: Any = None,
        layout: str = "rows",
        out: Any = None,
    ) -> None:
        self.block, self.shape = int(block), (int(n), space.dim)
        self.layout = layout
        self._source, self._space = source, space
        self.rows = rows
        if held and rows is None:
            usable = out is not None and tuple(out.shape) == self.shape and layout == "rows"
            self.rows = self._draw_all(out if usable else None)

    @property
    def held(self) -> bool:
        """Whether the rows are held."""
        return self.rows is not None

    def row(self, m: int) -> Any:
        """``u_m``: a view of the held rows, or a new ``(d,)`` array drawn from its stream."""
        if self.rows is not None:
            return self.rows[m, ...]
        if self.layout == "block":
            return self._draw_all()[m, ...]
        out = self._space.empty((self._space.dim,))
        return RowStreams(self._source, self.block, range(m, m + 1), self._space).row(0, out)

    def spans(self) -> Iterator[tuple[slice, Any]]:
        """``(columns, U)`` span after span: ``U`` the ``(n, w)`` rows of those columns in a
        contiguous scratch (the same array each time: use it before the next span)."""
        space, (n, d) = self._space, self.shape
        rows = self.rows if self.rows is not None or self.layout == "rows" else self._draw_all()
        streams = None
        if rows is None:
            streams = RowStreams(self._source, self.block, range(n), space)
        width = RowStreams.span_width(self._source, space)
        scratch = space.empty((n, min(width, d)))
        for start in range(0, d, width):
            columns = slice(start, min(start + width, d))
            U = scratch[:, : columns.stop - start]
            if rows is None:
                streams.fill(U)
            else:
                U[...] = rows[:, columns]
            yield columns, U

    def _draw_all(self, out: Any = None) -> Any:
        space, (n, d) = self._space, self.shape
        if self.layout == "block":
            return self._source.draw(self.block, n, space)
        out = space.empty((n, d)) if out is None else out
        streams = RowStreams(self._source, self.block, range(n), space)
        for m in range(n):
            streams.row(m, out[m, ...])
        return out
