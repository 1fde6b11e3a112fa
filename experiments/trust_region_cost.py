"""The trust region's own time per ask (`zovh_opt._driver.trust_region`), the objective excluded.

A sphere with relative noise 1e-3 from 0, the region driven directly until it ends; the median
and largest time of an ask and its tell, per d (2, 5, 10, 20). Quoted on the theory page, *The
trust region*.

    OMP_NUM_THREADS=1 python experiments/trust_region_cost.py
"""

from __future__ import annotations

import time

import numpy as np

from zovh_opt._driver.trust_region import TrustRegionPhase

if __name__ == "__main__":
    for d in (2, 5, 10, 20):
        rng = np.random.default_rng(0)

        def f(x, rng=rng):
            return float(np.sum((x - 1.5) ** 2) + 1.0) * (1 + 1e-3 * rng.standard_normal())

        region = TrustRegionPhase(np.zeros(d), f(np.zeros(d)), 1e-3)
        times = []
        while not region.done:
            start = time.perf_counter()
            points = [region.point(i) for i in range(region.size())]
            asked = time.perf_counter()
            values = [f(p) for p in points]
            told = time.perf_counter()
            region.tell(values)
            times.append(asked - start + time.perf_counter() - told)
        print(f"d = {d}: {len(times)} asks, {region.nfev} evaluations; own time per ask median "
              f"{1e3 * np.median(times):.2f} ms, largest {1e3 * max(times):.2f} ms")  # fmt: skip
