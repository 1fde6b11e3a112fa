"""Drive ZoVH yourself with ask/tell, checkpoint the run, and resume it bit for bit.

The pattern for objectives evaluated outside Python's call stack: a training loop, a job queue,
a cluster. It runs ZoVH by ask/tell, stops half way as if the process had been killed, resumes
from the checkpoint and checks that the resumed run ends exactly where an uninterrupted one
does.

Run:  python examples/resume_from_checkpoint.py            (30000 evaluations, about 2 s)
      python examples/resume_from_checkpoint.py --quick    (3000, about 1 s, for CI)
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

from zovh_opt import Optimizer
from zovh_opt.problems import rosenbrock


def evaluate(points: np.ndarray) -> list[float]:
    """Stand-in for sending the points to workers and collecting their values."""
    return [float(rosenbrock(p)) for p in points]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3000 evaluations only")
    args = parser.parse_args()
    maxfev = 3_001 if args.quick else 30_001
    options = {"learning_rate": "auto", "maxfev": maxfev, "maxiter": 10**6}
    x0 = np.random.default_rng(1).standard_normal(200)
    checkpoint = Path(tempfile.mkdtemp()) / "zovh.npz"

    opt = Optimizer(x0, "zovh", options=options, rng=0)
    while not opt.done and opt.nfev < maxfev // 2:
        opt.tell(evaluate(opt.ask()))
    opt.save(checkpoint)  # ... the process dies here ...
    print(f"checkpoint at nit {opt.nit}, nfev {opt.nfev}, learning rate {opt.learning_rate:g}")

    resumed = Optimizer.load(checkpoint)
    while not resumed.done:
        resumed.tell(evaluate(resumed.ask()))
    res = resumed.result()
    print(f"resumed run: f = {res.fun:.6g} after {res.nfev} evaluations ({res.message})")

    whole = Optimizer(x0, "zovh", options=options, rng=0)
    while not whole.done:
        whole.tell(evaluate(whole.ask()))
    same = np.array_equal(whole.result().x, res.x)
    print(f"uninterrupted run: f = {whole.result().fun:.6g}; same x bit for bit: {same}")
    if not same:
        raise SystemExit("resume was not bit-identical")


if __name__ == "__main__":
    main()
