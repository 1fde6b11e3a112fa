"""Wall-clock speedup of parallel evaluation (``workers``) for a slow objective.

The objective sleeps a fixed time per point (default 50 ms), standing for a simulation; each
row runs the same ZoVH iterations serially or with a process pool and reports seconds per
iteration and the speedup over serial. With ``K`` points per iteration and ``w`` workers the
ideal speedup is ``K / ceil(K / w)``: 2 for ``K = 4`` and two workers.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time

import numpy as np

from .._driver.minimize import minimize


def sleepy_sphere(x: np.ndarray, seconds: float) -> float:
    """``|x|^2`` after sleeping ``seconds`` (a module-level function, so it pickles)."""
    time.sleep(seconds)
    return float(x @ x)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sleep", type=float, default=0.05, help="seconds per evaluation")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--directions", type=int, default=4, help="K, points per iteration")
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--dim", type=int, default=1000)


def run(args: argparse.Namespace) -> int:
    K = args.directions
    print(
        f"# workers benchmark: objective sleeps {args.sleep * 1e3:.0f} ms, K = {K}, "
        f"{args.iterations} iterations of ZoVH, d = {args.dim}"
    )
    print(f"# python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.machine()}")
    print()
    print("| workers | wall s | s / iteration | speedup | ideal |")
    print("|---:|---:|---:|---:|---:|")
    serial = None
    for w in args.workers:
        options = {"maxiter": args.iterations, "n_directions": K, "learning_rate": 1e-4}
        start = time.perf_counter()
        minimize(
            sleepy_sphere,
            np.ones(args.dim),
            args=(args.sleep,),
            rng=0,
            workers=None if w == 1 else w,
            options=options,
        )
        wall = time.perf_counter() - start
        serial = wall if serial is None else serial
        ideal = K / math.ceil(K / w)
        print(
            f"| {w} | {wall:.2f} | {wall / args.iterations:.3f} | {serial / wall:.2f} | "
            f"{ideal:.2f} |"
        )
    return 0
