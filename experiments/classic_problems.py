"""Classic small problems off COCO: the default against the trust region's opening turned off.

Twelve problems at d = 2 and 3 from their standard starts (More, Garbow and Hillstrom's
Rosenbrock, Freudenstein-Roth, Powell and Brown badly scaled, Beale, Jennrich-Sampson, helical
valley, Bard, Gaussian, Box 3-D; Himmelblau; a shifted sphere), noiseless, under relative
noise ``f (1 + 1e-3 N)`` and under a deterministic roughness ``f (1 + 1e-3 r(x))`` (``r`` a
hash of ``x``), seeds 0-2, ``100 (d + 1)`` evaluations. A run solves at ``tau`` where
``f - f_L <= tau (f(x0) - f_L)`` (``f_L`` the known minimum or the lowest value the run saw):
anytime within ``10 (d + 1)`` evaluations at ``1e-3``, the returned point at ``1e-3`` and
``1e-5``. Quoted on the theory page, *The region opens deterministic runs at d <= 3*.

    python experiments/classic_problems.py [-v]      (about 20 s)
"""

from __future__ import annotations

import dataclasses
import sys
import warnings
import zlib
from collections.abc import Callable

import numpy as np

import zovh_opt
from zovh_opt import tuning

OPENING_OFF = dataclasses.replace(
    tuning.DEFAULT,
    dimensions=dataclasses.replace(tuning.DEFAULT.dimensions, OPENING_MAX_DIMENSION=0),
)


def squares(*residuals: Callable) -> Callable:
    return lambda x: float(sum(r(x) ** 2 for r in residuals))


def helical(x):
    theta = np.arctan(x[1] / x[0]) / (2 * np.pi) + (0.5 if x[0] < 0 else 0.0) if x[0] else 0.25
    return float(100 * (x[2] - 10 * theta) ** 2 + 100 * (np.hypot(x[0], x[1]) - 1) ** 2 + x[2] ** 2)


BARD_Y = [0.14, 0.18, 0.22, 0.25, 0.29, 0.32, 0.35, 0.39, 0.37, 0.58, 0.73, 0.96, 1.34, 2.10, 4.39]
GAUSS_Y = [0.0009, 0.0044, 0.0175, 0.0540, 0.1295, 0.2420, 0.3521, 0.3989]
GAUSS_Y = GAUSS_Y + GAUSS_Y[-2::-1]


def bard(x):
    return float(
        sum(
            (y - (x[0] + i / ((16 - i) * x[1] + min(i, 16 - i) * x[2]))) ** 2
            for i, y in enumerate(BARD_Y, start=1)
        )
    )


def gaussian(x):
    t = (8 - np.arange(1, 16)) / 2
    return float(np.sum((x[0] * np.exp(-x[1] * (t - x[2]) ** 2 / 2) - GAUSS_Y) ** 2))


def box3d(x):
    t = 0.1 * np.arange(1, 11)
    e = np.exp(-t * x[0]) - np.exp(-t * x[1]) - x[2] * (np.exp(-t) - np.exp(-10 * t))
    return float(np.sum(e**2))


PROBLEMS = [  # name, f, x0, the known minimum
    ("Rosenbrock", lambda x: float(100 * (x[1] - x[0] ** 2) ** 2 + (1 - x[0]) ** 2), [-1.2, 1], 0),
    (
        "Freudenstein-Roth",
        squares(
            lambda x: -13 + x[0] + ((5 - x[1]) * x[1] - 2) * x[1],
            lambda x: -29 + x[0] + ((x[1] + 1) * x[1] - 14) * x[1],
        ),
        [0.5, -2],
        0,
    ),
    (
        "Powell badly scaled",
        squares(lambda x: 1e4 * x[0] * x[1] - 1, lambda x: np.exp(-x[0]) + np.exp(-x[1]) - 1.0001),
        [0, 1],
        0,
    ),
    (
        "Brown badly scaled",
        squares(lambda x: x[0] - 1e6, lambda x: x[1] - 2e-6, lambda x: x[0] * x[1] - 2),
        [1, 1],
        0,
    ),
    (
        "Beale",
        squares(
            *(
                lambda x, i=i, y=y: y - x[0] * (1 - x[1] ** i)
                for i, y in ((1, 1.5), (2, 2.25), (3, 2.625))
            )
        ),  # fmt: skip
        [1, 1],
        0,
    ),
    (
        "Jennrich-Sampson",
        squares(
            *(lambda x, i=i: 2 + 2 * i - np.exp(i * x[0]) - np.exp(i * x[1]) for i in range(1, 11))
        ),  # fmt: skip
        [0.3, 0.4],
        124.362182,
    ),
    ("helical valley", helical, [-1, 0, 0], 0),
    ("Bard", bard, [1, 1, 1], 8.21487e-3),
    ("Gaussian", gaussian, [0.4, 1, 0], 1.12793e-8),
    ("Box 3-D", box3d, [0, 10, 20], 0),
    (
        "Himmelblau",
        lambda x: float((x[0] ** 2 + x[1] - 11) ** 2 + (x[0] + x[1] ** 2 - 7) ** 2),
        [0, 0],
        0,
    ),
    ("shifted sphere", lambda x: float(np.sum((x - np.arange(1.0, 4.0)) ** 2)), [0, 0, 0], 0),
]


def noisy(f: Callable, kind: str, rng: np.random.Generator) -> Callable:
    def fun(x):
        v = f(np.asarray(x, dtype=float))
        if kind == "relative":
            return v * (1 + 1e-3 * rng.standard_normal())
        if kind == "rough":
            return v * (1 + 1e-3 * (zlib.crc32(np.asarray(x, dtype=float).tobytes()) / 2**31 - 1))
        return v

    return fun


def run(name, f, x0, f_min, kind, seed, settings) -> tuple[float, float]:
    """The anytime and returned gaps of one run, over f(x0)'s."""
    x0, values = np.asarray(x0, dtype=float), []
    d = x0.shape[0]
    fun = noisy(f, kind, np.random.default_rng(seed))

    def counted(x):
        values.append(f(np.asarray(x, dtype=float)))
        return fun(x)

    with tuning.using(settings), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = zovh_opt.minimize(counted, x0, rng=seed, options={"maxfev": 100 * (d + 1)})
    low = min(f_min, min(values))
    start = f(x0) - low
    return (min(values[: 10 * (d + 1)]) - low) / start, (f(res.x) - low) / start


def main() -> None:
    verbose = "-v" in sys.argv
    print("| noise | variant | anytime 1e-3 | returned 1e-3 | returned 1e-5 |")
    print("|---|---|---|---|---|")
    for kind in ("none", "relative", "rough"):
        for variant, settings in (("default", tuning.DEFAULT), ("opening off", OPENING_OFF)):
            solved, runs = np.zeros(3), 0
            for name, f, x0, f_min in PROBLEMS:
                for seed in range(3):
                    anytime, gap = run(name, f, x0, f_min, kind, seed, settings)
                    solved += [anytime <= 1e-3, gap <= 1e-3, gap <= 1e-5]
                    runs += 1
                    if verbose:
                        print(f"  {name} seed {seed}: anytime {anytime:.1e}, returned {gap:.1e}")
            print(f"| {kind} | {variant} | " + " | ".join(f"{v / runs:.2f}" for v in solved) + " |")


if __name__ == "__main__":
    main()
