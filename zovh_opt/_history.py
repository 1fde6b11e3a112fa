"""The query history of Algorithm 1: the last ``N`` iterations' directions and values.

Directions are kept either as vectors or as their integer seeds (regenerated when needed); both
storages run the same arithmetic on the same bits, so they give bit-identical results. The
history also keeps the Gram matrix ``G = U U^T`` of its rows up to date: each iteration only the
inner products of the new rows with the kept ones are computed, one pass over the history, and
everything else the estimators need (``u_m . s``, ``|u_m|^2``, the Woodbury system) is read
from ``G`` in ``O(M^2)``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

from ._backend import gaussian_direction, namespace_of

STORAGES = ("vectors", "seeds")


class DirectionRows:
    """An ordered, immutable list of Gaussian directions, each kept or regenerated from its seed.

    Implements the row protocol of `zovh_opt.estimators.InverseHessianOperator`.

    Parameters
    ----------
    seeds : sequence of int
        One seed per direction.
    vectors : sequence of arrays or None
        The directions themselves, or ``None`` to regenerate each from its seed when needed.
    like : array
        An array with the namespace, dtype, device and length ``d`` of the directions.
    native : {None, "torch", "cupy"}
        Passed to `gaussian_direction`.
    """

    def __init__(
        self, seeds: Sequence[int], vectors: Sequence[Any] | None, like: Any, native: str | None
    ) -> None:
        self.seeds = tuple(seeds)
        self.vectors = None if vectors is None else tuple(vectors)
        self._like = like
        self._native = native
        self.dim = like.shape[0]

    def __len__(self) -> int:
        return len(self.seeds)

    def row(self, m: int) -> Any:
        if self.vectors is not None:
            return self.vectors[m]
        return gaussian_direction(self.seeds[m], self._like, self._native)

    def __iter__(self) -> Iterator[Any]:
        return (self.row(m) for m in range(len(self)))

    def __add__(self, other: DirectionRows) -> DirectionRows:
        if (self.vectors is None) != (other.vectors is None):
            raise ValueError("cannot join stored and regenerated directions")
        vectors = None if self.vectors is None else self.vectors + other.vectors
        return DirectionRows(self.seeds + other.seeds, vectors, self._like, self._native)

    def select(self, index: Sequence[int]) -> DirectionRows:
        """The rows at positions ``index``, in that order."""
        vectors = None if self.vectors is None else [self.vectors[i] for i in index]
        return DirectionRows([self.seeds[i] for i in index], vectors, self._like, self._native)

    def dot(self, v: Any) -> Any:
        """The ``M`` inner products ``u_m . v``."""
        xp = namespace_of(v)
        return xp.stack([u @ v for u in self])

    def combine(self, c: Any) -> Any:
        """Return ``sum_m c[m] * u_m``, accumulated in row order with one work vector."""
        total = None
        for m, u in enumerate(self):
            if total is None:
                total = c[m] * u
            else:
                total += c[m] * u
        return total

    def combine_squares(self, c: Any) -> Any:
        """Return ``sum_m c[m] * u_m**2`` (elementwise squares)."""
        total = None
        for m, u in enumerate(self):
            if total is None:
                total = c[m] * (u * u)
            else:
                total += c[m] * (u * u)
        return total

    def stacked(self) -> Any:
        """The directions as one ``(M, d)`` array (``M d`` memory)."""
        return namespace_of(self._like).stack(list(self))


def extend_gram(gram: Any, kept: DirectionRows, new: DirectionRows) -> Any:
    """Gram matrix of ``kept + new`` from the Gram matrix ``gram`` of ``kept``.

    Reads every kept row once (regenerating it if it is stored as a seed) and holds the new rows
    meanwhile: ``len(new) * len(kept)`` inner products, plus those among the new rows.
    """
    xp = namespace_of(new._like)
    new_rows = list(new)
    K = len(new_rows)
    cross = [[None] * len(kept) for _ in range(K)]
    for m, u in enumerate(kept):
        for k in range(K):
            cross[k][m] = new_rows[k] @ u
    inner = [[None] * K for _ in range(K)]
    for k in range(K):
        for j in range(k, K):
            inner[k][j] = inner[j][k] = new_rows[k] @ new_rows[j]
    bottom = xp.stack([xp.stack(cross[k] + inner[k]) for k in range(K)])
    if gram is None or len(kept) == 0:
        return bottom
    return xp.concat([xp.concat([gram, bottom[:, : len(kept)].T], axis=1), bottom], axis=0)


class QueryHistory:
    """FIFO of the queries of the last ``slots`` iterations (Algorithm 1, lines 5-6).

    Parameters
    ----------
    like : array
        The iterate ``x``; directions take its namespace, dtype, device and length.
    slots : int
        ``N``, the number of iterations kept.
    storage : {"vectors", "seeds"}
        Keep the directions, or only their seeds.
    native : {None, "torch", "cupy"}
        Passed to `gaussian_direction`.
    track_gram : bool, optional
        Keep the Gram matrix ``gram`` up to date (ZoVH needs it; a gradient method does not,
        and skips the ``O(M K d)`` inner products).
    """

    def __init__(
        self, like: Any, slots: int, storage: str, native: str | None, *, track_gram: bool = True
    ) -> None:
        if storage not in STORAGES:
            raise ValueError(f"directions must be one of {STORAGES}, got {storage!r}")
        self._like = like
        self._native = native
        self.storage = storage
        self.slots = slots
        self._entries: deque[tuple[DirectionRows, Any]] = deque()
        self._track_gram = track_gram
        self.gram = None

    def new_rows(self, seeds: Sequence[int]) -> DirectionRows:
        """The directions for ``seeds``: drawn now with ``"vectors"``, on use with ``"seeds"``."""
        if self.storage == "seeds":
            return DirectionRows(seeds, None, self._like, self._native)
        vectors = [gaussian_direction(s, self._like, self._native) for s in seeds]
        return DirectionRows(seeds, vectors, self._like, self._native)

    def push(self, rows: DirectionRows, values: Any) -> None:
        """Add one iteration's directions and values, dropping the oldest beyond ``slots``."""
        if len(self._entries) == self.slots:
            dropped = len(self._entries[0][0])
            self._entries.popleft()
            if self._track_gram:
                self.gram = self.gram[dropped:, dropped:]
        if self._track_gram:
            self.gram = extend_gram(self.gram, self.rows(), rows)
        self._entries.append((rows, values))

    def rows(self) -> DirectionRows:
        """All kept directions, oldest first."""
        total = DirectionRows((), None if self.storage == "seeds" else (), self._like, self._native)
        for rows, _ in self._entries:
            total = total + rows
        return total

    @property
    def values(self) -> Any:
        """All kept function values, oldest first, shape ``(M,)``."""
        return namespace_of(self._like).concat([v for _, v in self._entries])

    def __len__(self) -> int:
        return sum(len(rows) for rows, _ in self._entries)
