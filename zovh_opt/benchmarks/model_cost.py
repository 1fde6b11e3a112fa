"""model-cost: what the curvature models cost per evaluation, beside pycma's CMA-ES.

The time of the optimizer alone, per evaluation of ``f``: ZoVH's full model
(``curvature="full"``), its diagonal model (``"diagonal"``), both through `zovh_opt.ZoVH`'s
``ask`` / ``tell`` (the method object, without the driver's budgets and trace), and pycma's
``CMAEvolutionStrategy.ask`` / ``tell`` at its defaults (population ``4 + floor(3 ln d)``,
covariance matrix adaptation with its lazy eigendecomposition), on the sphere evaluated as
one vectorized product, whose cost is subtracted (timed alone). Each optimizer runs
``iterations`` iterations from ``x0 ~ N(0, I)`` (after ``warmup`` untimed ones), three times
interleaved; the table gives the median of the three, in microseconds per evaluation, one
thread.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np

from ._common import Report, add_common_arguments, fmt, pyplot

NAME = "model-cost"
SOLVERS = ("zovh full", "zovh diagonal", "CMA-ES (pycma)")


def sphere(X: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", X, X)


def _zovh(
    curvature: str, d: int, iterations: int, warmup: int, seed: int
) -> tuple[float, int, int]:
    from .._methods import ZoVH

    opt = ZoVH(np.random.default_rng(seed).standard_normal(d), rng=seed, curvature=curvature)
    for _ in range(warmup):
        opt.tell(sphere(opt.ask()))
    n, start = 0, time.perf_counter()
    for _ in range(iterations):
        X = opt.ask()
        n += X.shape[0]
        opt.tell(sphere(X))
    return time.perf_counter() - start, n, opt.points_per_iteration


def _cma(d: int, iterations: int, warmup: int, seed: int) -> tuple[float, int, int]:
    import cma

    x0 = np.random.default_rng(seed).standard_normal(d)
    options = {"seed": seed + 1, "verbose": -9, "tolfun": 0, "tolx": 0, "tolfunhist": 0}
    es = cma.CMAEvolutionStrategy(x0, 1.0, options)
    for _ in range(warmup):
        X = es.ask()
        es.tell(X, list(sphere(np.asarray(X))))
    n, start = 0, time.perf_counter()
    for _ in range(iterations):
        X = es.ask()
        n += len(X)
        es.tell(X, list(sphere(np.asarray(X))))
    return time.perf_counter() - start, n, es.popsize


def _objective_alone(d: int, points: int, evaluations: int) -> float:
    """Seconds that ``evaluations`` evaluations of the sphere in batches of ``points`` take
    (what the optimizers' timings include besides their own work)."""
    X = np.random.default_rng(0).standard_normal((points, d))
    start = time.perf_counter()
    for _ in range(max(1, evaluations // points)):
        sphere(X)
    return time.perf_counter() - start


def measure(d: int, iterations: int, warmup: int) -> dict[str, float]:
    """Microseconds per evaluation of each solver at ``d`` (medians of three rounds)."""
    times: dict[str, list[float]] = {s: [] for s in SOLVERS}
    for seed in range(3):
        for solver in SOLVERS:
            if solver == "CMA-ES (pycma)":
                seconds, n, points = _cma(d, iterations, warmup, seed)
            else:
                seconds, n, points = _zovh(solver.split()[1], d, iterations, warmup, seed)
            seconds -= _objective_alone(d, points, n)
            times[solver].append(1e6 * seconds / n)
    return {s: float(np.median(v)) for s, v in times.items()}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_arguments(parser, NAME)
    parser.add_argument(
        "--dims", type=int, nargs="+", default=[10, 20, 40, 100], help="default 10 20 40 100"
    )
    parser.add_argument("--iterations", type=int, default=300, help="timed per run (300)")


def run(args: argparse.Namespace) -> int:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - an optional dependency
        threadpool_limits = None
    dims = [10, 20] if args.quick else list(args.dims)
    iterations, warmup = (30, 5) if args.quick else (args.iterations, 50)
    report = Report(args, NAME, "Cost of the curvature models per evaluation")
    report.text(__doc__.split("\n\n", 1)[1])
    data = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if threadpool_limits is not None:
            with threadpool_limits(1):
                data = {d: measure(d, iterations, warmup) for d in dims}
        else:
            data = {d: measure(d, iterations, warmup) for d in dims}
    rows = [[d, *(fmt(data[d][s]) for s in SOLVERS)] for d in dims]
    report.table(["d", *(f"{s} (us / evaluation)" for s in SOLVERS)], rows, "Optimizer time")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    for solver in SOLVERS:
        ax.plot(dims, [data[d][solver] for d in dims], marker="o", label=solver)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("d")
    ax.set_ylabel("optimizer time per evaluation (us)")
    ax.legend(fontsize=8)
    report.figure(fig)
    settings = {"dims": dims, "iterations": iterations, "warmup": warmup}
    path = report.write(settings, {str(d): v for d, v in data.items()})
    print(path.read_text())
    return 0
