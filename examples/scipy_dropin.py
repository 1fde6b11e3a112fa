"""A SciPy script turned into zovh by its method name: bounds, jac and all.

The objective is a shifted quadratic in d = 20 whose unconstrained minimum lies outside the box
[-1, 1]^d in 10 coordinates, so the constrained optimum sits on the box's faces there. The same
``scipy.optimize.minimize`` call runs with ``method="Powell"`` and with ``method=zovh_opt.zovh``
(and once through ``zovh_opt.minimize``, whose signature is SciPy's); ``jac`` is passed as a
gradient-based script would, and the derivative-free methods warn that they do not use it (the
script silences that warning). It logs every point each run evaluates and checks that all lie
in the box.

Run:  python examples/scipy_dropin.py            (about 1 s)
      python examples/scipy_dropin.py --quick    (the same: the run is short)
"""

import argparse
import warnings

import numpy as np
import scipy.optimize
from scipy.optimize import Bounds

import zovh_opt

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--quick", action="store_true", help="accepted for CI; the run is short")
parser.parse_args()

d = 20
centre = np.linspace(-2.0, 2.0, d)
weights = 1.0 + np.arange(d) / d
b = Bounds(-np.ones(d), np.ones(d))
solution = np.clip(centre, b.lb, b.ub)  # the constrained optimum of a separable quadratic


def f(x):
    return float(np.sum(weights * (x - centre) ** 2))


def j(x):
    return 2 * weights * (x - centre)


def logged(points):
    """``f``, appending every point it is called at to ``points``."""

    def fun(x):
        points.append(np.array(x, dtype=np.float64))
        return f(x)

    return fun


x0 = np.zeros(d)
f_star = f(solution)
print(f"shifted quadratic, d = {d}, box [-1, 1]^d; f(x0) - f* = {f(x0) - f_star:.3g}\n")
print(f"{'call':<46} {'nfev':>6} {'f - f*':>9} {'max|x - x*|':>12} {'all in box':>10}")
runs = [
    ("scipy.optimize.minimize(method='Powell')", scipy.optimize.minimize, "Powell", {}),
    (
        "scipy.optimize.minimize(method=zovh_opt.zovh)",
        scipy.optimize.minimize,
        zovh_opt.zovh,
        {"options": {"rng": 0}},
    ),
    ("zovh_opt.minimize(method='zovh')", zovh_opt.minimize, "zovh", {"rng": 0}),
]
ok = True
for name, minimize, method, extra in runs:
    points = []
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Method .* does not use gradient", RuntimeWarning)
        res = minimize(logged(points), x0, method=method, bounds=b, jac=j, **extra)
    points = np.array(points)
    inside = bool(np.all(points >= b.lb) and np.all(points <= b.ub))
    gap, error = res.fun - f_star, float(np.max(np.abs(res.x - solution)))
    print(f"{name:<46} {res.nfev:>6} {gap:>9.2e} {error:>12.2e} {inside!s:>10}")
    if method != "Powell":  # the reference; zovh must reach f - f* <= 1e-8 (f(x0) - f*)
        ok &= inside and gap <= 1e-8 * (f(x0) - f_star)
print("\nzovh: constrained optimum reached, every point in the box:", ok)
raise SystemExit(0 if ok else 1)
