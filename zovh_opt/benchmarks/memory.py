"""memory: the default's peak memory and own time with held directions and without.

The default `zovh_opt.minimize` (the diagonal curvature model, ``P`` pairs, the pairs of
the ``N - 1 = 3`` earlier iterations reused) on the sphere, evaluated serially, from
``x0 = 1``, for a few iterations, with ``directions="vectors"`` (the ``N P`` directions
held) and ``"seeds"`` (none held: each point draws its direction, each step draws them
again span by span). "peak" is the peak memory that `tracemalloc` traces during the run, in
units of ``d`` floats of ``x0``'s dtype (``x0`` itself not counted: it is the caller's);
"own" is the run's time less the time spent in ``fun``, per evaluation, the median of
``rounds`` runs timed interleaved (vectors, seeds, vectors, ...; tracemalloc off), with the
smallest and largest in brackets. ``auto`` is the storage ``directions="auto"`` chooses.
"""

from __future__ import annotations

import argparse
import os
import time
import tracemalloc
import warnings

import numpy as np

from ._common import Report, add_common_arguments, pyplot

NAME = "memory"
STORAGES = ("vectors", "seeds")


def _run(d: int, dtype: str, storage: str, iterations: int, traced: bool) -> dict[str, float]:
    import zovh_opt

    spent = [0.0]

    def sphere(x: np.ndarray) -> float:
        start = time.perf_counter()
        value = float(x @ x)
        spent[0] += time.perf_counter() - start
        return value

    x0 = np.ones(d, dtype=dtype)
    options = {"maxiter": iterations, "directions": storage}
    if traced:
        tracemalloc.start()
    start = time.perf_counter()
    try:
        res = zovh_opt.minimize(sphere, x0, rng=0, options=options)
        peak = tracemalloc.get_traced_memory()[1] / x0.nbytes if traced else float("nan")
    finally:
        if traced:
            tracemalloc.stop()
    seconds = time.perf_counter() - start - spent[0]
    return {"own_us": 1e6 * seconds / res.nfev, "peak": peak, "nfev": res.nfev, "fun": res.fun}


def measure(d: int, dtype: str, iterations: int, rounds: int) -> dict[str, dict]:
    """Peak (d floats) and own time per evaluation (us) of each storage at ``d``; the runs
    of the two storages are checked to be the same (``fun`` and ``nfev``)."""
    from .._arrays.backend import ArraySpace
    from .._methods.zovh_preconditioned import PreconditionedZoVH, default_pairs

    out: dict[str, dict] = {s: {"own_us": []} for s in STORAGES}
    for storage in STORAGES:
        traced = _run(d, dtype, storage, iterations, traced=True)
        out[storage].update(peak=traced["peak"], fun=traced["fun"], nfev=traced["nfev"])
    if out["vectors"]["fun"] != out["seeds"]["fun"]:
        raise AssertionError(f"d = {d}: the storages' runs differ")
    for _ in range(rounds):
        for storage in STORAGES:
            out[storage]["own_us"].append(_run(d, dtype, storage, iterations, False)["own_us"])
    P = default_pairs(d)
    space = ArraySpace(np.ones(1, dtype=dtype))
    out["pairs"] = P
    out["auto"] = PreconditionedZoVH.storage_for(d, P, 4, space)
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_arguments(parser, NAME)
    parser.add_argument(
        "--dims", type=float, nargs="+", default=[1e5, 1e6, 2e6], help="default 1e5 1e6 2e6"
    )
    parser.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    parser.add_argument("--iterations", type=int, default=16, help="per run (16)")
    parser.add_argument("--rounds", type=int, default=2, help="timed runs per storage (2)")


def run(args: argparse.Namespace) -> int:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    dims = [20_000, 50_000] if args.quick else [int(d) for d in args.dims]
    iterations, rounds = (3, 1) if args.quick else (args.iterations, args.rounds)
    report = Report(args, NAME, "The default's peak memory and own time, held or drawn again")
    report.text(__doc__.split("\n\n", 1)[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = {d: measure(d, args.dtype, iterations, rounds) for d in dims}
    rows = []
    for d in dims:
        held = float(np.median(data[d]["vectors"]["own_us"]))
        for storage in STORAGES:
            times = data[d][storage]["own_us"]
            median = float(np.median(times))
            rows.append(
                [
                    f"{d:.0e}",
                    data[d]["pairs"],
                    storage + (" (auto)" if storage == data[d]["auto"] else ""),
                    f"{data[d][storage]['peak']:.1f}",
                    f"{median:.0f} [{min(times):.0f}, {max(times):.0f}]",
                    f"{median / held:.2f}",
                ]
            )
    report.table(
        ["d", "P", "directions", "peak (d floats)", "own us / evaluation", "/ held"],
        rows,
        f"{args.dtype}, {iterations} iterations",
    )
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    for storage in STORAGES:
        ax.plot(dims, [data[d][storage]["peak"] for d in dims], marker="o", label=storage)
    ax.set_xscale("log")
    ax.set_xlabel("d")
    ax.set_ylabel("peak traced memory (d floats)")
    ax.legend(fontsize=8)
    report.figure(fig)
    settings = {"dims": dims, "dtype": args.dtype, "iterations": iterations, "rounds": rounds}
    path = report.write(settings, {str(d): v for d, v in data.items()})
    print(path.read_text())
    return 0
