"""Fit the 6 parameters of a Lotka-Volterra model to noisy observations, as a new user would.

The parameters (growth rate, predation rate, conversion rate, death rate, the two initial
populations) range from about 0.06 to 10: a badly scaled problem. The objective is the sum of
squared residuals of 61 noisy observations of both populations (``solve_ivp``), with positivity
bounds. Beside zovh at its defaults: zovh with one scale for every coordinate
(``x_scale=1``, the default before the bounds gave the scales), and SciPy's Nelder-Mead and
L-BFGS-B (finite differences), each with the same budget of evaluations.

What it shows (issue #29): the positivity bounds say that each entry of ``x0`` is the size of
its parameter, and by default the run takes place in units of those sizes (the distance of
``x0_i`` from its bound, as Nelder-Mead's initial simplex takes its steps from ``x0``). It
ends at ``f - f*`` of about 3e-13 (7e-18 of ``f(x0) - f*``), closer than Nelder-Mead (2e-7)
and L-BFGS-B (2e-8) come. With one scale for all, the first step is ``0.1 |x0|`` long in
every coordinate, the coordinate at 0.06 is pushed by about 1, and within 1000 evaluations
the run ends at about 1e4.

``--tolerance`` sets the ODE solver's (issue #70): below it ``f`` is rough, the same point
giving the same value. Every returned point is judged at the default 1e-8. With
``--tolerance 1e-4`` the default stops by itself after 467 evaluations at 7.0e-8 of the
start's gap, the resolution the roughness allows, where Nelder-Mead and L-BFGS-B end too
(7.0e-8, after 687 and 686).

Run:  python examples/ode_fit.py            (about 25 s)
      python examples/ode_fit.py --quick    (100 evaluations each, a few seconds, for CI)
"""

import argparse
import time
import warnings

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import minimize as scipy_minimize

import zovh_opt

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--maxfev", type=int, default=1000)
parser.add_argument("--quick", action="store_true", help="100 evaluations per method")
parser.add_argument(
    "--tolerance", type=float, help="the ODE solver's rtol and atol (1e-8; 1e-5 with --quick)"
)
args = parser.parse_args()
maxfev = 100 if args.quick else args.maxfev
JUDGED = 1e-5 if args.quick else 1e-8  # the tolerance the returned points are judged at
tolerance = args.tolerance or JUDGED

TIMES = np.linspace(0.0, 15.0, 61)
TRUE = np.array([1.0, 0.1, 0.075, 1.5, 10.0, 5.0])  # alpha, beta, delta, gamma, prey0, predator0


def simulate(p, tol):
    """Prey and predator populations at ``TIMES`` (None where the solver fails), solved to
    ``tol`` (relative and absolute)."""
    alpha, beta, delta, gamma, prey0, predator0 = p

    def rates(_, z):
        return [alpha * z[0] - beta * z[0] * z[1], delta * z[0] * z[1] - gamma * z[1]]

    sol = solve_ivp(rates, (0.0, 15.0), [prey0, predator0], t_eval=TIMES, rtol=tol, atol=tol)
    return sol.y if sol.success and sol.y.shape[1] == len(TIMES) else None


DATA = simulate(TRUE, JUDGED) + np.random.default_rng(0).normal(0.0, 1.0, (2, len(TIMES)))


def residual_sum(p, tol=tolerance):
    """The objective the solvers see: the ODE solved to the run's ``tolerance``, so that below
    its resolution ``f`` is rough (deterministic: a point gives the same value again)."""
    y = simulate(p, tol)
    return 1e10 if y is None else float(np.sum((y - DATA) ** 2))


def true_sum(p):
    """The same residuals solved to 1e-8 (the default), which judges every returned point."""
    return residual_sum(p, JUDGED)


x0 = np.array([0.8, 0.12, 0.06, 1.8, 9.0, 6.0])
bounds = [(1e-6, None)] * 6
f0 = true_sum(x0)
# the least-squares optimum, for the gaps below: Nelder-Mead to tight tolerances
reference = scipy_minimize(
    true_sum,
    x0,
    method="Nelder-Mead",
    bounds=bounds,
    options={"maxfev": 300 if args.quick else 20_000, "xatol": 1e-10, "fatol": 1e-12},
)
f_star = reference.fun
print(
    f"f(x0) = {f0:.6g}, least-squares optimum f* = {f_star:.6g}; the solver's tolerance "
    f"{tolerance:g}; {maxfev} evaluations each; gaps judged at {JUDGED:g}\n"
)

RUNS = {
    "zovh (defaults)": lambda: zovh_opt.minimize(
        residual_sum, x0, bounds=bounds, rng=0, options={"maxfev": maxfev}
    ),
    "zovh x_scale=1": lambda: zovh_opt.minimize(
        residual_sum, x0, bounds=bounds, rng=0, options={"maxfev": maxfev, "x_scale": 1.0}
    ),
    "Nelder-Mead": lambda: scipy_minimize(
        residual_sum, x0, method="Nelder-Mead", bounds=bounds, options={"maxfev": maxfev}
    ),
    "L-BFGS-B": lambda: scipy_minimize(
        residual_sum, x0, method="L-BFGS-B", bounds=bounds, options={"maxfun": maxfev}
    ),
}
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # L-BFGS-B's and the solver's own warnings
    for name, run in RUNS.items():
        start = time.perf_counter()
        res = run()
        f = true_sum(res.x)
        gap = (f - f_star) / (f0 - f_star)
        print(
            f"{name:20s} f - f* = {f - f_star:10.4g}   relative {gap:9.2e}   "
            f"nfev = {res.nfev:5d}   {time.perf_counter() - start:5.1f} s"
        )
