"""The optimizer's own time per evaluation of the default at d = 1e6 (the run's time less the
time in ``fun``), for one run; the memory issue's comparison with an earlier commit:

    git worktree add /tmp/before 1538709      # the commit to compare with
    for r in 1 2 3; do
        PYTHONPATH=/tmp/before python experiments/own_time.py default before
        python experiments/own_time.py default after
        python experiments/own_time.py seeds after
    done

Each line: the label, the ``directions`` option (``default``: not passed), the evaluations
and the own time in microseconds per evaluation (sphere, ``x0 = 1``, 20 iterations, rng=0).
"""

import sys
import time

import numpy as np

import zovh_opt


def main(directions: str, label: str, d: int = 1_000_000) -> None:
    options = {"maxiter": 20}
    if directions != "default":
        options["directions"] = directions
    spent = [0.0]

    def sphere(x):
        start = time.perf_counter()
        value = float(x @ x)
        spent[0] += time.perf_counter() - start
        return value

    start = time.perf_counter()
    res = zovh_opt.minimize(sphere, np.ones(d), rng=0, options=options)
    own = time.perf_counter() - start - spent[0]
    print(f"{label} {directions} nfev={res.nfev} own_us_per_eval={own / res.nfev * 1e6:.0f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
