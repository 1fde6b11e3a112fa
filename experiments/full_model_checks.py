"""Checks of the full curvature model quoted in the docs (theory page), outside the test suite.

    python experiments/full_model_checks.py hess-inv   # hess_inv at the end of default runs
    python experiments/full_model_checks.py noise      # full against diagonal on noisy problems
    python experiments/full_model_checks.py x0-scales  # x_scale="x0" as a default, from N(0, I)

``hess-inv``: rotated quadratics (d = 20, condition 1e4, eigenvalues log-spaced), x0 ~ N(0, I),
10 seeds, default runs; the relative Frobenius error of ``hess_inv`` and ``nfev``.
``noise``: rotated quadratics of condition 100 (d = 6, sigma 5; d = 20, sigma 1 and 10),
additive Gaussian noise, ``noisy=True``, ``1000 d`` evaluations, 5 seeds; the true gap
``f(x) - f*`` of the returned point, median and range. ``x0-scales``: evaluations to
``1e-8 f(x0)`` on the sphere, a rotated ellipsoid (condition 1e4) and rotated Rosenbrock,
d = 5, 10, 20, x0 ~ N(0, I), 5 seeds, with and without ``x_scale="x0"``; median and worst
(99999: not reached in ``1000 d``).
"""

import sys
import warnings

import numpy as np

import zovh_opt


def rotation(d, seed):
    return np.linalg.qr(np.random.default_rng(seed).standard_normal((d, d)))[0]


def hess_inv():
    d, errors, nfev = 20, [], []
    for seed in range(10):
        q = rotation(d, 10 + seed)
        H = q @ np.diag(np.logspace(0, 4, d)) @ q.T
        H = 0.5 * (H + H.T)
        x0 = np.random.default_rng(seed).standard_normal(d)
        res = zovh_opt.minimize(lambda x, H=H: 0.5 * float(x @ H @ x), x0, rng=seed)
        truth = np.linalg.inv(H)
        errors.append(np.linalg.norm(res.hess_inv - truth) / np.linalg.norm(truth))
        nfev.append(res.nfev)
    print("relative errors", np.round(errors, 3), "median", round(float(np.median(errors)), 3))
    print("nfev", nfev)


def noise():
    for d, sigma in ((6, 5.0), (20, 1.0), (20, 10.0)):
        target = np.arange(d, dtype=float)
        for curvature in ("full", "diagonal"):
            gaps = []
            for seed in range(5):
                q = rotation(d, seed)
                H = q @ np.diag(np.logspace(0, 2, d)) @ q.T
                draws = np.random.default_rng(100 + seed)

                def f(x, H=H, draws=draws, target=target, sigma=sigma):
                    r = x - target
                    return float(r @ H @ r) + sigma * draws.standard_normal()

                options = {"curvature": curvature, "noisy": True, "maxfev": 1000 * d}
                x = zovh_opt.minimize(f, np.zeros(d), rng=seed, options=options).x
                gaps.append(float((x - target) @ H @ (x - target)))
            print(
                f"d = {d}, sigma = {sigma}, {curvature}: true gap median {np.median(gaps):.3g}, "
                f"range {min(gaps):.3g} .. {max(gaps):.3g}"
            )


def x0_scales():
    for d in (5, 10, 20):
        for kind in ("sphere", "ellipsoid", "rosenbrock"):
            row = {}
            for x_scale in (None, "x0"):
                reached = []
                for seed in range(5):
                    rng = np.random.default_rng(seed)
                    q = rotation(d, seed)
                    x0 = rng.standard_normal(d)
                    optimum = rng.uniform(-2, 2, d)
                    if kind == "sphere":
                        g = lambda x, o=optimum: float((x - o) @ (x - o))  # noqa: E731
                    elif kind == "ellipsoid":
                        H = q @ np.diag(np.logspace(0, 4, d)) @ q.T
                        g = lambda x, o=optimum, H=H: 0.5 * float((x - o) @ H @ (x - o))  # noqa: E731
                    else:

                        def g(x, q=q):
                            z = q @ x + 1
                            valley = 100 * (z[1:] - z[:-1] ** 2) ** 2
                            return float(np.sum(valley + (1 - z[:-1]) ** 2))

                    options = {"maxfev": 1000 * d}
                    if x_scale:
                        options["x_scale"] = x_scale
                    res = zovh_opt.minimize(g, x0, rng=seed, options=options)
                    hit = res.trace["fun"] <= 1e-8 * g(x0)
                    reached.append(int(res.trace["nfev"][np.argmax(hit)]) if hit.any() else 99999)
                row[str(x_scale)] = (int(np.median(reached)), max(reached))
            print(f"d = {d}, {kind}: (median, worst) evaluations, x_scale None / 'x0': {row}")


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    {"hess-inv": hess_inv, "noise": noise, "x0-scales": x0_scales}[sys.argv[1]]()
