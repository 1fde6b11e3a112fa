"""The driver and the ZoVH optimizer end to end."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.optimize
from scipy.optimize import OptimizeResult, OptimizeWarning

import zovh_opt
from zovh_opt import estimators
from zovh_opt._methods.zovh_preconditioned import default_pairs
from zovh_opt._noise.monitor import measurements  # x0's and the best point's values
from zovh_opt.problems import quadratic, rosenbrock

# 30 iterations of the method (counted evaluations: its own; the quasi-Newton phase's
# gradients cost d + 1 each, tests/test_quasi_newton_phase.py)
FAST = {"maxiter": 30, "quasi_newton": False}


def sphere(x):
    return float(x @ x)


def valley(x):
    """Rosenbrock's function from 0 (its minimum is at 1): no default run solves it in
    ``FAST``'s 30 iterations (the sphere's ends by ``xtol`` before)."""
    return float(rosenbrock(np.asarray(x)))


def test_result_fields_and_types():
    res = zovh_opt.minimize(valley, np.zeros(10), rng=0, options=FAST)
    assert isinstance(res, OptimizeResult)
    for key in ("x", "fun", "nit", "nfev", "status", "success", "message", "jac", "hess_inv"):
        assert key in res
    assert res.nit == 30 and res.nfev == 30 * 2 * default_pairs(10) + 1 + measurements(30)
    assert res.status == 2 and not res.success and "iterations" in res.message
    assert isinstance(res.fun, float) and res.fun == valley(res.x)
    assert res.x.shape == (10,) and res.jac.shape == (10,) and res.hess_inv.shape == (10, 10)


def test_same_seed_same_run_bit_for_bit():
    a = zovh_opt.minimize(sphere, np.ones(10), rng=42, options=FAST)
    b = zovh_opt.minimize(sphere, np.ones(10), rng=np.random.default_rng(42), options=FAST)
    c = zovh_opt.minimize(sphere, np.ones(10), rng=43, options=FAST)
    assert np.array_equal(a.x, b.x)
    assert not np.array_equal(a.x, c.x)


def test_scipy_custom_method_gives_the_same_x():
    opts = {"learning_rate": 1e-3, "history": 2, "maxiter": 40}
    ours = zovh_opt.minimize(sphere, np.ones(10), rng=7, options=opts)
    theirs = scipy.optimize.minimize(
        sphere, np.ones(10), method=zovh_opt.zovh, options={**opts, "rng": 7}
    )
    assert isinstance(theirs, OptimizeResult)
    assert np.array_equal(ours.x, theirs.x)
    assert theirs.nfev == ours.nfev


def test_scipy_unknown_option_warns_with_its_name():
    with pytest.warns(OptimizeWarning, match="bogus"):
        scipy.optimize.minimize(
            sphere, np.ones(4), method=zovh_opt.zovh, options={"bogus": 1, "maxiter": 2}
        )
    with pytest.warns(OptimizeWarning, match="bogus"):
        zovh_opt.minimize(sphere, np.ones(4), options={"bogus": 1, "maxiter": 2})


def test_callback_forms():
    seen_x, seen_res = [], []
    zovh_opt.minimize(
        valley, np.zeros(5), rng=0, callback=lambda xk: seen_x.append(xk), options=FAST
    )

    def cb(intermediate_result):
        seen_res.append(intermediate_result)

    res = zovh_opt.minimize(valley, np.zeros(5), rng=0, callback=cb, options=FAST)
    assert len(seen_x) == len(seen_res) == 30
    assert isinstance(seen_res[-1], OptimizeResult) and seen_res[-1].nit == 30
    assert seen_res[-1].nfev == 30 * 2 * default_pairs(5) + measurements(30)
    assert seen_res[-1].fun == res.trace["fun"][-1]
    assert np.array_equal(seen_x[-1], seen_res[-1].x)  # the last iterate, evaluated at the end
    assert res.fun <= valley(seen_x[-1])
    seen_x[-1][:] = 99  # callbacks get copies
    assert not np.any(res.x == 99)


def test_args_are_passed():
    res = zovh_opt.minimize(
        lambda x, a, b: float(a * (x @ x) + b), np.ones(3), args=(2.0, 1.0), options=FAST
    )
    assert res.fun == 2.0 * float(res.x @ res.x) + 1.0


def test_float32_is_kept():
    res = zovh_opt.minimize(quadratic, np.ones(20, dtype=np.float32), rng=0, options=FAST)
    assert res.x.dtype == np.float32 and res.jac.dtype == np.float32


# --- the optimizer against the kernels ----------------------------------------------------


@pytest.mark.parametrize("history", [1, 4])
@pytest.mark.parametrize("inverse", ["diagonal", "exact"])
def test_step_is_the_newton_direction_of_the_history(history, inverse):
    """Algorithm 1: x_{t+1} = x_t - eta * p(U_hist, y_hist), with p from `newton_direction`."""
    opt = zovh_opt.ZoVH(
        np.linspace(-1, 1, 30), rng=0, learning_rate=1e-6, history=history, inverse=inverse
    )
    U_hist, y_hist = [], []
    for _ in range(6):
        x = opt.x
        points = opt.ask()
        U_hist.append((points - x) / opt.smoothing)
        values = np.array([rosenbrock(p) for p in points])
        y_hist.append(values)
        opt.tell(values)
        U = np.concatenate(U_hist[-history:])
        y = np.concatenate(y_hist[-history:])
        p = estimators.newton_direction(
            U, y, opt.smoothing, opt.regularization, exact=inverse == "exact"
        )
        np.testing.assert_allclose(opt.x - x, -1e-6 * p, rtol=1e-8)


@pytest.mark.parametrize("product", ["shared", "decoupled"])
def test_auto_step_is_the_newton_direction_with_the_adapted_lambda(product):
    """learning_rate="auto": the first step (from a measurement of x0) is -eta p with p the
    kernels' direction at the lambda ZoVH chose, eta making it 0.1 |x0| long, and no
    Woodbury denominator comes closer to 0 than half its lambda^2 (M - 1) term."""
    x0 = np.linspace(-1, 1, 30)
    opt = zovh_opt.ZoVH(x0, rng=0, curvature="off", product=product, n_directions=4)
    points = opt.ask()
    values = np.array([rosenbrock(p) for p in points])
    opt.tell(values)
    mu, lam = opt.smoothing, opt.regularization
    U = (points - x0) / mu
    if product == "shared":
        p = estimators.newton_direction(U, values, mu, lam)
        hess_U, hess_y = U, values
    else:
        inv = estimators.inverse_hessian(U[:4], values[:4], mu, lam)
        p = inv.matvec(estimators.gradient(U[4:], values[4:], mu))
        hess_U, hess_y = U[:4], values[:4]
    np.testing.assert_allclose(opt.x - x0, -opt.learning_rate * p, rtol=1e-8)
    np.testing.assert_allclose(np.linalg.norm(opt.x - x0), 0.1 * np.linalg.norm(x0), rtol=1e-8)
    nu = estimators.centred_values(hess_y, mu)
    M = hess_y.shape[0]
    denominators = lam * lam * (M - 1) + lam * nu * np.sum(hess_U * hess_U, axis=1)
    assert np.all(denominators >= 0.5 * lam * lam * (M - 1) * (1 - 1e-12))


def test_decoupled_step_is_inverse_times_gradient():
    opt = zovh_opt.ZoVH(
        np.linspace(-1, 1, 30),
        rng=0,
        product="decoupled",
        history=1,
        n_directions=4,
        learning_rate=1e-4,
    )
    x = opt.x
    points = opt.ask()
    assert points.shape == (8, 30)
    values = np.array([rosenbrock(p) for p in points])
    opt.tell(values)
    U = (points - x) / opt.smoothing
    inv = estimators.inverse_hessian(U[:4], values[:4], opt.smoothing, opt.regularization)
    g = estimators.gradient(U[4:], values[4:], opt.smoothing)
    np.testing.assert_allclose(opt.x, x - opt.learning_rate * inv.matvec(g), rtol=1e-9)


@pytest.mark.parametrize("product", ["shared", "decoupled"])
def test_seeds_and_vectors_are_bit_identical(product):
    opts = {"product": product, "history": 3, "maxiter": 25, "learning_rate": 1e-6}
    a = zovh_opt.minimize(
        rosenbrock, np.zeros(50), rng=5, options={**opts, "directions": "vectors"}
    )
    b = zovh_opt.minimize(rosenbrock, np.zeros(50), rng=5, options={**opts, "directions": "seeds"})
    assert np.array_equal(a.x, b.x) and np.array_equal(a.jac, b.jac)
    v = np.arange(50.0)
    assert np.array_equal(a.hess_inv.matvec(v), b.hess_inv.matvec(v))


def test_result_hess_inv_is_the_history_inverse():
    opt = zovh_opt.ZoVH(np.zeros(12), rng=1, history=2, learning_rate=1e-4)
    U_hist, y_hist = [], []
    for _ in range(3):
        x = opt.x
        points = opt.ask()
        U_hist.append((points - x) / opt.smoothing)
        y_hist.append(np.array([rosenbrock(p) for p in points]))
        opt.tell(y_hist[-1])
    U, y = np.concatenate(U_hist[-2:]), np.concatenate(y_hist[-2:])
    est = opt.estimates()
    ref = estimators.inverse_hessian(U, y, opt.smoothing, opt.regularization).todense()
    np.testing.assert_allclose(est["hess_inv"].todense(), ref, rtol=1e-9)
    np.testing.assert_allclose(est["jac"], estimators.gradient(U, y, opt.smoothing), rtol=1e-9)


# --- end to end ----------------------------------------------------------------------------


@pytest.mark.slow
def test_rosenbrock_zovh_beats_zo_sgd_at_equal_budget():
    """d = 1000, x0 ~ N(0, I), 30000 evaluations each, each method at its best rate of a grid.

    Learning rates are compared at equal effective gradient step (eta / lambda for ZoVH).
    """
    x0 = np.random.default_rng(1).standard_normal(1000)
    budget = {"maxfev": 30001, "maxiter": 10**6}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # overflow in diverging grid points
        best = {}
        for method, scale in (("zovh", 0.1), ("zo-sgd", 1.0)):
            runs = [
                zovh_opt.minimize(
                    rosenbrock,
                    x0,
                    method=method,
                    rng=0,
                    options={**budget, "learning_rate": step * scale},
                ).fun
                for step in (3e-7, 1e-6, 3e-6)
            ]
            best[method] = min(f for f in runs if np.isfinite(f))
    f0 = float(rosenbrock(x0))
    print(f"f0 = {f0:.4g}, best zovh = {best['zovh']:.4g}, best zo-sgd = {best['zo-sgd']:.4g}")
    assert best["zovh"] < best["zo-sgd"] < f0
