"""The prototypes' quick problems (not a part of zovh_opt): a shifted sphere, a rotated
ellipsoid of condition ``1e6`` and a rotated Rosenbrock function in ``d`` dimensions, and the
evaluations each iteration takes to ``f - f* <= 1e-8`` from ``x0 ~ N(0, I)`` (3 seeds)."""

import warnings

import numpy as np

from zovh_opt._methods.zovh import ZoVH


def problems(d, seed):
    rng = np.random.default_rng(seed)
    q = np.linalg.qr(rng.standard_normal((d, d)))[0]
    opt = rng.uniform(-2, 2, d)
    H = q @ np.diag(np.logspace(0, 6, d)) @ q.T

    def sphere(x):
        return float((x - opt) @ (x - opt))

    def ellipsoid(x):
        r = x - opt
        return 0.5 * float(r @ H @ r)

    def rosenbrock(x):
        z = q @ (x - opt) + 1
        return float(np.sum(100 * (z[1:] - z[:-1] ** 2) ** 2 + (1 - z[:-1]) ** 2))

    return {"sphere": sphere, "ellipsoid": ellipsoid, "rosenbrock": rosenbrock}


def quick(d, iterations):
    """Print, per problem, the evaluations each full iteration of ``iterations`` (label ->
    class, installed as ``curvature="full"`` in turn) takes to ``1e-8`` (or its end value, where
    the trace never shows it)."""
    import zovh_opt

    warnings.simplefilter("ignore")
    library = ZoVH.iterations["full"]
    try:
        for name in ("sphere", "ellipsoid", "rosenbrock"):
            row = {}
            for label, iteration in iterations.items():
                ZoVH.iterations["full"] = iteration
                reached = []
                for seed in range(3):
                    f = problems(d, seed)[name]
                    x0 = np.random.default_rng(100 + seed).standard_normal(d)
                    res = zovh_opt.minimize(f, x0, rng=seed, options={"maxfev": 1000 * d})
                    hit = res.trace["fun"] <= 1e-8
                    reached.append(
                        int(res.trace["nfev"][np.argmax(hit)]) if hit.any() else f"{res.fun:.3g}"
                    )
                row[label] = reached
            print(f"d = {d}, {name}: evaluations to f - f* <= 1e-8: {row}", flush=True)
    finally:
        ZoVH.iterations["full"] = library
