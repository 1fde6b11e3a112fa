"""Gaussian directions over a model's parameters, drawn again from integer seeds, applied in place.

A direction is never stored: each chunk of each parameter draws its piece from a generator
seeded by (direction seed, parameter, chunk), so a step can perturb, restore and update the
parameters and form the Gram matrix of its directions holding only a few chunks at a time
(MeZO's trick, made exact for any number of directions). Theory: ``docs/theory.md``,
*Fine-tuning in place*.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

_MASK = (1 << 64) - 1
# elements a chunk draws at once: on the CPU a few chunks stay in cache and bound the
# optimizer's buffers (512 KiB each in float32); on a GPU a chunk this small would be
# launch-bound, so there a chunk is at most 2**26 elements
CPU_CHUNK, DEVICE_CHUNK = 1 << 17, 1 << 26
HALF = (torch.float16, torch.bfloat16)  # drawn and summed in float32


def mix(*keys: int) -> int:
    """A 64-bit seed from integer keys (splitmix64 applied key by key)."""
    z = 0
    for key in keys:
        z = (z ^ (key & _MASK)) + 0x9E3779B97F4A7C15 & _MASK
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9 & _MASK
        z = (z ^ (z >> 27)) * 0x94D049BB133111EB & _MASK
        z ^= z >> 31
    return z


@dataclass(frozen=True)
class Entry:
    """A trainable parameter: its place among the optimizer's parameters and its group's rate."""

    index: int
    param: torch.Tensor
    lr: float


@dataclass(frozen=True)
class Draw:
    """One direction of a pass: first ``param += undo * u``, rounded, then
    ``param += (shift + lr * step) * u``, rounded, with ``u`` the direction of ``seed``."""

    seed: int
    undo: float = 0.0
    shift: float = 0.0
    step: float = 0.0


def direction_dtype(dtype: torch.dtype) -> torch.dtype:
    """Half-precision parameters draw their directions in float32."""
    return torch.float32 if dtype in HALF else dtype


def sum_dtype(dtype: torch.dtype) -> torch.dtype:
    """The moves' sums: float64, or float32 for half-precision parameters (13 bits or more
    finer than their own rounding, at half a sweep's memory traffic)."""
    return torch.float32 if dtype in HALF else torch.float64


class Workspace:
    """What one thread draws with: a generator per device and chunk-sized buffers."""

    def __init__(self, chunk_of: Callable[[torch.device], int]) -> None:
        self.chunk_of = chunk_of
        self._generators: dict[torch.device, torch.Generator] = {}
        self._buffers: dict[tuple[str, torch.dtype, torch.device], list[torch.Tensor]] = {}

    def draw(self, seed: int, entry: Entry, number: int, like: torch.Tensor, slot: int) -> Any:
        """The chunk ``number`` of direction ``seed`` on ``entry``, in buffer ``slot``."""
        generator = self._generators.get(like.device)
        if generator is None:
            generator = self._generators[like.device] = torch.Generator(device=like.device)
        generator.manual_seed(mix(seed, entry.index, number))
        buffer = self.buffer("direction", direction_dtype(like.dtype), like.device, slot)
        return buffer[: like.numel()].normal_(generator=generator)

    def buffer(self, kind: str, dtype: torch.dtype, device: torch.device, slot: int) -> Any:
        """A chunk-sized buffer of ``kind`` ("direction" or "sum"), kept until `release`."""
        pool = self._buffers.setdefault((kind, dtype, device), [])
        while len(pool) <= slot:
            pool.append(torch.empty(self.chunk_of(device), dtype=dtype, device=device))
        return pool[slot]

    def accumulate(self, piece: torch.Tensor, slot: int) -> torch.Tensor:
        """A zeroed accumulator of the chunk's size, `sum_dtype` (the moves are summed there
        and rounded to the parameter's dtype once)."""
        kind = sum_dtype(piece.dtype)
        return self.buffer("sum", kind, piece.device, slot)[: piece.numel()].zero_()

    def dots(self, rows: int, columns: int, device: torch.device) -> Any:
        """A zeroed block for a chunk's dot products: a NumPy array on the CPU (a small tensor
        a chunk, kept to the sweep's end between its buffers, made the allocator's heap
        grow by the model's size twice over), a tensor on a device (no host round trip)."""
        if device.type == "cpu":
            return np.zeros((rows, columns))
        return torch.zeros(rows, columns, dtype=torch.float64, device=device)

    @staticmethod
    def dot(a: torch.Tensor, b: torch.Tensor) -> Any:
        """``a . b``: a host float on the CPU, a 0-d tensor on a device."""
        product = torch.dot(a, b)
        return float(product) if a.device.type == "cpu" else product

    def held_bytes(self) -> int:
        return sum(b.numel() * b.element_size() for pool in self._buffers.values() for b in pool)

    def release(self, keep_cpu: bool = False) -> None:
        """Free the buffers (on devices only, with ``keep_cpu``)."""
        for key in [k for k in self._buffers if not (keep_cpu and k[2].type == "cpu")]:
            del self._buffers[key]


class Directions:
    """Draws direction chunks and applies them to the parameters, one chunk at a time.

    The chunks of CPU parameters are shared out among ``threads`` workers (each chunk's draws
    depend on its seed alone, so the results do not depend on the workers). A worker holds a
    few chunk-sized buffers: on the CPU for the optimizer's life, on a device during a sweep.

    Parameters
    ----------
    chunk : int or None
        Elements a chunk draws at once; ``None`` chooses by device (`CPU_CHUNK`,
        `DEVICE_CHUNK`). The same seed and chunk give the same directions.
    threads : int or None
        Workers for CPU chunks; ``None``: ``torch.get_num_threads()``.
    """

    def __init__(self, chunk: int | None = None, threads: int | None = None) -> None:
        if chunk is not None and (not isinstance(chunk, int) or chunk < 1):
            raise ValueError(f"chunk must be a positive integer or None, got {chunk!r}")
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise ValueError(f"threads must be a positive integer or None, got {threads!r}")
        self.chunk, self.threads = chunk, threads
        self.workspaces = [Workspace(self._chunk_of)]
        self._pool: ThreadPoolExecutor | None = None

    def _chunk_of(self, device: torch.device) -> int:
        if self.chunk is not None:
            return self.chunk
        return CPU_CHUNK if device.type == "cpu" else DEVICE_CHUNK

    def pieces(self, entries: Sequence[Entry]) -> list[tuple[Entry, int, int, torch.Tensor]]:
        """``(entry, chunk number, start, flat view of the chunk)`` for every chunk of every
        entry."""
        out = []
        for entry in entries:
            flat = entry.param.data.view(-1)
            size = self._chunk_of(flat.device)
            for number, start in enumerate(range(0, flat.numel(), size)):
                out.append((entry, number, start, flat[start : start + size]))
        return out

    def each(self, entries: Sequence[Entry], work: Callable[..., Any]) -> list[Any]:
        """``[work(workspace, entry, number, start, piece) for every chunk]``, in chunk order;
        CPU chunks run on the workers, the others on this thread."""
        pieces = self.pieces(entries)
        threads = self.threads or torch.get_num_threads()
        on_cpu = [i for i, p in enumerate(pieces) if p[3].device.type == "cpu"]
        results: list[Any] = [None] * len(pieces)
        # CPU buffers stay from sweep to sweep: freed and taken again by worker threads they
        # would grow the allocator's per-thread arenas; device buffers go after each sweep
        if threads > 1 and len(on_cpu) > 1:
            while len(self.workspaces) < threads:
                self.workspaces.append(Workspace(self._chunk_of))
            if self._pool is None:
                self._pool = ThreadPoolExecutor(threads)

            def share(t: int) -> None:
                for i in on_cpu[t::threads]:
                    results[i] = work(self.workspaces[t], *pieces[i])

            intra = torch.get_num_threads()
            torch.set_num_threads(1)  # the workers share the cores, not each op
            try:
                list(self._pool.map(share, range(threads)))
            finally:
                torch.set_num_threads(intra)
        else:
            on_cpu = []
        done = set(on_cpu)
        for i, piece in enumerate(pieces):
            if i not in done:
                results[i] = work(self.workspaces[0], *piece)
        for workspace in self.workspaces:  # not held while the closure runs the model
            workspace.release(keep_cpu=True)
        return results

    def sweep(
        self,
        entries: Sequence[Entry],
        draws: Sequence[Draw],
        rows: Sequence[int] = (),
        scale: Any = None,
    ) -> np.ndarray:
        """Apply ``draws`` to the parameters; return the Gram block ``u_r . u_j`` (host float64)
        of the directions at positions ``rows`` of ``draws`` with every direction of ``draws``.

        The moves of a chunk are summed (`sum_dtype`) and rounded once per stage: the ``undo``
        stage first (back to the point before the last query: exact but where the query
        crossed a power of two), then the shifts and steps. ``scale(entry, start, n)``, where
        given, returns a tensor that divides the moves of the chunk (HiZOO's ``Sigma^{1/2}``).
        The row directions stay in buffers for the chunk, the others pass through one buffer:
        a worker holds ``len(rows) + 1`` direction chunks and two accumulators. The Gram block
        is summed over chunks in chunk order, so it does not depend on the workers.
        """
        R = len(rows)
        order = [*rows, *(j for j in range(len(draws)) if j not in rows)]

        def work(space: Workspace, entry: Entry, number: int, start: int, piece: Any) -> Any:
            held: list[torch.Tensor] = []
            undo = move = dots = None
            if R:
                dots = space.dots(R, len(draws), piece.device)
            for j in order:
                draw = draws[j]
                alpha = draw.shift + entry.lr * draw.step
                if alpha == 0.0 and draw.undo == 0.0 and not R:
                    continue
                u = space.draw(draw.seed, entry, number, piece, min(len(held), R))
                if draw.undo != 0.0:
                    undo = space.accumulate(piece, 0) if undo is None else undo
                    undo.add_(u, alpha=draw.undo)
                if alpha != 0.0:
                    move = space.accumulate(piece, 1) if move is None else move
                    move.add_(u, alpha=alpha)
                if len(held) < R:  # a row: its dots with itself and the rows before it
                    held.append(u)
                    for r, row in enumerate(held[:-1]):
                        dots[len(held) - 1, rows[r]] = space.dot(row, u)
                for r, row in enumerate(held):
                    dots[r, j] = space.dot(row, u)
            divisor = None if scale is None else scale(entry, start, piece.numel())
            for total in (undo, move):
                if total is not None:
                    if divisor is not None:
                        total.div_(divisor)
                    piece.add_(total)  # in the sum's dtype, rounded once into the piece's
            return dots

        blocks = [b for b in self.each(entries, work) if b is not None]
        gram = np.zeros((R, len(draws)))
        for block in blocks:  # in chunk order
            if isinstance(block, np.ndarray):
                gram += block
        on_devices = [b for b in blocks if not isinstance(b, np.ndarray)]
        for device in dict.fromkeys(b.device for b in on_devices):
            same = [b for b in on_devices if b.device == device]
            gram += torch.stack(same).sum(0).cpu().numpy()
        return gram
