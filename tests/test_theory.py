"""Checks against theory: unbiasedness on a quadratic, and the Woodbury gap's d^(-1/2) decay.

The statistical tests use fixed seeds and tolerances derived from the estimators' variance; each
also checks that its tolerance is tight enough to reject a plausible wrong estimator.
"""

from __future__ import annotations

import numpy as np
import pytest

from zovh_opt import estimators

# mu = 1 and a point near the minimizer keep the slope term of y - b from swamping the
# curvature term, so 20000 draws resolve a 1/3 error in the normalisation (checked below)
D, K, MU, TRIALS = 20, 3, 1.0, 20000
# Bonferroni over the D (D + 1) / 2 distinct entries at a family-wise error of about 1e-6
Z = 6.0


def quadratic_problem(seed=0):
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((D, D)))
    A = Q @ np.diag(np.linspace(0.5, 5.0, D)) @ Q.T
    b = rng.standard_normal(D)
    x = -np.linalg.solve(A, b) + 0.3 * rng.standard_normal(D)
    return A, (lambda z: 0.5 * z @ A @ z + b @ z), x


def mean_and_halfwidth(samples):
    """Entry-wise mean and its Z-sigma half-width over the first axis."""
    n = samples.shape[0]
    return samples.mean(axis=0), Z * samples.std(axis=0, ddof=1) / np.sqrt(n)


def draws(estimate):
    A, f, x = quadratic_problem()
    rng = np.random.default_rng(1)
    out = np.empty((TRIALS, D, D))
    for t in range(TRIALS):
        U = rng.standard_normal((K, D))
        out[t] = estimate(U, f, x)
    return A, out


def zovh_hessian(U, f, x):
    return estimators.hessian(U, np.array([f(x + MU * u) for u in U]), MU)


def stein_two(U, f, x):
    return estimators.stein_two_point(U, np.array([f(x + MU * u) for u in U]), float(f(x)), MU)


def stein_three(U, f, x):
    y_plus = np.array([f(x + MU * u) for u in U])
    y_minus = np.array([f(x - MU * u) for u in U])
    return estimators.stein_three_point(U, y_plus, y_minus, float(f(x)), MU)


def central(U, f, x):
    y_plus = np.array([f(x + MU * u) for u in U])
    y_minus = np.array([f(x - MU * u) for u in U])
    return estimators.central_difference(U, y_plus, y_minus, float(f(x)), MU)


@pytest.mark.parametrize(
    "estimate", [zovh_hessian, stein_two, stein_three], ids=lambda f: f.__name__
)
def test_unbiased_on_quadratic(estimate):
    """E[H_hat] = grad^2 F_mu = A for a quadratic (Thm. bias-analysis, Cor. recovery-hess-stein)."""
    A, samples = draws(estimate)
    mean, half = mean_and_halfwidth(samples)
    assert np.all(np.abs(mean - A) <= half), np.max(np.abs(mean - A) / half)
    # power: the same tolerance rejects an estimate scaled by (K - 1) / K, i.e. the ZoVH
    # estimator with 1/K instead of the bias-correcting 1/(K - 1)
    assert np.any(np.abs(mean * (K - 1) / K - A) > half)


def test_central_difference_is_biased_as_predicted():
    """E[H_CD] = A + tr(A) I / 2 on a quadratic: the bias of eq. hess-est-cd."""
    A, samples = draws(central)
    mean, half = mean_and_halfwidth(samples)
    assert np.all(np.abs(mean - (A + np.trace(A) / 2 * np.eye(D))) <= half)
    assert np.any(np.abs(mean - A) > half)


def gap_sample(d, seed, M=3):
    """Gaussian directions and values with |nu_m| > 0.05 (mu = 1).

    The proposition assumes ||D^-1|| = O_p(1), so values are redrawn until no nu_m is near 0.
    """
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((M, d))
    while True:
        y = rng.standard_normal(M)
        if np.min(np.abs(y - y.mean())) > 0.05:
            return U, y


def woodbury_gap(U, y, lam=0.1):
    """||(H + lam I)^-1 - H_tilde^-1||_F through M x M algebra (mu = 1).

    Both operators are I / lam - U^T C U, so the gap is ||U^T (C_e - C_a) U||_F =
    sqrt(tr(Delta G Delta G)) with G = U U^T.
    """
    G = U @ U.T
    nu = estimators.centred_values(y, 1.0)
    delta = estimators.inverse_correction(G, nu, lam, exact=True) - estimators.inverse_correction(
        G, nu, lam, exact=False
    )
    return float(np.sqrt(np.trace(delta @ G @ delta @ G)))


def test_woodbury_gap_formula_matches_dense():
    U, y = gap_sample(60, 0)
    exact = estimators.inverse_hessian(U, y, 1.0, 0.1, exact=True).todense()
    approx = estimators.inverse_hessian(U, y, 1.0, 0.1).todense()
    assert np.isclose(woodbury_gap(U, y), np.linalg.norm(exact - approx), rtol=1e-8)


def test_woodbury_gap_decays_like_inverse_sqrt_d():
    """Prop. exact-vs-approx-inv-hess: the gap is O_p(K / sqrt(d)); K = 3, 50 seeds per d."""
    dims = np.array([100, 316, 1000, 3162, 10000])
    gaps = np.array(
        [np.mean([woodbury_gap(*gap_sample(int(d), s)) for s in range(50)]) for d in dims]
    )
    slope = np.polyfit(np.log(dims), np.log(gaps), 1)[0]
    print(f"fitted slope of log gap vs log d: {slope:.3f}")
    assert -0.6 <= slope <= -0.4, (slope, gaps)
