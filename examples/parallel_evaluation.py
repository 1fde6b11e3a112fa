"""Evaluate the K points of each iteration in parallel: process pool, thread pool, vectorized.

The objective stands for an expensive simulation: it sleeps for a while, then returns a
Rosenbrock value. The same ZoVH run (same seed) is made serially, with ``workers=2`` (a process
pool created by ``minimize``), and with ``workers=pool.map`` of a thread pool (any map-like,
for example a Dask client's, works the same way). All runs end at the same point; only the
wall-clock time differs.

Run:  python examples/parallel_evaluation.py            (50 ms per evaluation, 20 iterations, 8 s)
      python examples/parallel_evaluation.py --quick    (5 ms, about 1.5 s, for CI)
"""

import argparse
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import zovh_opt
from zovh_opt.problems import rosenbrock

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--quick", action="store_true", help="a faster objective")
parser.add_argument("--seconds", type=float, default=0.05, help="time per evaluation")
args = parser.parse_args()
DELAY = 0.005 if args.quick else args.seconds


def simulation(x: np.ndarray) -> float:
    """An expensive objective: module-level, so that a process pool can pickle it."""
    time.sleep(DELAY)
    return float(rosenbrock(x))


def main() -> None:
    x0 = np.zeros(100)
    options = {"learning_rate": 1e-5, "n_directions": 4, "maxiter": 20}
    print(f"{DELAY * 1000:.0f} ms per evaluation, K = 4 points per iteration, 20 iterations\n")
    results = {}
    with ThreadPoolExecutor(max_workers=4) as threads:
        for label, workers in [("serial", None), ("workers=2", 2), ("threads.map", threads.map)]:
            start = time.perf_counter()
            res = zovh_opt.minimize(simulation, x0, rng=0, workers=workers, options=options)
            results[label] = res
            print(f"{label:12s} {time.perf_counter() - start:6.2f} s   f = {res.fun:.6g}")
    same = all(np.array_equal(r.x, results["serial"].x) for r in results.values())
    print(f"\nsame x in every run: {same}")
    if not same:
        raise SystemExit("parallel evaluation changed the run")


if __name__ == "__main__":  # needed for process pools on platforms that spawn
    main()
