"""The CuPy draws of `zovh_opt._arrays.device_normals` against an independent NumPy reference.

The reference below is Philox4x32-10 written from its definition (Salmon et al., SC'11) in
NumPy's uint64 arithmetic, checked against Random123's published known answers; the kernel's
draws must match it (the same Philox words, then the same Box-Muller formula up to the last
bits of ``log`` and ``cos``). The tests that need a GPU skip without CuPy and a CUDA device.
"""

from __future__ import annotations

import numpy as np
import pytest

from zovh_opt._arrays import device_normals
from zovh_opt._arrays.backend import ArraySpace, DirectionSource, RowStreams

MASK = np.uint64(0xFFFFFFFF)


def philox4x32_10(counter, key):
    """Philox4x32-10 of ``counter`` (four arrays of 32-bit words) and ``key`` (two)."""
    c0, c1, c2, c3 = (np.asarray(w, dtype=np.uint64) for w in counter)
    k0, k1 = (np.asarray(w, dtype=np.uint64) for w in key)
    for r in range(10):
        if r:
            k0, k1 = (k0 + np.uint64(0x9E3779B9)) & MASK, (k1 + np.uint64(0xBB67AE85)) & MASK
        p0, p1 = np.uint64(0xD2511F53) * c0, np.uint64(0xCD9E8D57) * c2  # < 2**64: exact
        c0, c1, c2, c3 = (
            ((p1 >> 32) ^ c1 ^ k0) & MASK,
            p1 & MASK,
            ((p0 >> 32) ^ c3 ^ k1) & MASK,
            p0 & MASK,
        )
    return c0, c1, c2, c3


def reference_normals(seed, columns):
    """What the kernel draws at ``columns`` of the row seeded ``seed``, in float64."""
    c = np.asarray(columns, dtype=np.uint64)
    s = np.uint64(seed)
    w0, w1, w2, w3 = philox4x32_10((c & MASK, c >> 32, 0, 0), (s & MASK, s >> 32))
    u1 = (((w0 >> 5) << 26 | (w1 >> 6)).astype(np.float64) + 1.0) * 2.0**-53
    u2 = ((w2 >> 5) << 26 | (w3 >> 6)).astype(np.float64) * 2.0**-53
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)


@pytest.mark.parametrize(
    "counter, key, expected",
    [  # Random123's kat_vectors, the three "philox4x32 10" lines
        ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
        ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
        (
            (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
            (0xA4093822, 0x299F31D0),
            (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
        ),
    ],
)
def test_the_reference_is_philox4x32_10(counter, key, expected):
    assert tuple(int(w) for w in philox4x32_10(counter, key)) == expected


def test_the_reference_draws_standard_normals():
    z = reference_normals(2**64 - 59, np.arange(200_000))
    assert abs(z.mean()) < 5 / np.sqrt(z.size)
    assert abs(z.var() - 1) < 5 * np.sqrt(2 / z.size)
    assert abs(np.mean(z[1:] * z[:-1])) < 5 / np.sqrt(z.size)  # neighbours uncorrelated
    assert abs(np.mean(z**4) - 3) < 5 * np.sqrt(96 / z.size)  # Gaussian kurtosis (var 96)


@pytest.fixture
def cupy():
    cp = pytest.importorskip("cupy")
    try:
        if cp.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("no CUDA device")
    except cp.cuda.runtime.CUDARuntimeError as exc:
        pytest.skip(f"no CUDA device ({exc})")
    return cp


def test_the_kernel_draws_the_reference(cupy):
    seeds = [0, 1, 2**63 - 25, 2**64 - 1]
    start = 2**32 - 1000  # the counter's high word changes inside the span
    out = cupy.empty((len(seeds), 3000), dtype=cupy.float64)
    device_normals.fill(device_normals.row_seeds(seeds, out.device), start, out)
    got = cupy.asnumpy(out)
    for row, seed in zip(got, seeds, strict=True):
        expected = reference_normals(seed, start + np.arange(3000))
        np.testing.assert_allclose(row, expected, rtol=1e-12, atol=1e-12)


def test_spans_rows_and_dtypes_draw_the_same_bits(cupy):
    seeds = device_normals.row_seeds([7, 8, 9], cupy.cuda.Device())
    whole = device_normals.fill(seeds, 0, cupy.empty((3, 10_000)))
    pieces = cupy.empty((3, 10_000))
    for start in range(0, 10_000, 777):  # strided views of the block
        device_normals.fill(seeds, start, pieces[:, start : start + 777])
    assert bool(cupy.all(pieces == whole))
    row = device_normals.fill(seeds[1:2], 0, cupy.empty(10_000))
    assert bool(cupy.all(row == whole[1]))
    single = device_normals.fill(seeds, 0, cupy.empty((3, 10_000), dtype=cupy.float32))
    assert bool(cupy.all(single == whole.astype(cupy.float32)))


def test_a_cupy_block_is_drawn_again_bit_for_bit_held_or_streamed(cupy):
    space = ArraySpace(cupy.ones(3000, dtype=cupy.float32))
    source = DirectionSource(5)
    block = source.draw(3, 4, space)
    assert bool(cupy.all(block == source.draw(3, 4, space))) and block.dtype == cupy.float32
    z = cupy.asnumpy(block).ravel()
    assert abs(z.mean()) < 5 / np.sqrt(z.size) and abs(z.var() - 1) < 5 * np.sqrt(2 / z.size)
    held = cupy.empty((4, 3000), dtype=cupy.float32)
    RowStreams(source, 3, range(4), space).rows([held[m] for m in range(4)])
    streams, spans = RowStreams(source, 3, range(4), space), cupy.empty_like(held)
    for start in range(0, 3000, 1000):
        streams.fill(spans[:, start : start + 1000])
    assert bool(cupy.all(held == spans))
    other = cupy.empty_like(held)
    RowStreams(source, 4, range(4), space).rows([other[m] for m in range(4)])
    assert not bool(cupy.any(other == held))
