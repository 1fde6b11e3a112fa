"""Prototype, outside the package: a full curvature model learned from antithetic pairs
(issue #29, item 1). Not a part of zovh_opt; kept so that the next step starts from numbers.

    python tools/prototypes/full_curvature.py D COND [RATE]

Each iteration evaluates P antithetic pairs ``f(x +- mu W u_m)`` (P as the default's,
``(4 + floor(3 ln d)) // 2``) around ``x``, where ``W = (A / c)^(-1/2)`` whitens the model ``A``
of the Hessian (``c`` its geometric-mean eigenvalue), so that in whitened coordinates the model
is ``c I``. From the second differences ``s_m = (y+ + y- - 2 f(x)) / mu^2`` and their residuals
against the model, ``r_m = s_m - c |u_m|^2``, the paper's estimator (eq. (9), Stein's identity)
with the model as control variate gives the error ``E = mean_m r_m (u_m u_m^T - I) / 2``,
unbiased for ``H_w - c I`` on a quadratic. The model moves multiplicatively in whitened
coordinates, ``c I -> c V exp(clip(rate * eig(E / c), -1, 1)) V^T`` (positive definite by
construction, as CMA-ES's covariance), mapped back to ``x``. The step is the model's Newton
step for the central-difference gradient, shrunk by ``M / (d + M + 1)``, judged by one more
evaluation (accepted if lower, else halved); the radius follows the step.

Measured (this script, 3 seeds, rotated ellipsoids with log-spaced eigenvalues, x0 = 0,
optimum uniform in [-4, 4]^d, budget 1000 d; default zovh and pycma CMA-ES in the same run):

| d, cond. | rate | prototype: evals to 1e-8 f0 | hess_inv error | zovh at 1000 d | CMA-ES |
|---|---|---|---|---|---|
| 10, 1e6 | 0.3, 0.1 | never (the model diverges) | > 1 | 6e-5 .. 5e-3 f0 | 3020 .. 3340 |
| 10, 1e6 | 0.05 (= P / d^2) | 4182, 4720, 5291 | 0.01 .. 0.04 | | |
| 10, 1e6 | 0.02 | 7168 .. 7741 | 0.02 .. 0.06 | | |
| 20, 1e6 | 0.05 | never (diverges) | > 1 | 3e-4 .. 5e-5 f0 | 9840 .. 10812 |
| 20, 1e6 | 0.015 (= P / d^2) | 14858, 17345, 18495 | 0.02 .. 0.21 | | |

What the numbers say: the estimator carries the full Hessian, and a multiplicative update at
a rate of about ``P / d^2`` (the noise of one iteration's E is ``O(d / sqrt(P))`` relative)
learns it to a few per cent; faster rates make the log-eigenvalues a random walk that
diverges. The package's ``curvature="full"`` (issue #29; the default up to d = 40) grew from
this prototype with the step rule's trust region, the reuse of kept pairs, a rank-P update
that keeps ``W^-1`` and the scale learned from the trace; the "zovh at 1000 d" column above is
the diagonal model, the default when the prototype was measured. The script now prints the
default's evaluations and ``hess_inv`` error too (docs, *Theory*: 3320-3380 at d = 10,
7260-8460 at d = 20).
"""

import sys
import warnings

import numpy as np
from scipy.linalg import eigh


def rotated_ellipsoid(d, cond, seed):
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, d)))
    hessian = q @ np.diag(np.logspace(0, np.log10(cond), d)) @ q.T
    optimum = np.random.default_rng(seed + 100).uniform(-4, 4, d)
    return (lambda x: 0.5 * float((x - optimum) @ hessian @ (x - optimum))), hessian


def run_full(f, x0, budget, rng, rate=None):
    d = len(x0)
    P = max(2, (4 + int(3 * np.log(d))) // 2)
    rate = P / d**2 if rate is None else rate
    x = x0.copy()
    fx, n = f(x), 1
    W, A, c = np.eye(d), None, None
    eta = 1.0
    mu = 0.1 * max(np.linalg.norm(x0), np.sqrt(d)) / np.sqrt(d)
    history = [(n, fx)]
    while n + 2 * P + 1 <= budget:
        U = rng.standard_normal((P, d))
        D = U @ W.T
        plus = np.array([f(x + mu * v) for v in D])
        minus = np.array([f(x - mu * v) for v in D])
        n += 2 * P
        delta = (plus - minus) / (2 * mu)
        second = (plus + minus - 2 * fx) / mu**2
        gradient_w = delta @ U / P
        if c is None:
            c = float(np.mean(second / np.sum(U * U, 1)))
            A = c * np.eye(d)
        r = second - c * np.sum(U * U, 1)
        E = (U.T * r) @ U / (2 * P) - np.eye(d) * r.mean() / 2
        w, V = eigh(0.5 * (E + E.T) / c)
        G = (V * np.exp(np.clip(rate * w, -1.0, 1.0))) @ V.T
        W_inv = np.linalg.inv(W)
        A = W_inv.T @ (c * G) @ W_inv
        A = 0.5 * (A + A.T)
        eigenvalues, vectors = eigh(A)
        c = float(np.exp(np.mean(np.log(eigenvalues))))
        scaled = np.maximum(eigenvalues / c, 1e-12 * eigenvalues.max() / c)
        W = (vectors / np.sqrt(scaled)) @ vectors.T
        step = np.linalg.solve(A, W_inv.T @ gradient_w) * P / (d + P + 1)
        while n < budget:
            trial = x - eta * step
            f_trial = f(trial)
            n += 1
            if f_trial < fx:
                x, fx, eta = trial, f_trial, min(1.0, eta * 1.5)
                break
            eta *= 0.5
            if eta < 1e-8:
                break
        length = np.linalg.norm(eta * step)
        if length > 0:
            floor = 1e-14 * (1 + np.linalg.norm(x)) / np.sqrt(d)
            mu = max(min(mu, length / np.sqrt(d)), floor)
        history.append((n, fx))
    return x, fx, n, A, history


if __name__ == "__main__":
    import cma

    import zovh_opt

    warnings.simplefilter("ignore")
    d, cond = int(sys.argv[1]), float(sys.argv[2])
    rate = float(sys.argv[3]) if len(sys.argv) > 3 else None
    for seed in range(3):
        f, hessian = rotated_ellipsoid(d, cond, seed)
        x0 = np.zeros(d)
        f0 = f(x0)
        x, fx, n, A, history = run_full(f, x0, 1000 * d, np.random.default_rng(seed), rate)
        reached = next((k for k, v in history if v <= 1e-8 * f0), None)
        truth = np.linalg.inv(hessian)
        error = np.linalg.norm(np.linalg.inv(A) - truth) / np.linalg.norm(truth)
        default = zovh_opt.minimize(f, x0, rng=seed, options={"maxfev": 1000 * d})
        hits = default.trace["fun"] <= 1e-8 * f0
        default_reached = int(default.trace["nfev"][np.argmax(hits)]) if hits.any() else None
        default_error = np.linalg.norm(np.asarray(default.hess_inv) - truth)
        default_error /= np.linalg.norm(truth)
        options = {"seed": seed + 1, "verbose": -9, "maxfevals": 1000 * d, "ftarget": 1e-8 * f0}
        es = cma.CMAEvolutionStrategy(x0, 2.0, {**options, "tolfun": 0, "tolx": 0})
        es.optimize(f)
        print(
            f"seed {seed}: prototype f/f0 {fx / f0:.2e}, evaluations to 1e-8 f0: {reached}, "
            f"hess_inv relative error {error:.2f} | default zovh ({default.iteration}) to 1e-8 "
            f"f0: {default_reached}, hess_inv error {default_error:.2f} | CMA-ES f/f0 "
            f"{es.result.fbest / f0:.2e} "
            f"({es.result.evaluations})"
        )
