"""A fixed set of 124 runs, to check that a refactor changes no bit of any result.

    python experiments/fixed_runs.py write before.npz     # on the commit before the change
    python experiments/fixed_runs.py write after.npz      # on the commit after it
    python experiments/fixed_runs.py compare before.npz after.npz

Every method at a fixed and at the automatic learning rate; ZoVH's paper iteration and its
curvature model with both direction storages and histories 1, 2, 4; ZoAR likewise; the exact
inverse with decoupled products; ``noisy=True``; the budget rule's short run; each on a
weighted quadratic and on Rosenbrock in d = 60, with and without bounds. ``compare`` lists the
runs whose ``x``, ``fun``, ``nfev``, ``nit`` or ``status`` differ (``np.array_equal``).
"""

import sys
import warnings

import numpy as np

import zovh_opt
from zovh_opt.problems import rosenbrock


def quadratic(x):
    return float(np.sum(np.arange(1, x.shape[0] + 1) * (x - 0.3) ** 2))


def cases():
    out = []
    for method in ["zovh", "zoar", "zo-sgd", "hizoo", "mezo"]:
        for rate in (1e-4, "auto"):
            out.append((method, {"learning_rate": rate, "maxfev": 3000}))
    for storage in ("vectors", "seeds"):
        for history in (1, 2, 4):
            paper = {"curvature": "off", "learning_rate": 1e-4, "history": history}
            out.append(("zovh", {**paper, "directions": storage, "maxfev": 3000}))
            out.append(("zovh", {"history": history, "directions": storage, "maxfev": 6000}))
            zoar = {"learning_rate": 1e-4, "history": history, "directions": storage}
            out.append(("zoar", {**zoar, "maxfev": 3000}))
    exact = {"curvature": "off", "inverse": "exact", "product": "decoupled"}
    out.append(("zovh", {**exact, "learning_rate": 1e-4, "maxfev": 3000}))
    out.append(("zovh", {"noisy": True, "maxfev": 4000}))
    out.append(("zovh", {"maxfev": 500}))  # the budget rule: the paper's iteration
    return out


def write(path):
    warnings.simplefilter("ignore")
    x0 = np.random.default_rng(0).standard_normal(60)
    runs = {}
    for i, (method, options) in enumerate(cases()):
        for name, fun in (("quad", quadratic), ("rosenbrock", rosenbrock)):
            for bounds in (None, [(-1, 1)] * 60):
                res = zovh_opt.minimize(
                    fun, x0, method=method, rng=i, bounds=bounds, options=dict(options)
                )
                key = f"{i}-{method}-{name}-{'bounds' if bounds else 'free'}"
                runs[key + "-x"] = res.x
                meta = [res.fun, res.nfev, res.nit, res.status]
                runs[key + "-meta"] = np.array(meta, dtype=np.float64)
    np.savez(path, **runs)
    print(f"{len(runs) // 2} runs written to {path}")


def compare(before, after):
    a, b = np.load(before), np.load(after)
    differ = sorted(
        {k.rsplit("-", 1)[0] for k in a.files if not np.array_equal(a[k], b[k], equal_nan=True)}
    )
    print(f"{len(a.files) // 2} runs, {len(differ)} differ")
    for run in differ:
        print("  ", run)
    return 1 if differ else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["write"]:
        write(sys.argv[2])
    elif sys.argv[1:2] == ["compare"]:
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    else:
        sys.exit(__doc__)
