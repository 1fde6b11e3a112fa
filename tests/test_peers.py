"""The peer methods against independent NumPy transcriptions of their formulas, and theory.

Each test recovers the directions from the points a method asked for, recomputes the step with
plain NumPy from the formula in the method's docstring, and compares the new iterate.
"""

from __future__ import annotations

import numpy as np
import pytest

from zovh_opt import METHODS

D = 40
LR, MU = 1e-2, 0.1


def f_np(x):
    """A non-quadratic test function (so second differences carry information)."""
    return float(np.sum(x**2 / 2 + np.sin(x) + 0.1 * x**4))


def run(backend, method, iterations, **options):
    """Drive ``method`` for ``iterations`` steps; return the NumPy copies of each step's data."""
    x0 = backend.asarray(np.linspace(-1.0, 1.0, D))
    opt = METHODS[method](x0, rng=3, learning_rate=LR, smoothing=MU, **options)
    steps = []
    for _ in range(iterations):
        x = backend.to_numpy(opt.x).copy()
        points = backend.to_numpy(opt.ask())
        values = np.array([f_np(p) for p in points])
        opt.tell(backend.asarray(values))
        steps.append((x, points, values, backend.to_numpy(opt.x)))
    return opt, steps


def test_zoar_is_the_averaged_baseline_gradient_over_the_history(backend):
    K, N = 3, 4
    _, steps = run(backend, "zoar", 6, n_directions=K, history=N)
    x, _, _, x_new = steps[-1]
    U = np.concatenate([(p - xs) / MU for xs, p, _, _ in steps[-N:]])
    y = np.concatenate([v for _, _, v, _ in steps[-N:]])
    g = ((y - y.mean()) / MU) @ U / (N * K - 1)
    np.testing.assert_allclose(x_new, x - LR * g, rtol=1e-10, atol=1e-12)


def test_mezo_is_the_two_point_central_difference(backend):
    K = 2
    _, steps = run(backend, "mezo", 3, n_directions=K)
    x, points, y, x_new = steps[-1]
    U = (points[:K] - x) / MU
    np.testing.assert_allclose(points[K:], x - MU * U, rtol=1e-12, atol=1e-12)
    g = ((y[:K] - y[K:]) / (2 * MU * K)) @ U
    np.testing.assert_allclose(x_new, x - LR * g, rtol=1e-10, atol=1e-12)


def test_hizoo_preconditions_with_its_running_diagonal_hessian(backend):
    K, alpha = 2, 0.3  # a large alpha so that the diagonal estimate moves visibly
    opt, steps = run(backend, "hizoo", 4, n_directions=K, hessian_smoothing=alpha)
    sigma = np.ones(D)
    for x, points, y, x_new in steps:
        np.testing.assert_array_equal(points[0], x)
        U = (points[1 : K + 1] - x) * np.sqrt(sigma) / MU
        np.testing.assert_allclose(points[K + 1 :], x - MU * U / np.sqrt(sigma), rtol=1e-10)
        y0, yp, ym = y[0], y[1 : K + 1], y[K + 1 :]
        estimate = sigma * (((yp - 2 * y0 + ym) / (2 * MU**2 * K)) @ U**2)
        sigma = (1 - alpha) * sigma + alpha * np.abs(estimate)
        g = ((yp - ym) / (2 * MU * K)) @ U
        np.testing.assert_allclose(x_new, x - LR * g / np.sqrt(sigma), rtol=1e-9, atol=1e-12)
    assert not np.allclose(sigma, 1.0)
    np.testing.assert_allclose(backend.to_numpy(opt.hess_diag), sigma, rtol=1e-9)


@pytest.mark.parametrize("method, options", [("mezo", {}), ("zoar", {"history": 1})])
def test_gradient_estimates_are_unbiased_on_a_quadratic(method, options):
    """On f = x^T A x / 2 both estimates have mean A x exactly (Gaussian smoothing adds nothing
    to a quadratic's gradient); the tolerance is 5 standard errors of the Monte-Carlo mean."""
    rng = np.random.default_rng(0)
    d, n = 6, 20000
    A = np.diag(np.linspace(1.0, 3.0, d))
    x = rng.standard_normal(d)
    estimates = []
    for seed in range(n):
        opt = METHODS[method](x, rng=seed, learning_rate=1.0, smoothing=0.5, **options)
        points = opt.ask()
        opt.tell(np.einsum("ij,jk,ik->i", points, A, points) / 2)
        estimates.append(x - opt.x)  # the step with learning rate 1 is the estimate
    estimates = np.array(estimates)
    error = np.abs(estimates.mean(axis=0) - A @ x)
    assert np.all(error < 5 * estimates.std(axis=0) / np.sqrt(n))


@pytest.mark.parametrize("method", ["zoar", "hizoo", "mezo"])
def test_peers_decrease_a_quadratic(method):
    # single-direction ZO steps are stable on the unit quadratic for lr < 2 K / (d + 2)
    x0 = np.ones(200)
    opt = METHODS[method](x0, rng=0, learning_rate=2e-3)
    for _ in range(300):
        points = opt.ask()
        opt.tell(np.sum(points**2, axis=1) / 2)
    assert float(opt.x @ opt.x) < 0.5 * float(x0 @ x0)
