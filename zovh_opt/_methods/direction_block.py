"""The ``P`` directions of one iteration of the diagonal curvature model, held or drawn again.

Row ``m`` of block ``b`` is a stream of its own (`zovh_opt._arrays.backend.RowStreams`), so the
model needs no ``(P, d)`` array: a point for ``fun`` draws its one direction, and the step's
passes draw the block again span of columns by span of columns into a scratch of ``P x w``
numbers. A held block (``directions="vectors"``) is drawn once and read span by span (in
place with NumPy, whose BLAS forms the same bits for a view as for the scratch; copied into
the scratch with other libraries), so every product sees the same numbers span by span and
the two storages give the same run, bit for bit. `weighted_sums` and `inner_products` are the two
passes the model's step makes over such blocks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .._arrays.backend import ArraySpace, DirectionSource, RowStreams


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
        return self.rows_from(m, 1)[0]

    @property
    def drawn_in_threads(self) -> bool:
        """Whether rows not held are drawn side by side in threads (`zovh_opt._arrays.threads`)."""
        held = self.rows is not None or self.layout != "rows"
        return not held and RowStreams.threaded(self._source, self._space)

    def rows_from(self, m: int, count: int, out: list[Any] | None = None) -> list[Any]:
        """``u_m .. u_{m + count - 1}`` (`row`'s), drawn side by side in threads where they
        are not held (`zovh_opt._arrays.threads`), into the ``(d,)`` arrays ``out`` where given."""
        if self.rows is not None:
            return [self.rows[i, ...] for i in range(m, m + count)]
        if self.layout == "block":
            block = self._draw_all()
            return [block[i, ...] for i in range(m, m + count)]
        if out is None:
            out = [self._space.empty((self._space.dim,)) for _ in range(count)]
        RowStreams(self._source, self.block, range(m, m + count), self._space).rows(out)
        return out

    def spans(self) -> Iterator[tuple[slice, Any]]:
        """``(columns, U)`` span after span: ``U`` the ``(n, w)`` rows of those columns, drawn
        into a scratch (use it before the next span), or the held rows' columns. Drawn rows
        are drawn a span ahead, into a second scratch, by the draws' threads
        (`zovh_opt._arrays.threads`) while the caller works on the span it has. NumPy's BLAS
        (OpenBLAS) forms a product of a view of held rows with the bits it forms for the
        same numbers in the scratch (tested), so NumPy reads held rows in place; other
        libraries copy them into the scratch first."""
        space, (n, d) = self._space, self.shape
        rows = self.rows if self.rows is not None or self.layout == "rows" else self._draw_all()
        width = RowStreams.span_width(self._source, space)
        starts = range(0, d, width)
        if rows is not None and space.numpy:
            for start in starts:
                columns = slice(start, min(start + width, d))
                yield columns, rows[:, columns]
            return
        if rows is not None:
            scratch = space.empty((n, min(width, d)))
            for start in starts:
                columns = slice(start, min(start + width, d))
                U = scratch[:, : columns.stop - start]
                U[...] = rows[:, columns]
                yield columns, U
            return
        streams = RowStreams(self._source, self.block, range(n), space)
        # a second scratch where threads draw and the spans are many (few: the scratch would be
        # a large part of d, and the first span, which nothing overlaps, a large part of the pass)
        ahead = len(starts) >= 8 and RowStreams.threaded(self._source, space)
        scratch = [space.empty((n, min(width, d))) for _ in range(2 if ahead else 1)]

        def begin(k: int) -> Any:
            U = scratch[k % len(scratch)][:, : min(width, d - starts[k])]
            return U, streams.start_fill(U)

        following = begin(0)
        for k, start in enumerate(starts):
            U, batch = following if following is not None else begin(k)
            batch.finish()
            following = begin(k + 1) if ahead and k + 1 < len(starts) else None
            yield slice(start, start + U.shape[1]), U

    def _draw_all(self, out: Any = None) -> Any:
        space, (n, d) = self._space, self.shape
        if self.layout == "block":
            return self._source.draw(self.block, n, space)
        out = space.empty((n, d)) if out is None else out
        RowStreams(self._source, self.block, range(n), space).rows([out[m, ...] for m in range(n)])
        return out


def weighted_sums(
    space: ArraySpace,
    blocks: Sequence[tuple[DirectionBlock, Any]],
    coefficients: Sequence[Any] | None,
    weights: Any,
    also: Callable[[slice, list[Any], Any, Any], None] | None = None,
) -> tuple[Any, Any]:
    r"""One pass over the spans of ``blocks``, pairs ``(rows U_b, whitening s_b or None)``:
    :math:`\sum_b s_b \circ (a_b U_b)` for the ``coefficients`` ``a_b`` (compute arrays;
    None: not formed) and :math:`w\, U_0^{\circ 2}` for the host ``weights`` ``w`` of the
    first block's rows (None: not formed). Returns the two ``(d,)`` arrays (or None).
    ``also(columns, U, step, error)``, where given, is called on each span with the blocks'
    rows and the two sums on those columns (or None), for more products of the same rows."""
    d = space.dim
    step = space.empty((d,)) if coefficients is not None else None
    error = space.empty((d,)) if weights is not None else None
    w = space.from_host(weights) if weights is not None else None
    for spans in zip(*(rows.spans() for rows, _ in blocks), strict=True):
        columns = spans[0][0]
        if step is not None:
            total = None
            for (_, s), (_, U), a in zip(blocks, spans, coefficients, strict=True):
                part = a @ U
                if s is not None:
                    part *= s[columns]
                if total is None:
                    total = part
                else:
                    total += part
            step[columns] = total
        if error is not None:
            U = spans[0][1]
            error[columns] = w @ (U * U)
        if also is not None:
            also(
                columns,
                [U for _, U in spans],
                None if step is None else step[columns],
                None if error is None else error[columns],
            )
    return step, error


def inner_products(
    blocks: Sequence[DirectionBlock], vectors: Callable[[slice], list[Any]]
) -> list[Any]:
    """``U_b v_b`` for each block, summed span by span, where ``vectors(columns)`` gives the
    ``v_b`` on those columns (compute arrays, ``(n,)`` each)."""
    sums: list[Any] = [None] * len(blocks)
    for spans in zip(*(rows.spans() for rows in blocks), strict=True):
        columns = spans[0][0]
        for j, (v, (_, U)) in enumerate(zip(vectors(columns), spans, strict=True)):
            part = U @ v
            if sums[j] is None:
                sums[j] = part
            else:
                sums[j] += part
    return sums
