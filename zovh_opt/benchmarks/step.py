"""The optimizer's own cost per iteration, the objective excluded, against an honest floor.

Four tables: the paper's iteration (`zovh_opt.ZoVH`, ask and tell) and the driver around it
against the plain-NumPy floor every K-direction method pays (draw, form the points, one
update), timed interleaved, with the peak memory beyond the iterate; the driver's fixed cost
(an affine fit over ``d``); the default's curvature-model iteration against its floor; and
each solver's own time per evaluation against peers on a sphere. Run it with
``OMP_NUM_THREADS=1``. The protocol in full: ``docs/benchmarks/performance.md``, *Protocol of step*.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np

from .._driver.optimizer import Optimizer
from .._methods import ZoVH


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dims", type=float, nargs="+", default=[10, 100, 1e3, 1e4, 1e5, 1e6])
    parser.add_argument("--history", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--dtypes", nargs="+", default=["float64", "float32"])
    parser.add_argument("--storage", nargs="+", default=["vectors", "seeds"])
    parser.add_argument("--directions", type=int, default=3, help="K")
    parser.add_argument("--repeat", type=int, default=0, help="timed pairs per row (0: by d)")
    parser.add_argument(
        "--backends", nargs="+", default=["numpy"], help="numpy, torch (CPU), torch-cuda, cupy"
    )
    parser.add_argument("--peer-dims", type=int, nargs="*", default=[40, 320])
    parser.add_argument("--peer-evaluations", type=int, default=6000)


def _backend(name: str) -> tuple[Callable[[np.ndarray], Any], Callable[[], None]]:
    """Return (to_backend, synchronize)."""
    if name.startswith("torch"):
        import torch

        dev = torch.device("cuda" if name == "torch-cuda" else "cpu")
        sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
        return (lambda a: torch.asarray(a, device=dev)), sync
    if name == "cupy":
        import cupy

        return cupy.asarray, cupy.cuda.Device().synchronize
    return (lambda a: a), (lambda: None)


def _floor(d: int, K: int, dtype: str) -> Callable[[], Any]:
    """Plain NumPy: K Gaussian directions drawn in one call into a buffer kept across
    iterations (as the optimizer's ring is), the K query points as a new array (they are
    handed to the objective), one axpy making the new iterate."""
    rng = np.random.default_rng(0)
    U = np.empty((K, d), dtype=dtype)
    state = {"x": rng.standard_normal(d).astype(dtype)}

    def work() -> None:
        rng.standard_normal(dtype=np.dtype(dtype), out=U)
        points = U * 0.1
        points += state["x"]
        del points
        state["x"] = state["x"] - 1e-3 * U[0]

    return work


def _stepper(opt: Any, values: Any, warmup: int) -> Callable[[], None]:
    """One ask + tell of ``opt`` with fixed ``values``, after ``warmup`` of them."""

    def step() -> None:
        opt.ask()
        opt.tell(values)

    for _ in range(warmup):
        step()
    return step


def _method_step(x: Any, K: int, N: int, storage: str) -> Callable[[], None]:
    """One ask + tell of ZoVH on a full history; the values are fixed random numbers."""
    opt = ZoVH(x, rng=0, n_directions=K, history=N, directions=storage, learning_rate=1e-12)
    return _stepper(opt, np.random.default_rng(1).standard_normal(K), N + 1)


def _driver_step(x: Any, K: int, N: int, storage: str) -> Callable[[], None]:
    """One ask + tell of the Optimizer around ZoVH (budgets, best point, trace...)."""
    options = {"learning_rate": 1e-12, "history": N, "directions": storage, "maxiter": 10**9}
    opt = Optimizer(x, options=options, rng=0)
    return _stepper(opt, list(np.random.default_rng(1).standard_normal(K)), N + 1)


def _interleaved(fns: list[Callable[[], None]], sync: Callable[[], None], repeat: int) -> list:
    """Median seconds of each of ``fns``, timed in turn ``repeat`` times."""
    times: list[list[float]] = [[] for _ in fns]
    for fn in fns:
        fn()
    sync()
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            sync()
            times[i].append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def _peak_extra(d: int, K: int, N: int, storage: str, dtype: str) -> float:
    """Peak bytes the optimizer holds beyond ``x`` during a steady-state iteration of the
    driver, in units of ``d`` floats (NumPy)."""
    x = np.random.default_rng(0).standard_normal(d).astype(dtype)
    tracemalloc.start()
    step = _driver_step(x, K, N, storage)
    tracemalloc.reset_peak()
    step()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / x.nbytes - 1


def _pairs_floor(d: int, P: int, dtype: str) -> Callable[[], Any]:
    """Plain NumPy for ``P`` antithetic pairs: ``P`` directions drawn in one call into a kept
    buffer, the ``2 P`` points as a new array, one axpy."""
    rng = np.random.default_rng(0)
    U = np.empty((P, d), dtype=dtype)
    state = {"x": rng.standard_normal(d).astype(dtype)}

    def work() -> None:
        rng.standard_normal(dtype=np.dtype(dtype), out=U)
        points = np.empty((2 * P, d), dtype=dtype)
        np.multiply(U, 0.1, out=points[:P])
        np.multiply(U, -0.1, out=points[P:])
        points += state["x"]
        del points
        state["x"] = state["x"] - 1e-3 * U[0]

    return work


def curvature_table(args: argparse.Namespace) -> None:
    from .._methods.zovh_preconditioned import default_pairs

    print()
    print("| backend | d | P | dtype | method us/it | floor us/it | method / floor |")
    print("|---|---:|---:|---|---:|---:|---:|")
    for backend in args.backends:
        to_backend, sync = _backend(backend)
        for d in (int(v) for v in args.dims):
            P = default_pairs(d)
            for dtype in args.dtypes:
                x = to_backend(np.random.default_rng(0).standard_normal(d).astype(dtype))
                opt = ZoVH(x, rng=0, curvature="diagonal", learning_rate=1.0)
                values = np.random.default_rng(1).standard_normal(2 * P)
                fns = [_pairs_floor(d, P, dtype), _stepper(opt, values, 3)]
                floor, method = _interleaved(fns, sync, _repeat(d, args.repeat))
                print(
                    f"| {backend} | {d:.0e} | {P} | {dtype} | {1e6 * method:.1f} | "
                    f"{1e6 * floor:.1f} | {method / floor:.2f} |",
                    flush=True,
                )


def _repeat(d: int, requested: int) -> int:
    if requested:
        return requested
    return 400 if d <= 1e3 else 100 if d <= 1e4 else 30 if d <= 1e5 else 9


def step_table(args: argparse.Namespace) -> list[tuple]:
    K = args.directions
    rows = []
    print(
        "| backend | d | N | dtype | storage | method us/it | driver us/it | floor us/it "
        "| driver / floor | peak extra (d floats) |"
    )
    print("|---|---:|---:|---|---|---:|---:|---:|---:|---:|")
    for backend in args.backends:
        to_backend, sync = _backend(backend)
        for d in (int(v) for v in args.dims):
            for N in args.history:
                for dtype in args.dtypes:
                    x = to_backend(np.random.default_rng(0).standard_normal(d).astype(dtype))
                    for storage in args.storage:
                        fns = [
                            _floor(d, K, dtype),
                            _method_step(x, K, N, storage),
                            _driver_step(x, K, N, storage),
                        ]
                        floor, method, driver = _interleaved(fns, sync, _repeat(d, args.repeat))
                        peak = (
                            f"{_peak_extra(d, K, N, storage, dtype):.1f}"
                            if backend == "numpy" and d >= 1e4
                            else ""
                        )
                        rows.append((backend, d, N, dtype, storage, method, driver, floor))
                        print(
                            f"| {backend} | {d:.0e} | {N} | {dtype} | {storage} | "
                            f"{1e6 * method:.1f} | {1e6 * driver:.1f} | {1e6 * floor:.1f} | "
                            f"{driver / floor:.2f} | {peak} |",
                            flush=True,
                        )
    return rows


def fixed_cost_table(rows: list[tuple]) -> None:
    print()
    print("| backend | N | dtype | storage | fixed us/it (a) | ns per d (b) |")
    print("|---|---:|---|---|---:|---:|")
    groups: dict[tuple, list[tuple[int, float]]] = {}
    for backend, d, N, dtype, storage, _, driver, _ in rows:
        if d <= 1e4:
            groups.setdefault((backend, N, dtype, storage), []).append((d, driver))
    for (backend, N, dtype, storage), points in groups.items():
        if len(points) < 2:
            continue
        ds, ts = np.array([p[0] for p in points], float), np.array([p[1] for p in points])
        b, a = np.polyfit(ds, ts, 1)
        print(f"| {backend} | {N} | {dtype} | {storage} | {1e6 * a:.1f} | {1e9 * b:.1f} |")


class _TimedSphere:
    """The sphere, timing its own calls so that the solver's share can be separated."""

    def __init__(self) -> None:
        self.seconds, self.calls = 0.0, 0

    def __call__(self, x: np.ndarray) -> float:
        start = time.perf_counter()
        value = float(x @ x)
        self.seconds += time.perf_counter() - start
        self.calls += 1
        return value


def _own_cost(run: Callable[[Callable], None]) -> float:
    f = _TimedSphere()
    start = time.perf_counter()
    run(f)
    total = time.perf_counter() - start
    return (total - f.seconds) / f.calls


def peer_table(args: argparse.Namespace) -> None:
    import cma
    from scipy.optimize import minimize as scipy_minimize

    from .._driver.minimize import minimize

    budget = args.peer_evaluations
    print()
    print(f"| d | solver | own us per evaluation (sphere, {budget} evaluations) |")
    print("|---:|---|---:|")
    for d in args.peer_dims:
        x0 = np.random.default_rng(0).standard_normal(d)

        def zovh(f: Callable, x0: np.ndarray = x0) -> None:
            minimize(f, x0, rng=0, options={"maxfev": budget, "maxiter": budget})

        def zovh_model(f: Callable, x0: np.ndarray = x0) -> None:  # whatever the budget
            options = {"maxfev": budget, "maxiter": budget, "curvature": "diagonal"}
            minimize(f, x0, rng=0, options=options)

        def sep_cma(f: Callable, x0: np.ndarray = x0) -> None:
            options = {
                "CMA_diagonal": True,
                "maxfevals": budget,
                "verbose": -9,
                "seed": 1,
                "tolfun": 0,
                "tolx": 0,
                "tolfunhist": 0,
                "tolstagnation": 10**9,
            }
            es = cma.CMAEvolutionStrategy(x0, 1.0, options)
            while not es.stop():
                X = es.ask()
                es.tell(X, [f(x) for x in X])

        def lbfgsb(f: Callable, x0: np.ndarray = x0) -> None:
            scipy_minimize(
                f,
                x0,
                method="L-BFGS-B",
                options={"maxfun": budget, "ftol": 0, "gtol": 0, "maxiter": budget},
            )

        runs = (
            ("zovh", zovh),
            ("zovh, curvature model", zovh_model),
            ("sep-CMA-ES", sep_cma),
            ("L-BFGS-B (FD)", lbfgsb),
        )
        for name, run in runs:
            costs = [_own_cost(run) for _ in range(3)]
            print(f"| {d} | {name} | {1e6 * statistics.median(costs):.1f} |", flush=True)


def run(args: argparse.Namespace) -> int:
    import threadpoolctl

    K = args.directions
    print(f"# step benchmark: K = {K}, medians of interleaved repeats, one thread")
    print(
        f"# numpy {np.__version__}, python {platform.python_version()}, {platform.machine()}, "
        f"{platform.processor() or 'unknown processor'}"
    )
    print()
    with threadpoolctl.threadpool_limits(1):
        if any(b.startswith("torch") for b in args.backends):
            import torch

            torch.set_num_threads(1)
        rows = step_table(args)
        fixed_cost_table(rows)
        curvature_table(args)
        if args.peer_dims:
            peer_table(args)
    return 0
