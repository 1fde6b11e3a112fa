"""Standard normals on a CuPy device, drawn by a counter-based kernel with no state.

Element ``(r, c)`` of a draw is a function of its row's 64-bit seed ``s_r`` and its column
``c`` alone. The Philox4x32-10 block (Salmon et al., SC'11, the Random123 definition) of key
``(s_r mod 2^32, s_r >> 32)`` and counter ``(c mod 2^32, c >> 32, 0, 0)`` gives four 32-bit
words; the first two make a 53-bit uniform ``u1`` in ``(0, 1]``, the last two ``u2`` in
``[0, 1)``, and the element is one Box-Muller output, ``sqrt(-2 ln u1) cos(2 pi u2)``, in
double precision, rounded to the output's dtype (so a float32 draw is the float64 draw
rounded).

So any span of columns of any row is drawn alone with the bits it has in the whole row, a
block of rows is one kernel launch, and nothing is held between draws. ``cupy.random``'s
generators, by contrast, each allocate and initialise 256 000 states (about 12 MB and
0.3-0.6 ms for its default XORWOW), which the curvature model paid for every row it drew
again; measured on an H200 (`experiments/gpu_checks.py`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

_PHILOX_NORMAL = r"""
unsigned long long c = (unsigned long long)(start + i % width);
unsigned int k0 = (unsigned int)seed, k1 = (unsigned int)(seed >> 32);
unsigned int c0 = (unsigned int)c, c1 = (unsigned int)(c >> 32), c2 = 0u, c3 = 0u;
for (int r = 0; r < 10; ++r) {
    if (r > 0) {
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    unsigned int hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
    unsigned int hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
}
double u1 = ((double)((((unsigned long long)(c0 >> 5)) << 26) | (c1 >> 6)) + 1.0)
            * 1.1102230246251565e-16;
double u2 = (double)((((unsigned long long)(c2 >> 5)) << 26) | (c3 >> 6))
            * 1.1102230246251565e-16;
z = (T)(sqrt(-2.0 * log(u1)) * cospi(2.0 * u2));
"""

_kernel = None


def _compiled() -> Any:
    global _kernel
    if _kernel is None:
        import cupy

        _kernel = cupy.ElementwiseKernel(
            "uint64 seed, int64 start, int64 width",
            "T z",
            _PHILOX_NORMAL,
            "zovh_philox_normal",
        )
    return _kernel


def row_seeds(seeds: list[int], device: Any) -> Any:
    """The rows' 64-bit seeds as a ``(rows, 1)`` ``uint64`` array on ``device`` (a
    ``cupy.cuda.Device``), the shape `fill` broadcasts against a ``(rows, width)`` output."""
    import cupy

    with device:
        return cupy.asarray(np.asarray(seeds, dtype=np.uint64).reshape(-1, 1))


def fill(seeds: Any, start: int, out: Any) -> Any:
    """Write columns ``start .. start + out.shape[-1]`` of the rows seeded by ``seeds`` into
    ``out`` and return it.

    Parameters
    ----------
    seeds : cupy.ndarray of uint64
        ``(rows, 1)`` for a ``(rows, width)`` ``out`` (`row_seeds`), or a single seed
        (``()`` or ``(1, 1)``) for a ``(width,)`` row.
    start : int
        The first column's number (counted from the row's start).
    out : cupy.ndarray of float32 or float64
        Receives the draws; any strides.
    """
    if out.ndim == 1:
        seeds = seeds.reshape(())
    with out.device:
        _compiled()(seeds, int(start), int(out.shape[-1]), out)
    return out
