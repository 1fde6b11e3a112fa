"""A Monte-Carlo simulator as the objective: stocking 12 products against random demand.

Each call of the objective simulates 200 days of demand and returns the mean daily cost of
holding stock that was not sold and of losing sales that were not stocked: a noisy value,
which is what a simulation gives. For this model the expected cost is known exactly (demand is
normal, so the expected shortfall and surplus have closed forms), so the script can say how
far each answer is from the truth: the true gap of the returned point, and how far the
reported ``fun`` is from the true expected cost there.

zovh at its defaults notices the noise (two values at x0 differ), takes more pairs per
iteration (12 rather than 5 here: as many as leave 200 iterations), keeps its smoothing radius
above the noise, and reports an unbiased ``fun`` with its standard error; ``noisy=False`` shows what
the lowest noisy value would have reported. SciPy's Nelder-Mead and Powell get the same
budget.

Run:  python examples/newsvendor.py            (about 5 s)
      python examples/newsvendor.py --quick    (about 2 s, for CI)
"""

import argparse

import numpy as np
from scipy import optimize, stats

import zovh_opt

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--quick", action="store_true", help="a short run")
parser.add_argument("--seeds", type=int, default=4, help="runs of each method")
args = parser.parse_args()
maxfev, seeds = (800, 1) if args.quick else (5_000, args.seeds)

PRODUCTS, DAYS = 12, 200
rng = np.random.default_rng(2026)
MEAN = rng.uniform(50, 500, PRODUCTS)  # daily demand
SD = MEAN * rng.uniform(0.2, 0.5, PRODUCTS)
HOLD = rng.uniform(0.5, 2.0, PRODUCTS)  # cost of a unit stocked and not sold
SHORT = rng.uniform(2.0, 10.0, PRODUCTS)  # cost of a unit of demand not met


def expected_cost(x: np.ndarray) -> float:
    """The exact expected daily cost of stocking ``x`` (normal demand)."""
    z = (x - MEAN) / SD
    surplus = SD * (z * stats.norm.cdf(z) + stats.norm.pdf(z))  # E (x - D)+
    shortfall = surplus - (x - MEAN)  # E (D - x)+
    return float(HOLD @ surplus + SHORT @ shortfall)


def simulator(seed: int):
    """The objective: the mean cost of ``DAYS`` simulated days."""
    days = np.random.default_rng(seed)

    def mean_cost(x: np.ndarray) -> float:
        demand = MEAN + SD * days.standard_normal((DAYS, PRODUCTS))
        cost = HOLD * np.maximum(x - demand, 0) + SHORT * np.maximum(demand - x, 0)
        return float(cost.sum(axis=1).mean())

    return mean_cost


best = MEAN + SD * stats.norm.ppf(SHORT / (SHORT + HOLD))  # the critical fractile
f_best = expected_cost(best)
x0 = MEAN.copy()  # stock the mean demand
one_call = simulator(1)
sd_one_call = np.std([one_call(x0) for _ in range(200)])
print(
    f"{PRODUCTS} products, {DAYS} simulated days a call (noise sd {sd_one_call:.1f}), "
    f"{maxfev} calls; expected cost at x0 {expected_cost(x0):.1f}, at the optimum {f_best:.1f}\n"
)


def solve(name: str, seed: int) -> optimize.OptimizeResult:
    f = simulator(100 + seed)
    if name == "zovh":
        return zovh_opt.minimize(f, x0, rng=seed, options={"maxfev": maxfev})
    if name == "zovh noisy=False":
        return zovh_opt.minimize(f, x0, rng=seed, options={"maxfev": maxfev, "noisy": False})
    return optimize.minimize(f, x0, method=name, options={"maxfev": maxfev})


print(f"{'method':18} {'true gap':>9} {'fun - true':>11} {'std error':>10}  (median over {seeds})")
for name in ("zovh", "zovh noisy=False", "Nelder-Mead", "Powell"):
    gaps, errors, standard = [], [], []
    for seed in range(seeds):
        res = solve(name, seed)
        truth = expected_cost(res.x)
        gaps.append(truth - f_best)
        errors.append(res.fun - truth)
        standard.append(res.get("fun_std_error", np.nan))
    print(
        f"{name:18} {np.median(gaps):9.2f} {np.median(errors):+11.2f} {np.median(standard):10.2f}"
    )
    if name == "zovh" and not all(abs(e) <= 4 * s for e, s in zip(errors, standard, strict=True)):
        raise SystemExit("zovh's fun is not within 4 standard errors of the true cost")
print(
    "\nzovh's fun is the mean of fresh simulations at x (unbiased, with its standard error);"
    "\nthe lowest noisy value (noisy=False) lies below the true cost of its point."
)
