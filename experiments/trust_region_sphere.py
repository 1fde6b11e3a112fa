"""The trust region alone on a sphere with relative noise: where it stalls at d = 10.

``TrustRegionPhase`` driven directly (no run around it) on ``|x - c|^2 (1 + 1e-3 N)``, ``c``
uniform in ``[-4, 4]^d``, from 0; for seeds 0-3 at d = 5 and 10, the gap over ``|c|^2`` at
``5 d``, ``10 d`` and ``20 d`` evaluations, and the model Hessian's lowest and highest
eigenvalues at ``5 d`` (the sphere's: 2 and 2). Quoted on the theory page, *The region at d =
10, its fit damped*.

    python experiments/trust_region_sphere.py        (a few seconds)
"""

from __future__ import annotations

import numpy as np

from zovh_opt._driver.trust_region import TrustRegionPhase

LEVEL = 1e-3


def run(d: int, seed: int) -> tuple[list[float], tuple[float, float]]:
    rng = np.random.default_rng(seed)
    centre = rng.uniform(-4, 4, d)

    def f(x: np.ndarray) -> float:
        return float(np.sum((x - centre) ** 2)) * (1 + LEVEL * rng.standard_normal())

    f0 = f(np.zeros(d))
    region = TrustRegionPhase(np.zeros(d), f0, LEVEL * abs(f0))
    marks, gaps, eigenvalues = [5 * d, 10 * d, 20 * d], [], (np.nan, np.nan)
    while len(gaps) < len(marks):
        if region.done:
            gaps.extend([gaps[-1] if gaps else np.nan] * (len(marks) - len(gaps)))
            break
        n = region.size()
        region.tell([f(region.point(i)) for i in range(n)])
        while len(gaps) < len(marks) and region.nfev >= marks[len(gaps)]:
            gaps.append(float(np.sum((region.x - centre) ** 2) / np.sum(centre**2)))
            if len(gaps) == 1:
                low_high = np.linalg.eigvalsh(region.hessian)
                eigenvalues = (float(low_high[0]), float(low_high[-1]))
    return gaps, eigenvalues


if __name__ == "__main__":
    print(" d  seed   gap at 5 d   10 d    20 d    Hessian at 5 d: lowest  highest")
    for d in (5, 10):
        for seed in range(4):
            gaps, (low, high) = run(d, seed)
            print(
                f"{d:2d}  {seed:4d}   {gaps[0]:10.1e} {gaps[1]:7.1e} {gaps[2]:7.1e}"
                f"   {low:22.1f} {high:8.1f}"
            )
