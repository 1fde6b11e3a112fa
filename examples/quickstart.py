"""Quickstart: minimize Rosenbrock in d = 1000 from values alone, with ZoVH and ZO-SGD.

Rosenbrock's minimum is f = 0 at x = (1, ..., 1); from the paper's start x0 ~ N(0, I) f(x0) is
about 4e5. Both methods run at their defaults (no learning rate to choose) on the same budget
of evaluations, which a problem this hard uses up: the runs end with status 1, "Maximum number
of function evaluations has been exceeded", which is the normal end of a budget-limited run
(raise ``maxfev`` to go on). ``res.x`` is then the best point evaluated and ``res.fun`` its value.
``success`` is False for such an end: the run stopped at its budget, not at a minimum.

Compare the runs by ``f``, not by ``|x - 1|``: Rosenbrock's minimum lies at the end of a long
curved valley whose floor is low everywhere, so a point far down the valley (lower f) can be
farther from ``x = 1`` than a point that has not reached the valley yet.

Run:  python examples/quickstart.py            (about 4 s)
      python examples/quickstart.py --quick    (about 1 s, for CI)
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
print(
    f"Rosenbrock, d = {args.dim}: f(x0) = {rosenbrock(x0):.6g}, minimum f = 0 at x = 1; "
    f"budget {maxfev} evaluations\n"
)
# Defaults: the step rule learning_rate="auto" needs no tuning. The paper's Algorithm 1 with a
# fixed rate is options={"learning_rate": 1e-7} (the paper's grid for this problem).
for method in ("zovh", "zo-sgd"):
    start = time.perf_counter()
    res = zovh_opt.minimize(rosenbrock, x0, method=method, rng=0, options={"maxfev": maxfev})
    seconds = time.perf_counter() - start
    print(
        f"{method:7s} f(x) = {res.fun:10.6g}   |x - 1| = {np.linalg.norm(res.x - 1):8.4g}   "
        f"nit = {res.nit:6d}   nfev = {res.nfev}   {seconds:5.1f} s\n"
        f"        status {res.status}: {res.message}"
    )
print(
    "\nBoth runs ended at their budget (success=False): raise maxfev to go on. Judge them by f:"
    "\nin Rosenbrock's curved valley a lower f can lie farther from x = 1."
)
