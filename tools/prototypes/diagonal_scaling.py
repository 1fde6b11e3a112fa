"""The quasi-Newton phase's L-BFGS with a diagonal initial matrix (the prototype of
`zovh_opt._lbfgs.initial_matrix`).

``MODE``: ``"scalar"`` (``H0 = s'y / y'y``, the package before), ``"diag"`` (``H0 =
diag(sum_k s_ki y_ki / sum_k y_ki^2)`` over the kept pairs, the scalar where a coordinate's
ratio is not positive), ``"validated"`` (the diagonal where, fitted on the older pairs, it
predicts the newest pair's ``s`` from its ``y`` with less than ``VALIDATION`` times the
squared error of the older pair's scalar; 0.1 is the package's rule), and with ``STREAK``
above 1 only where it did so at that many directions in a row. ``RATIOS`` collects the two
errors' ratio at each validated direction. Run benchmarks through ``variant.py``; not a part
of zovh_opt.

    python tools/prototypes/diagonal_scaling.py          # the theory page's table
    python tools/prototypes/diagonal_scaling.py scaled   # the scaled rotated problem's budgets
"""

import sys
import warnings

import numpy as np
from scipy.optimize import rosen

import zovh_opt
from zovh_opt import _lbfgs

MODE = "validated"
VALIDATION = 0.1
STREAK = 1  # consecutive directions whose check the diagonal must pass
RATIOS: list[float] = []


def _ratios(xp, pairs, scalar):
    sy = sum(s * y for s, y, _ in pairs)
    yy = sum(y * y for _, y, _ in pairs)
    ratios = sy / xp.where(yy > 0, yy, 1.0)
    return xp.where((yy > 0) & (ratios > 0) & xp.isfinite(ratios), ratios, scalar)


_streak = [0]  # directions in a row whose check the diagonal passed (reset with the pairs)


def _validated(pairs, xp, scalar):
    if len(pairs) < 2:
        _streak[0] = 0
        return scalar
    older, (s, y, _) = pairs[:-1], pairs[-1]
    s_older, y_older, _ = older[-1]
    scalar_older = float(xp.sum(s_older * y_older)) / float(xp.sum(y_older * y_older))
    error_diagonal = float(xp.sum((s - _ratios(xp, older, scalar_older) * y) ** 2))
    error_scalar = float(xp.sum((s - scalar_older * y) ** 2))
    RATIOS.append(error_diagonal / error_scalar if error_scalar > 0 else 0.0)
    passed = error_diagonal < VALIDATION * error_scalar
    _streak[0] = _streak[0] + 1 if passed else 0
    if _streak[0] >= STREAK:
        return _ratios(xp, pairs, scalar)
    return scalar


def _initial_matrix(pairs, xp):
    """`zovh_opt._lbfgs.initial_matrix` by ``MODE``."""
    s, y, rho = pairs[-1]
    scalar = 1.0 / (rho * float(xp.sum(y * y)))
    if MODE == "scalar":
        return scalar
    if MODE == "validated":
        return _validated(pairs, xp, scalar)
    return _ratios(xp, pairs, scalar)


def patch():
    _lbfgs.initial_matrix = _initial_matrix


def _problems():
    rng = np.random.default_rng(7)
    h = np.logspace(0, 4, 1000)
    yield "separable, d = 1000, condition 1e4", lambda x: float(np.sum(h * x * x)) / 2, 1000, 100
    q = np.linalg.qr(rng.standard_normal((100, 100)))[0]
    H = q @ np.diag(np.logspace(0, 4, 100)) @ q.T
    yield "rotated, d = 100, condition 1e4", lambda x: float(x @ H @ x) / 2, 100, 100
    yield "Rosenbrock, d = 100", lambda x: float(rosen(x)), 100, 300
    S = np.logspace(0, 3, 100)
    q = np.linalg.qr(rng.standard_normal((100, 100)))[0]
    H2 = (S[:, None] * (q @ np.diag(np.logspace(0, 1, 100)) @ q.T)) * S[None, :]
    yield "rotated, scaled, d = 100", lambda x: float(x @ H2 @ x) / 2, 100, 100
    h6 = np.logspace(0, 6, 200)
    yield "separable, d = 200, condition 1e6", lambda x: float(np.sum(h6 * x * x)) / 2, 200, 100


def _scaled_rotated_budgets():
    """The scaled rotated problem at ``100 d`` and ``1000 d``: the default (the package's
    rule), the method alone and SciPy's L-BFGS-B with finite differences, seeds 0 and 1."""
    from scipy.optimize import minimize as scipy_minimize

    title, f, d, _ = list(_problems())[3]
    for budget in (100, 1000):
        cells = []
        for options in ({}, {"quasi_newton": False}):
            finals = []
            for seed in (0, 1):
                x0 = np.random.default_rng(100 + seed).standard_normal(d)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = zovh_opt.minimize(
                        f, x0, rng=seed, options={"maxfev": budget * d, **options}
                    )
                finals.append(f"{res.fun:.2g}")
            cells.append(", ".join(finals))
        lbfgsb = []
        for seed in (0, 1):
            x0 = np.random.default_rng(100 + seed).standard_normal(d)
            res = scipy_minimize(f, x0, method="L-BFGS-B", options={"maxfun": budget * d})
            lbfgsb.append(f"{res.fun:.2g}")
        print(f"| {title}, `{budget} d` | " + " | ".join([*cells, ", ".join(lbfgsb)]) + " |")


if __name__ == "__main__":  # the theory page's table: final f of the default, seeds 0 and 1
    if sys.argv[1:] == ["scaled"]:
        _scaled_rotated_budgets()
        sys.exit()
    modes = [("scalar", 1.0), ("diag", 1.0), ("validated", 1.0), ("validated", 0.5)]
    patch()
    for title, f, d, budget in _problems():
        cells = []
        for mode, validation in [*modes, ("validated", 0.1)]:
            globals().update(MODE=mode, VALIDATION=validation)
            finals = []
            for seed in (0, 1):
                x0 = np.random.default_rng(100 + seed).standard_normal(d)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = zovh_opt.minimize(f, x0, rng=seed, options={"maxfev": budget * d})
                finals.append(f"{res.fun:.2g}")
            cells.append(", ".join(finals))
        print(f"| {title}, `{budget} d` | " + " | ".join(cells) + " |", flush=True)
