"""The query history as a ring buffer and the counter-based directions (the overhead issue)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import zovh_opt
from zovh_opt import ZOAR, ZoVH
from zovh_opt._arrays.backend import STREAM_COLUMNS, ArraySpace, DirectionSource
from zovh_opt._methods.zovh_preconditioned import default_pairs
from zovh_opt.problems import rosenbrock


def test_a_block_is_the_same_bits_whenever_and_wherever_it_is_drawn():
    space = ArraySpace(np.zeros(1001))
    a, b = DirectionSource(7), DirectionSource(7)
    first = [a.draw(k, 3, space) for k in range(5)]
    later = [b.draw(k, 3, space) for k in reversed(range(5))][::-1]  # other order
    for u, v in zip(first, later, strict=True):
        assert np.array_equal(u, v)
    into = np.empty((3, 1001))
    assert b.draw(3, 3, space, out=into) is into and np.array_equal(into, first[3])
    assert not np.array_equal(first[0], first[1])
    assert not np.array_equal(first[0], DirectionSource(8).draw(0, 3, space))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_span_of_columns_is_drawn_alone_with_the_bits_of_its_block(dtype):
    """Any span that starts a stream, drawn alone into a strided array, equals those columns
    of the whole block; other spans are refused."""
    d = 2 * STREAM_COLUMNS + 5
    space = ArraySpace(np.zeros(d, dtype=dtype))
    source = DirectionSource(3)
    whole = source.draw(4, 3, space)
    assert whole.dtype == dtype
    for j in range(3):
        span = slice(j * STREAM_COLUMNS, min((j + 1) * STREAM_COLUMNS, d))
        into = np.zeros((3, STREAM_COLUMNS + 7), dtype=dtype)[:, : span.stop - span.start]
        DirectionSource(3).fill_columns(4, into, span.start)
        assert np.array_equal(into, whole[:, span])
    assert not np.array_equal(whole[:, :5], whole[:, STREAM_COLUMNS : STREAM_COLUMNS + 5])
    with pytest.raises(ValueError, match="multiple of"):
        source.fill_columns(4, np.empty((3, 10), dtype=dtype), 1)


def test_blocks_are_standard_normal():
    """Mean, variance, and correlation of adjacent rows and of a row's streams within 5
    standard errors."""
    space = ArraySpace(np.zeros(20000))
    source = DirectionSource(0)
    U = np.concatenate([source.draw(k, 5, space) for k in range(20)])  # 2e6 numbers
    n = U.size
    assert abs(U.mean()) < 5 / np.sqrt(n)
    assert abs(U.var() - 1) < 5 * np.sqrt(2 / n)
    rows = U.shape[0]
    corr = np.mean(U[:-1] * U[1:])  # adjacent rows, also across block boundaries
    assert abs(corr) < 5 / np.sqrt(n * (rows - 1) / rows)
    tail = U.shape[1] - STREAM_COLUMNS  # the second stream of each row against the first's start
    corr = np.mean(U[:, :tail] * U[:, STREAM_COLUMNS:])
    assert abs(corr) < 5 / np.sqrt(rows * tail)


@pytest.mark.parametrize("storage", ["vectors", "seeds"])
@pytest.mark.parametrize(
    "product, d", [("shared", 300), ("decoupled", 300), ("shared", 2 * STREAM_COLUMNS + 3)]
)
def test_the_host_gram_matrix_is_that_of_the_kept_directions(storage, product, d):
    """After every iteration, G equals U U^T of the history's directions, drawn again
    independently from their block numbers, and the values are the last N iterations'
    (also where the products are summed over chunks of columns)."""
    N = 3
    opt = ZoVH(
        np.zeros(d), rng=5, history=N, directions=storage, product=product, learning_rate=1e-9
    )
    told = []
    w = opt.points_per_iteration
    for _ in range(7):
        values = np.random.default_rng(len(told)).standard_normal(w)
        opt.ask()
        opt.tell(values)
        told.append(values)
        source = DirectionSource.__new__(DirectionSource)
        source.__setstate__(opt.source.get_state())
        U = np.concatenate([source.draw(b, w, opt.space) for b in opt.queries.blocks])
        np.testing.assert_allclose(opt.queries.gram(), U @ U.T, rtol=1e-12, atol=1e-9)
        np.testing.assert_array_equal(opt.queries.values(), np.concatenate(told[-N:]))


@pytest.mark.parametrize("d", [7, 64, 1000, 4099, 2 * STREAM_COLUMNS + 3])
@pytest.mark.parametrize(
    "method, options",
    [
        ("zovh", {"history": 4}),
        ("zovh", {"history": 2, "product": "decoupled"}),
        ("zovh", {"history": 3, "inverse": "exact"}),
        ("zovh", {"curvature": "off", "learning_rate": "auto"}),  # undone trials, radius
        ("zoar", {"history": 4}),
        ("zovh", {"curvature": "diagonal", "learning_rate": 1.0}),  # reuses 3 iterations' pairs
        ("zovh", {"curvature": "diagonal", "learning_rate": "auto"}),
    ],
)
def test_seeds_and_vectors_storage_are_bit_identical(d, method, options):
    x0 = np.random.default_rng(0).standard_normal(d)
    opts = {"maxiter": 25, "learning_rate": 1e-6, **options}
    a = zovh_opt.minimize(
        rosenbrock, x0, method=method, rng=3, options={**opts, "directions": "vectors"}
    )
    b = zovh_opt.minimize(
        rosenbrock, x0, method=method, rng=3, options={**opts, "directions": "seeds"}
    )
    assert np.array_equal(a.x, b.x) and a.fun == b.fun
    assert all(np.array_equal(a.trace[k], b.trace[k]) for k in a.trace)


def test_seeds_storage_draws_n_k_directions_per_iteration():
    """A step is formed in the next ask's pass, which also draws the new block and forms its
    inner products: with ``"seeds"`` storage each iteration draws the N - 1 kept blocks it
    does not hold and its new one, N K rows of d numbers (it was (2 N - 1) K), with
    ``"vectors"`` the K new rows, and the runs are the same."""
    d, N, K = 2 * STREAM_COLUMNS + 3, 4, 3
    x0 = np.random.default_rng(0).standard_normal(d)
    runs = {}
    for storage in ("vectors", "seeds"):
        opt = ZoVH(x0, rng=2, history=N, directions=storage, learning_rate=1e-8)
        drawn = []
        fill = opt.source.fill_columns

        def counting(block, out, start, fill=fill, drawn=drawn):
            drawn[-1] += out.size
            return fill(block, out, start)

        opt.source.fill_columns = counting
        for _ in range(3 * N):
            drawn.append(0)
            opt.tell(rosenbrock(opt.ask()))
        per_iteration = N * K * d if storage == "seeds" else K * d  # vectors: the new block
        assert drawn[N + 1 :] == [per_iteration] * (2 * N - 1), drawn
        runs[storage] = np.array(opt.x)  # forms the last step: seeds draws (N - 1) K rows
        assert drawn[-1] == per_iteration + (storage == "seeds") * (N - 1) * K * d
    assert np.array_equal(runs["vectors"], runs["seeds"])


@pytest.mark.parametrize("rate", [1e-8, "auto"])
def test_a_deferred_step_is_kept_by_checkpoints_and_pickles(rate, tmp_path):
    """Saved or pickled between a tell and the next ask, where the seeds storage has not yet
    formed the step, a run goes on as the uninterrupted one, bit for bit."""
    import pickle

    x0 = np.random.default_rng(1).standard_normal(STREAM_COLUMNS + 7)
    options = {"curvature": "off", "learning_rate": rate, "directions": "seeds"}

    def run(opt, iterations):
        for _ in range(iterations):
            opt.tell(rosenbrock(opt.ask()))
        return opt

    whole = run(zovh_opt.Optimizer(x0, rng=4, options=options), 24)
    saved = run(zovh_opt.Optimizer(x0, rng=4, options=options), 12)
    saved.save(tmp_path / "run.npz")
    loaded = run(zovh_opt.Optimizer.load(tmp_path / "run.npz"), 12)
    pickled = run(pickle.loads(pickle.dumps(run(ZoVH(x0, rng=4, **options), 12))), 12)
    direct = run(ZoVH(x0, rng=4, **options), 24)
    assert np.isfinite(whole.x).all() and not np.array_equal(whole.x, x0)
    assert np.array_equal(loaded.x, whole.x)
    assert np.array_equal(pickled.x, direct.x)


def test_seeds_storage_with_a_torch_generator_matches_vectors_storage():
    """A ``torch.Generator`` draws whole blocks (no span of one can be drawn alone): the seeds
    storage draws its kept blocks whole too (it drew SFC64 spans instead, another run)."""
    torch = pytest.importorskip("torch")
    x0 = torch.linspace(-1, 1, STREAM_COLUMNS + 9, dtype=torch.float64)
    runs = {}
    for storage in ("vectors", "seeds"):
        opt = ZoVH(x0, rng=torch.Generator().manual_seed(0), directions=storage, learning_rate=1e-8)
        for _ in range(8):
            opt.tell(rosenbrock(opt.ask()))
        runs[storage] = opt.x
    assert bool(torch.isfinite(runs["seeds"]).all()) and not torch.equal(runs["seeds"], x0)
    assert torch.equal(runs["vectors"], runs["seeds"])


def test_a_discarded_ask_drops_the_overwritten_block_in_both_storages():
    runs = {}
    for storage in ("vectors", "seeds"):
        opt = ZOAR(np.ones(50), rng=1, history=2, directions=storage, learning_rate=1e-3)
        for i in range(6):
            points = opt.ask()
            if i == 3:
                opt.discard()
                continue
            opt.tell(rosenbrock(points))
        runs[storage] = (opt.queries.blocks, np.array(opt.x))
    assert runs["vectors"][0] == runs["seeds"][0]
    assert np.array_equal(runs["vectors"][1], runs["seeds"][1])


@pytest.mark.parametrize("method", sorted(zovh_opt.METHODS))
def test_every_method_keeps_a_non_default_device(method):
    """array-api-strict's second device stands in for a GPU: nothing may fall back to the
    default device (the 0.1.0 directions did, and every method failed on its first ask)."""
    xps = pytest.importorskip("array_api_strict")
    device = xps.Device("device1")
    x0 = xps.asarray(np.linspace(-1, 1, 40), device=device)
    seen = []

    def fun(x):
        seen.append(x.device)
        return float(xps.sum(x * x))

    res = zovh_opt.minimize(
        fun, x0, method=method, rng=0, options={"maxiter": 6, "learning_rate": 1e-3}
    )
    assert seen and all(dev == device for dev in seen)
    assert res.x.device == device and res.nit == 6
    if "jac" in res:
        assert res.jac.device == device


def memory_of_a_run(x0, options, warmup):
    """Floats of ``x0``'s size that a driven run holds after ``warmup`` iterations, and the
    bytes at its peak during the next three (tracemalloc counts NumPy's allocations exactly).
    The values are computed without d-sized temporaries."""

    def values(points):
        return [float(points[i] @ points[i]) for i in range(points.shape[0])]

    tracemalloc.start()
    opt = zovh_opt.Optimizer(x0, rng=0, options={**options, "maxiter": 100})
    for _ in range(warmup):
        opt.tell(values(opt.ask()))
    held = tracemalloc.get_traced_memory()[0] / x0.nbytes
    tracemalloc.reset_peak()
    for _ in range(3):
        opt.tell(values(opt.ask()))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return held, peak


@pytest.mark.parametrize("rate", [1e-9, "auto"])
def test_steady_state_memory_of_an_iteration(rate):
    """Through the driver, a run holds at most (N K + K + 3) d floats beyond the caller's x0 at
    any moment of a steady-state iteration: the ring of directions, the query points, the
    iterate, the best point and the anchor (fixed rate) or the step rule's centre."""
    d, N, K = 100_000, 4, 3
    x0 = np.random.default_rng(0).standard_normal(d)
    held, peak = memory_of_a_run(x0, {"learning_rate": rate, "curvature": "off"}, N + 2)
    assert held > N * K  # the ring is counted...
    bound = (N * K + K + 3) * x0.nbytes + 64 * 1024  # plus small objects (trace, Gram...)
    assert peak <= bound, peak / x0.nbytes  # ...and the peak stays within the bound


@pytest.mark.parametrize("rate", [1e-3, "auto"])
def test_seeds_storage_holds_one_block_beyond_the_iterates(rate):
    """With ``directions="seeds"`` a run holds the newest block's K directions and the driver's
    3 vectors between iterations, whatever N, and at its peak also the next block, its K
    points and the scratch span of every slot (N K x STREAM_COLUMNS numbers)."""
    d, N, K = 100_000, 4, 3
    x0 = np.random.default_rng(0).standard_normal(d)
    options = {"learning_rate": rate, "curvature": "off", "history": N, "directions": "seeds"}
    held, peak = memory_of_a_run(x0, options, N + 2)
    assert held <= K + 3 + 0.1, held
    scratch = N * K * STREAM_COLUMNS * x0.itemsize
    assert peak <= (2 * K + 3) * x0.nbytes + scratch + 64 * 1024, peak / x0.nbytes


@pytest.mark.parametrize("rate", [1e-3, "auto"])
@pytest.mark.parametrize("storage", ["vectors", "seeds"])
def test_memory_of_an_iteration_with_the_curvature_model(rate, storage):
    """The default ZoVH holds its model, a few vectors and the N - 1 = 3 earlier iterations it
    reuses between iterations: their centres and whitenings, 2 (N - 1) d floats, and with
    vectors storage the N P directions of the kept iterations and of the next one (drawn into
    the rows of the iteration let go); during one, at most (2 P + 6) d floats more: the 2 P
    points (``ask`` makes them all), the step, the model's error and its update's temporaries,
    and the passes' scratch, (N + 1) P rows of 2**14 numbers."""
    d = 100_000
    P, N = default_pairs(d), 4
    x0 = np.random.default_rng(0).standard_normal(d)
    options = {"learning_rate": rate, "curvature": "diagonal", "directions": storage}
    held, peak = memory_of_a_run(x0, options, 6)
    kept = 2 * (N - 1) + (N * P if storage == "vectors" else 0)
    assert held <= 8 + kept, held  # and x, the centre or best point, the model, the step
    scratch = (N + 1) * P * STREAM_COLUMNS / d
    assert peak <= (8 + kept + 2 * P + 6 + scratch) * x0.nbytes, peak / x0.nbytes


def test_step_benchmark_prints_its_tables(capsys):
    """The command behind the performance page runs and fills every column (no timing is
    asserted: speed claims live in the benchmark's output, not in tests)."""
    import argparse

    from zovh_opt.benchmarks import step

    parser = argparse.ArgumentParser()
    step.add_arguments(parser)
    args = parser.parse_args(
        [
            "--dims",
            "10",
            "100",
            "20000",
            "--history",
            "2",
            "--dtypes",
            "float64",
            "--repeat",
            "2",
            "--peer-dims",
        ]
    )
    assert step.run(args) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| numpy")]
    # (d, storage) rows, one fixed-cost row per storage, then one curvature-model row per d
    assert len(rows) == 3 * 2 + 2 + 3
    for row in rows[:6]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert all(float(c) > 0 for c in cells[5:9])
    assert all(float(row.split("|")[-2]) > 0 for row in rows[4:6])  # peak memory at d = 2e4
    for row in rows[8:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert all(float(c) > 0 for c in cells[4:7])
