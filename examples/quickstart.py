"""Quickstart: minimize Rosenbrock in d = 1000 from values alone, with ZoVH and ZO-SGD.

Run:  python examples/quickstart.py            (about 10 s on a laptop core)
      python examples/quickstart.py --quick    (a few seconds, for CI)
"""

import argparse
import time

import numpy as np

import zovh_opt
from zovh_opt.problems import rosenbrock

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--dim", type=int, default=1000)
parser.add_argument("--maxfev", type=int, default=30_001)
parser.add_argument("--quick", action="store_true", help="3000 evaluations only")
args = parser.parse_args()
maxfev = 3_001 if args.quick else args.maxfev

x0 = np.random.default_rng(1).standard_normal(args.dim)  # the paper's start, x0 ~ N(0, I)
print(f"Rosenbrock, d = {args.dim}, f(x0) = {rosenbrock(x0):.6g}, budget {maxfev} evaluations\n")

# Rosenbrock from N(0, I) has gradients of order 1e3 per coordinate: the learning rates are
# small, as in the paper's grid. ZoVH's effective gradient step is learning_rate / regularization.
runs = {
    "zovh": {"learning_rate": 1e-7, "regularization": 0.1},
    "zo-sgd": {"learning_rate": 3e-7},
}
for method, options in runs.items():
    start = time.perf_counter()
    res = zovh_opt.minimize(
        rosenbrock,
        x0,
        method=method,
        rng=0,
        options={**options, "maxfev": maxfev, "maxiter": 10**6},
    )
    seconds = time.perf_counter() - start
    print(
        f"{method:7s} f(x) = {res.fun:10.6g}   nit = {res.nit:6d}   nfev = {res.nfev}   "
        f"{seconds:5.1f} s   {res.message}"
    )
