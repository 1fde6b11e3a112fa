"""Mild noise at d = 6, 8, 10 on problems that are not COCO's: the default's returned point.

Rosenbrock from its standard start, a separable ellipsoid of condition 1e6 from 0, and a
least-squares fit of ``d / 2`` decaying exponentials to 40 exact samples from 1; relative noise
``f (1 + 1e-3 N)`` (seeds 0-4) and deterministic rough noise ``f (1 + 1e-3 r(x))`` (``r`` a hash of
``x`` in ``[-1, 1]``), ``100 d`` evaluations; the median and largest true gap of the returned
point over the start's. Run it on two commits to compare them. Quoted on the theory page, *The
region at d = 10, its fit damped*.

    python experiments/mild_noise_fits.py        (about a minute)
"""

from __future__ import annotations

import hashlib
import warnings

import numpy as np

import zovh_opt
from zovh_opt.problems import rosenbrock


def ellipsoid(x: np.ndarray) -> float:
    d = x.shape[0]
    return float(np.sum(10 ** (6 * np.arange(d) / (d - 1)) * (x - 0.5) ** 2))


def exponential_fit(d: int):
    t = np.linspace(0, 4, 40)
    true = np.random.default_rng(1).uniform(0.5, 1.5, d)
    k = d // 2

    def model(p: np.ndarray) -> np.ndarray:
        return sum(p[i] * np.exp(-p[k + i] * t) for i in range(k))

    samples = model(true)
    return lambda p: float(np.sum((model(p) - samples) ** 2))


def rough(x: np.ndarray) -> float:
    """A deterministic value in [-1, 1] for each point (a solver's tolerance)."""
    digest = hashlib.sha1(np.asarray(x, dtype=float).tobytes()).hexdigest()[:8]
    return int(digest, 16) / 2**32 * 2 - 1


def problems():
    for d in (6, 8, 10):
        start = np.ones(d)
        start[::2] = -1.2
        yield f"Rosenbrock {d}", lambda x: float(rosenbrock(x)), start
        yield f"ellipsoid {d}", ellipsoid, np.zeros(d)
        yield f"exp. fit {d}", exponential_fit(d), np.ones(d)


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    for kind in ("relative", "rough"):
        print(f"{kind} noise 1e-3      median gap   largest")
        for name, f, x0 in problems():
            gaps = []
            for seed in range(5):
                draws = np.random.default_rng(seed)

                def noisy(x, f=f, draws=draws, kind=kind):
                    e = draws.standard_normal() if kind == "relative" else rough(x)
                    return f(x) * (1 + 1e-3 * e)

                res = zovh_opt.minimize(noisy, x0, rng=seed, options={"maxfev": 100 * len(x0)})
                gaps.append(f(np.asarray(res.x)) / f(x0))
            print(f"  {name:15s} {np.median(gaps):14.1e} {max(gaps):9.1e}")
