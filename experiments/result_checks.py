"""What a run returns and says (issue #67), on the cases the issue measured.

Walls of large finite values beside a quadratic's minimum (d = 4, 10, 30; walls at 0.9 and
0.5; with and without bounds; float64 and float32; seeds 0-7): successes more than 1e-6
(float32: 1e-4) of the start's gap above the minimum. A fuzz of 30 float32 boxes of mixed
widths: the same count. ``hess_inv``'s diagonal against the true ``1/a`` on diagonal
quadratics (d = 1000, condition 1e6; d = 100, 1e4): the log-correlation. ``maxtime=0.3``
with a noisy objective of 10 ms a call: the wall-clock time of the call.

    python experiments/result_checks.py
"""

from __future__ import annotations

import time
import warnings

import numpy as np

import zovh_opt


def walls() -> None:
    print("walls: d, wall, bounded, dtype: successes above the tolerance / successes / runs")
    for d in (4, 10, 30):
        for wall in (0.9, 0.5):
            for bounded in (False, True):
                for dtype, tolerance in ((np.float64, 1e-6), (np.float32, 1e-4)):

                    def f(x, wall=wall):
                        x = np.asarray(x, dtype=np.float64)
                        return 1e10 if x[0] > wall else float(np.sum((x - 1) ** 2))

                    x0, best = np.zeros(d, dtype=dtype), (1 - wall) ** 2
                    bounds = [(-2.0, 2.0)] * d if bounded else None
                    bad = successes = 0
                    gaps = []
                    for seed in range(8):
                        res = zovh_opt.minimize(f, x0, bounds=bounds, rng=seed)
                        gap = (res.fun - best) / (f(x0) - best)
                        gaps.append(gap)
                        successes += res.success
                        bad += bool(res.success and gap > tolerance)
                    print(f"  {d:3d} {wall} {bounded!s:5} {dtype.__name__}: {bad} / "
                          f"{successes} / 8, median gap {np.median(gaps):.1e}")  # fmt: skip


def float32_boxes() -> None:
    rng = np.random.default_rng(7)
    bad = successes = 0
    gaps = []
    for k in range(30):
        d = int(rng.integers(2, 12))
        width = 10 ** rng.uniform(-3, np.log10(3), d)
        low = rng.uniform(-2, 2, d)
        centre = low + rng.uniform(0.1, 0.9, d) * width

        def f(x, centre=centre):
            return float(np.sum((np.asarray(x, dtype=np.float64) - centre) ** 2)) + 63.0

        x0 = (low + rng.uniform(0, 1, d) * width).astype(np.float32)
        res = zovh_opt.minimize(f, x0, bounds=list(zip(low, low + width, strict=True)), rng=k)
        gap = (res.fun - 63.0) / (f(x0) - 63.0)
        gaps.append(gap)
        successes += res.success
        bad += bool(res.success and gap > 1e-4)
    print(f"float32 boxes: {bad} of {successes} successes above 1e-4 of the gap (30 runs), "
          f"median gap {np.median(gaps):.1e}")  # fmt: skip


def hess_inv() -> None:
    for d, condition in ((1000, 1e6), (100, 1e4)):
        rng = np.random.default_rng(0)
        a = 10 ** rng.uniform(0, np.log10(condition), d)
        res = zovh_opt.minimize(lambda x, a=a: float(np.sum(a * x * x)), rng.standard_normal(d),
                                rng=0, options={"maxfev": 30_000})  # fmt: skip
        correlation = np.corrcoef(np.log(res.hess_inv.diagonal()), -np.log(a))[0, 1]
        print(f"hess_inv, d = {d}, condition {condition:.0e}: log-correlation {correlation:.3f}")


def maxtime() -> None:
    for d in (4, 40):
        rng = np.random.default_rng(0)

        def slow(x, rng=rng):
            time.sleep(0.01)
            return float(np.sum(x**2)) + 0.1 * rng.standard_normal()

        start = time.perf_counter()
        res = zovh_opt.minimize(slow, np.ones(d), rng=0, options={"maxtime": 0.3})
        print(f"maxtime 0.3, d = {d}: {time.perf_counter() - start:.3f} s, {res.nfev} calls")


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    walls()
    float32_boxes()
    hess_inv()
    maxtime()
