"""Additive noise at small d: the default against the method alone (no trust region).

A sphere ``|x - 1.5|^2 + 1`` from 0 (12.25 above its minimum) plus Gaussian noise of standard
deviation 0.1, 0.3 and 0.6, 2000 evaluations, seeds 0-7; the median and largest noise-free
gap of the returned point, the default's and with the region off (``TrustRegion.MILD = 0``).
Quoted on the theory page, *Noise that stays as f falls*.

    python experiments/additive_noise.py        (about a minute)
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np

import zovh_opt
from zovh_opt import tuning

REGION_OFF = dataclasses.replace(
    tuning.DEFAULT, trust_region=dataclasses.replace(tuning.DEFAULT.trust_region, MILD=0.0)
)


def gaps(sigma: float, d: int, settings: tuning.Tuning) -> list[float]:
    out = []
    with tuning.using(settings):
        for seed in range(8):
            noise = np.random.default_rng(100 + seed)

            def f(x, noise=noise):
                return float(np.sum((x - 1.5) ** 2) + 1.0) + sigma * noise.standard_normal()

            res = zovh_opt.minimize(f, np.zeros(d), rng=seed, options={"maxfev": 400 * d})
            out.append(float(np.sum((np.asarray(res.x) - 1.5) ** 2)))
    return out


if __name__ == "__main__":
    dims = [int(v) for v in sys.argv[1:]] or [2, 3, 5]
    print(" d  noise   default: median  largest   region off: median  largest")
    for d in dims:
        for sigma in (0.1, 0.3, 0.6):
            a, b = gaps(sigma, d, tuning.DEFAULT), gaps(sigma, d, REGION_OFF)
            print(
                f"{d:2d}  {sigma:5.1f}   {np.median(a):15.1e}  {max(a):7.1e}"
                f"   {np.median(b):18.1e}  {max(b):7.1e}"
            )
