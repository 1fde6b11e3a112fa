"""The option ``new_starts`` on multimodal problems that are not COCO's, with the widened
starts' pairs grown (the package's `zovh_opt._new_starts.widened_pairs`) and with the first
run's pairs (before 2026-11-27).

    python tools/prototypes/new_starts_elsewhere.py

Each problem runs from 10 points uniform in its box (seeds 0-9; the box is given as
``bounds`` where the name says so), ``maxfev = 1000 d``, ``new_starts = 100``; it prints the
median and range of the final ``fun`` (every minimum is 0). Used for the theory page's
*Widened new starts with more pairs*. Not a part of zovh_opt.
"""

import statistics
import warnings

import numpy as np

import zovh_opt
from zovh_opt import _new_starts


def rastrigin(x):
    return float(10 * len(x) + np.sum(x * x - 10 * np.cos(2 * np.pi * x)))


def ackley(x):
    d = len(x)
    return float(
        -20 * np.exp(-0.2 * np.sqrt(np.sum(x * x) / d))
        - np.exp(np.sum(np.cos(2 * np.pi * x)) / d)
        + 20
        + np.e
    )


def griewank(x):
    return float(1 + np.sum(x * x) / 4000 - np.prod(np.cos(x / np.sqrt(np.arange(1, len(x) + 1)))))


def schwefel(x):
    return float(418.9829 * len(x) - np.sum(x * np.sin(np.sqrt(np.abs(x)))))


def levy(x):
    w = 1 + (x - 1) / 4
    inner = np.sum((w[:-1] - 1) ** 2 * (1 + 10 * np.sin(np.pi * w[:-1] + 1) ** 2))
    last = (w[-1] - 1) ** 2 * (1 + np.sin(2 * np.pi * w[-1]) ** 2)
    return float(np.sin(np.pi * w[0]) ** 2 + inner + last)


def step(x):
    return float(np.sum(np.floor(x + 0.5) ** 2))


PROBLEMS = [  # name, f, d, half-width of the box of starts
    ("Rastrigin", rastrigin, 10, 4.0),
    ("Rastrigin", rastrigin, 20, 4.0),
    ("Rastrigin, box", rastrigin, 10, 5.12),
    ("Ackley", ackley, 10, 15.0),
    ("Griewank", griewank, 20, 300.0),
    ("Schwefel, box", schwefel, 10, 500.0),
    ("Levy", levy, 10, 5.0),
    ("step", step, 20, 50.0),
]


def main():
    grown = _new_starts.widened_pairs
    for name, f, d, half in PROBLEMS:
        row = []
        for label, rule in (("first run's pairs", lambda pairs, widening: pairs), ("grown", grown)):
            _new_starts.widened_pairs = rule
            values = []
            for seed in range(10):
                x0 = np.random.default_rng(seed).uniform(-half, half, d)
                bounds = [(-half, half)] * d if "box" in name else None
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = zovh_opt.minimize(
                        f, x0, rng=seed, bounds=bounds,
                        options={"maxfev": 1000 * d, "new_starts": 100},
                    )  # fmt: skip
                values.append(res.fun)
            row.append(
                f"{label}: {statistics.median(values):.3g} [{min(values):.3g}, {max(values):.3g}]"
            )
        _new_starts.widened_pairs = grown
        print(f"{name}, d = {d}: " + " | ".join(row), flush=True)


if __name__ == "__main__":
    main()
