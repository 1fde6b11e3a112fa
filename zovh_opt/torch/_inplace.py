"""Gaussian directions over a model's parameters, drawn again from integer seeds, applied in place.

A direction is never stored: each chunk of each parameter draws its piece from a generator
seeded by (direction seed, parameter, chunk), so a step can perturb, restore and update the
parameters and form the Gram matrix of its directions holding only a few chunks at a time
(MeZO's trick, made exact for any number of directions). Theory: ``docs/theory.md``,
*Fine-tuning in place*.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

_MASK = (1 << 64) - 1
# elements a chunk draws at once: on the CPU a few chunks stay in cache and bound the
# optimizer's buffers (2 MiB each in float32); on a GPU a chunk this small would be
# launch-bound, so there a chunk is at most 2**26 elements
CPU_CHUNK, DEVICE_CHUNK = 1 << 19, 1 << 26


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
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


class Directions:
    """Draws direction chunks and applies them to the parameters, one chunk at a time.

    Parameters
    ----------
    chunk : int or None
        Elements a chunk draws at once; ``None`` chooses by device (`CPU_CHUNK`,
        `DEVICE_CHUNK`). The same seed and chunk give the same directions.
    """

    def __init__(self, chunk: int | None = None) -> None:
        if chunk is not None and (not isinstance(chunk, int) or chunk < 1):
            raise ValueError(f"chunk must be a positive integer or None, got {chunk!r}")
        self.chunk = chunk
        self._generators: dict[torch.device, torch.Generator] = {}
        self._buffers: dict[tuple[str, torch.dtype, torch.device], list[torch.Tensor]] = {}

    def _chunk_of(self, device: torch.device) -> int:
        if self.chunk is not None:
            return self.chunk
        return CPU_CHUNK if device.type == "cpu" else DEVICE_CHUNK

    def _generator(self, device: torch.device) -> torch.Generator:
        if device not in self._generators:
            self._generators[device] = torch.Generator(device=device)
        return self._generators[device]

    def pieces(self, entries: Sequence[Entry]) -> Any:
        """``(entry, chunk number, start, flat view of the chunk)`` for every chunk of every
        entry."""
        for entry in entries:
            flat = entry.param.data.view(-1)
            size = self._chunk_of(flat.device)
            for number, start in enumerate(range(0, flat.numel(), size)):
                yield entry, number, start, flat[start : start + size]

    def draw(self, seed: int, entry: Entry, number: int, like: torch.Tensor, slot: int) -> Any:
        """The chunk ``number`` of direction ``seed`` on ``entry``, in buffer ``slot``."""
        generator = self._generator(like.device)
        generator.manual_seed(mix(seed, entry.index, number))
        buffer = self.buffer("direction", direction_dtype(like.dtype), like.device, slot)
        return buffer[: like.numel()].normal_(generator=generator)

    def buffer(self, kind: str, dtype: torch.dtype, device: torch.device, slot: int) -> Any:
        """A chunk-sized buffer of ``kind`` ("direction" or "sum"), kept until `release`."""
        pool = self._buffers.setdefault((kind, dtype, device), [])
        while len(pool) <= slot:
            pool.append(torch.empty(self._chunk_of(device), dtype=dtype, device=device))
        return pool[slot]

    def accumulate(self, piece: torch.Tensor, slot: int) -> torch.Tensor:
        """A zeroed float64 accumulator of the chunk's size (the moves are summed in float64
        and rounded to the parameter's dtype once)."""
        return self.buffer("sum", torch.float64, piece.device, slot)[: piece.numel()].zero_()

    def release(self) -> None:
        """Free the chunk buffers (they are kept between the passes of one step)."""
        self._buffers.clear()

    def sweep(
        self,
        entries: Sequence[Entry],
        draws: Sequence[Draw],
        rows: Sequence[int] = (),
        scale: Any = None,
    ) -> np.ndarray:
        """Apply ``draws`` to the parameters; return the Gram block ``u_r . u_j`` (host float64)
        of the directions at positions ``rows`` of ``draws`` with every direction of ``draws``.

        The moves of a chunk are summed in float64 and rounded once per stage: the ``undo``
        stage first (back to the point before the last query: exact but where the query
        crossed a power of two), then the shifts and steps. ``scale(entry, start, n)``, where
        given, returns a tensor that divides the moves of the chunk (HiZOO's ``Sigma^{1/2}``).
        The row directions stay in buffers for the chunk, the others pass through one buffer:
        a sweep holds ``len(rows) + 1`` direction chunks and two accumulators.
        """
        R = len(rows)
        order = [*rows, *(j for j in range(len(draws)) if j not in rows)]
        partial: dict[torch.device, torch.Tensor] = {}
        for entry, number, start, piece in self.pieces(entries):
            held: list[torch.Tensor] = []
            undo = move = None
            acc = None
            if R:
                acc = partial.get(piece.device)
                if acc is None:
                    acc = torch.zeros(R, len(draws), dtype=torch.float64, device=piece.device)
                    partial[piece.device] = acc
            for j in order:
                draw = draws[j]
                alpha = draw.shift + entry.lr * draw.step
                if alpha == 0.0 and draw.undo == 0.0 and not R:
                    continue
                u = self.draw(draw.seed, entry, number, piece, min(len(held), R))
                if draw.undo != 0.0:
                    undo = self.accumulate(piece, 0) if undo is None else undo
                    undo.add_(u, alpha=draw.undo)
                if alpha != 0.0:
                    move = self.accumulate(piece, 1) if move is None else move
                    move.add_(u, alpha=alpha)
                if acc is not None:
                    if len(held) < R:  # a row: its dots with itself and the rows before it
                        held.append(u)
                        for r, row in enumerate(held[:-1]):
                            acc[len(held) - 1, rows[r]] += torch.dot(row, u)
                    for r, row in enumerate(held):
                        acc[r, j] += torch.dot(row, u)
            divisor = None if scale is None else scale(entry, start, piece.numel())
            for total in (undo, move):
                if total is not None:
                    if divisor is not None:
                        total.div_(divisor)
                    piece.copy_(total.add_(piece))
        gram = np.zeros((R, len(draws)))
        for acc in partial.values():
            gram += acc.cpu().numpy()
        return gram
