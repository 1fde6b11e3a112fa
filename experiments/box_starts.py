"""Rotated quadratics started on and near the faces of a box: which default runs end short of
the optimum (theory page, *Scales from the bounds*), and how many evaluations the default,
the default without its quasi-Newton phase and L-BFGS-B need (user guide, *Bounds*).

    python experiments/box_starts.py D N            # d = D, problems 0 .. N-1 (docs: 3 200, 4 200)
    python experiments/box_starts.py D N --targets  # evaluations to 1e-6, 1e-9 (docs: 10 30, 20 20)

Problem ``k``: ``f(x) = (x - c)^T H (x - c) / 2``, ``H`` a random rotation of eigenvalues
log-spaced from 1 to 100, ``c`` uniform in ``[-2, 2]^d``; each coordinate gets a lower bound,
an upper bound, both, or none (from ``[-1.5, 1.5]``), and its start lies on the lower bound,
on the upper one, or inside, at random (seed ``k``). The reference optimum is L-BFGS-B's with
the exact gradient. A run counts as not converged when its ``f`` is above ``1e-6`` of its
start's gap; each such run is printed (gap, evaluations, message, restarts' causes), then the
count and the median and largest number of evaluations. ``--targets``: each solver gets
``300 d`` evaluations; the evaluations (counted by a wrapper of ``f``) until the lowest value
is within ``1e-6`` and ``1e-9`` of the start's gap, median over the problems, and how many
problems missed the target ("L-BFGS-B": SciPy's, with bounds and finite differences).
"""

import math
import sys
import warnings

import numpy as np
import scipy.optimize

import zovh_opt


def problem(seed, dim):
    """(f, x0, lower, upper) of problem ``seed``."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
    hessian = q @ np.diag(np.logspace(0, 2, dim)) @ q.T
    centre = rng.uniform(-2, 2, dim)
    lower, upper = np.full(dim, -np.inf), np.full(dim, np.inf)
    x0 = rng.uniform(-1, 1, dim)
    for i in range(dim):
        a, b = sorted(rng.uniform(-1.5, 1.5, 2))
        b = max(b, a + 0.1)
        side, where = rng.integers(4), rng.integers(3)
        if side in (1, 3):
            lower[i] = a
        if side in (2, 3):
            upper[i] = b
        if where == 0 and np.isfinite(lower[i]):
            x0[i] = lower[i]
        elif where == 1 and np.isfinite(upper[i]):
            x0[i] = upper[i]
        else:
            x0[i] = np.clip(x0[i], lower[i], upper[i])

    def f(x):
        return float(0.5 * (x - centre) @ hessian @ (x - centre))

    return f, x0, lower, upper


def optimum(f, dim, lower, upper):
    """The reference ``f*``: L-BFGS-B's with tight tolerances."""
    bounds = list(zip(lower, upper, strict=True))
    options = {"ftol": 1e-15, "gtol": 1e-12}
    x = np.clip(np.zeros(dim), lower, upper)
    return scipy.optimize.minimize(f, x, method="L-BFGS-B", bounds=bounds, options=options).fun


def problems(dim, count):
    """``(seed, f, x0, bounds, f*, f(x0))`` of problems ``0 .. count - 1`` whose start is above
    the optimum."""
    for seed in range(count):
        f, x0, lower, upper = problem(seed, dim)
        f_star, f0 = optimum(f, dim, lower, upper), f(x0)
        if f0 - f_star > 0:
            yield seed, f, x0, list(zip(lower, upper, strict=True)), f_star, f0


def main(dim, count):
    warnings.simplefilter("ignore")
    not_converged, evaluations = 0, []
    for seed, f, x0, bounds, f_star, f0 in problems(dim, count):
        res = zovh_opt.minimize(f, x0, bounds=bounds, rng=0)
        gap = (res.fun - f_star) / (f0 - f_star)
        if gap > 1e-6:
            not_converged += 1
            causes = [r["cause"] for r in res.restarts]
            print(seed, f"{gap:.3g}", res.nfev, res.message[:60], causes)
        evaluations.append(res.nfev)
    print(
        f"not converged {not_converged} of {len(evaluations)}, evaluations: median "
        f"{np.median(evaluations):g}, largest {max(evaluations)}"
    )


SOLVERS = {
    "zovh": lambda f, x0, b, n: zovh_opt.minimize(f, x0, bounds=b, rng=0, options={"maxfev": n}),
    "zovh quasi_newton=False": lambda f, x0, b, n: zovh_opt.minimize(
        f, x0, bounds=b, rng=0, options={"maxfev": n, "quasi_newton": False}
    ),
    "L-BFGS-B": lambda f, x0, b, n: scipy.optimize.minimize(
        f, x0, method="L-BFGS-B", bounds=b, options={"maxfun": n}
    ),
}


def targets(dim, count):
    warnings.simplefilter("ignore")
    hits = {name: ([], []) for name in SOLVERS}
    for _, f, x0, bounds, f_star, f0 in problems(dim, count):
        for name, solve in SOLVERS.items():
            values = []
            solve(lambda x: values.append(f(x)) or values[-1], x0, bounds, 300 * dim)  # noqa: B023
            gaps = (np.minimum.accumulate(values) - f_star) / (f0 - f_star)
            for level, found in zip((1e-6, 1e-9), hits[name], strict=True):
                reached = np.flatnonzero(gaps <= level)
                found.append(int(reached[0]) + 1 if reached.size else math.inf)
    print(f"d = {dim}, {count} problems, 300 d evaluations: evaluations to 1e-6 / 1e-9 of the gap")
    for name, (six, nine) in hits.items():
        missed = sum(math.isinf(v) for v in six), sum(math.isinf(v) for v in nine)
        print(
            f"{name:24s} median {np.median(six):g} / {np.median(nine):g}, "
            f"missed {missed[0]} / {missed[1]}"
        )


if __name__ == "__main__":
    (targets if "--targets" in sys.argv else main)(int(sys.argv[1]), int(sys.argv[2]))
