"""Rotated quadratics started on and near the faces of a box: which default runs end short of
the optimum. Quoted on the theory page (*Scales from the bounds*).

    python tools/box_starts.py D N     # d = D, problems 0 .. N-1 (the docs: 3 200, 4 200)

Problem ``k``: ``f(x) = (x - c)^T H (x - c) / 2``, ``H`` a random rotation of eigenvalues
log-spaced from 1 to 100, ``c`` uniform in ``[-2, 2]^d``; each coordinate gets a lower bound,
an upper bound, both, or none (from ``[-1.5, 1.5]``), and its start lies on the lower bound,
on the upper one, or inside, at random (seed ``k``). The reference optimum is L-BFGS-B's with
the exact gradient. A run counts as not converged when its ``f`` is above ``1e-6`` of its
start's gap; each such run is printed (gap, evaluations, message, restarts' causes), then the
count and the median and largest number of evaluations.
"""

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


def main(dim, count):
    warnings.simplefilter("ignore")
    not_converged, evaluations = 0, []
    for seed in range(count):
        f, x0, lower, upper = problem(seed, dim)
        bounds = list(zip(lower, upper, strict=True))
        reference = scipy.optimize.minimize(
            f,
            np.clip(np.zeros(dim), lower, upper),
            method="L-BFGS-B",
            bounds=bounds,
            options={"ftol": 1e-15, "gtol": 1e-12},
        )
        f_star, f0 = reference.fun, f(x0)
        if f0 - f_star <= 0:
            continue
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


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
