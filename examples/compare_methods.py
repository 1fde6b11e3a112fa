"""Compare the five methods on one problem at the same evaluation budget, with a plot.

ZoVH, ZoAR, ZO-SGD, HiZOO and MeZO minimize the Levy function in d = 1000 from x0 ~ N(0, I),
each at its defaults (the step rule ``learning_rate="auto"``) with the same budget of
evaluations. The script prints a table and saves a PNG of each run's lowest f estimate so far
against the evaluations spent, from ``res.trace`` (the mean of each iteration's values; the
running minimum, because the step rule's rejected trial steps raise single iterations'
means, and ``res.fun``, printed, is the lowest value seen).

Run:  python examples/compare_methods.py                   (about 10 s; writes compare_methods.png)
      python examples/compare_methods.py --quick --out /tmp/compare.png    (about 2 s, for CI)
Needs matplotlib.
"""

import argparse
import time

import matplotlib

matplotlib.use("Agg")  # write a file; no window
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import zovh_opt  # noqa: E402
from zovh_opt.problems import levy  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--dim", type=int, default=1000)
parser.add_argument("--maxfev", type=int, default=30_000)
parser.add_argument("--out", default="compare_methods.png", help="where to save the plot")
parser.add_argument("--quick", action="store_true", help="d = 200 and 3000 evaluations")
args = parser.parse_args()
d, maxfev = (200, 3_000) if args.quick else (args.dim, args.maxfev)

x0 = np.random.default_rng(1).standard_normal(d)
print(f"Levy, d = {d}, f(x0) = {levy(x0):.6g}, budget {maxfev} evaluations per method\n")
print(f"{'method':8s} {'f(x)':>10s} {'nit':>6s} {'nfev':>6s} {'rate':>8s} {'s':>5s}")
fig, ax = plt.subplots(figsize=(7, 4.5))
for method in zovh_opt.METHODS:
    start = time.perf_counter()
    res = zovh_opt.minimize(
        levy,
        x0,
        method=method,
        rng=0,
        options={"maxfev": maxfev},
    )
    seconds = time.perf_counter() - start
    print(
        f"{method:8s} {res.fun:10.5g} {res.nit:6d} {res.nfev:6d} "
        f"{res.learning_rate:8.1e} {seconds:5.1f}"
    )
    ax.semilogy(res.trace["nfev"], np.minimum.accumulate(res.trace["fun"]), label=method)
ax.set_xlabel("function evaluations")
ax.set_ylabel("lowest f estimate so far (mean of an iteration's values)")
ax.set_title(f"Levy, d = {d}, every method at its defaults")
ax.legend()
ax.grid(alpha=0.3)
fig.savefig(args.out, dpi=110, bbox_inches="tight")
print(f"\nplot saved to {args.out}")
