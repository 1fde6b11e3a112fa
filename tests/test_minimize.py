"""The driver and the ZoVH optimizer end to end."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.optimize
from scipy.optimize import OptimizeResult, OptimizeWarning

import zovh_opt
from zovh_opt import estimators
from zovh_opt.problems import quadratic, rosenbrock

FAST = {"maxiter": 30}


def sphere(x):
    return float(x @ x)


def test_result_fields_and_types():
    res = zovh_opt.minimize(sphere, np.ones(10), rng=0, options=FAST)
    assert isinstance(res, OptimizeResult)
    for key in ("x", "fun", "nit", "nfev", "status", "success", "message", "jac", "hess_inv"):
        assert key in res
    assert res.nit == 30 and res.nfev == 30 * 3 + 1
    assert res.status == 2 and not res.success and "iterations" in res.message
    assert isinstance(res.fun, float) and res.fun == sphere(res.x)
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


def test_scipy_bounds_warn():
    with pytest.warns(RuntimeWarning, match="bounds"):
        scipy.optimize.minimize(
            sphere, np.ones(4), method=zovh_opt.zovh, bounds=[(0, 1)] * 4, options={"maxiter": 2}
        )


def test_callback_forms():
    seen_x, seen_res = [], []
    zovh_opt.minimize(
        sphere, np.ones(5), rng=0, callback=lambda xk: seen_x.append(xk), options=FAST
    )

    def cb(intermediate_result):
        seen_res.append(intermediate_result)

    res = zovh_opt.minimize(sphere, np.ones(5), rng=0, callback=cb, options=FAST)
    assert len(seen_x) == len(seen_res) == 30
    assert isinstance(seen_res[-1], OptimizeResult) and seen_res[-1].nit == 30
    assert np.array_equal(seen_x[-1], res.x) and np.array_equal(seen_res[-1].x, res.x)
    seen_x[-1][:] = 99  # callbacks get copies
    assert not np.any(res.x == 99)


@pytest.mark.parametrize("through_scipy", [False, True])
def test_callback_stop_iteration(through_scipy):
    def cb(intermediate_result):
        if intermediate_result.nit == 5:
            raise StopIteration

    if through_scipy:
        res = scipy.optimize.minimize(
            sphere, np.ones(5), method=zovh_opt.zovh, callback=cb, options=FAST
        )
    else:
        res = zovh_opt.minimize(sphere, np.ones(5), callback=cb, options=FAST)
    assert res.nit == 5 and res.status == 99 and not res.success
    assert res.message == "`callback` raised `StopIteration`."


@pytest.mark.parametrize("method", ["zovh", "zo-sgd"])
@pytest.mark.parametrize("maxfev", [5, 17, 100])
def test_maxfev_is_a_hard_budget(method, maxfev):
    calls = []

    def f(x):
        calls.append(1)
        return sphere(x)

    res = zovh_opt.minimize(
        f, np.ones(5), method=method, options={"maxfev": maxfev, "maxiter": 10**6}
    )
    assert res.nfev == len(calls) <= maxfev
    per = 3 if method == "zovh" else 4
    assert res.nfev + per > maxfev  # and nothing was left unused that could fit an iteration
    assert res.status == 1


def test_maxfev_too_small():
    with pytest.raises(ValueError, match="maxfev"):
        zovh_opt.minimize(sphere, np.ones(5), options={"maxfev": 3})


def test_args_are_passed():
    res = zovh_opt.minimize(
        lambda x, a, b: float(a * (x @ x) + b), np.ones(3), args=(2.0, 1.0), options=FAST
    )
    assert res.fun == 2.0 * float(res.x @ res.x) + 1.0


def test_vectorized_matches_serial():
    opts = {**FAST, "learning_rate": 1e-6}
    serial = zovh_opt.minimize(rosenbrock, np.zeros(8), rng=3, options=opts)
    batched = zovh_opt.minimize(rosenbrock, np.zeros(8), rng=3, vectorized=True, options=opts)
    assert np.array_equal(serial.x, batched.x)


def test_map_like_workers_match_serial():
    serial = zovh_opt.minimize(sphere, np.ones(8), rng=3, options=FAST)
    mapped = zovh_opt.minimize(sphere, np.ones(8), rng=3, workers=map, options=FAST)
    assert np.array_equal(serial.x, mapped.x)


def test_float32_is_kept():
    res = zovh_opt.minimize(quadratic, np.ones(20, dtype=np.float32), rng=0, options=FAST)
    assert res.x.dtype == np.float32 and res.jac.dtype == np.float32


def test_nonfinite_value_stops_with_finite_x():
    def f(x):
        return np.nan if x[0] < 0.9 else sphere(x)

    res = zovh_opt.minimize(f, np.ones(5), rng=0, options={"learning_rate": 0.05, "maxiter": 1000})
    assert res.status == 3 and not res.success
    assert np.all(np.isfinite(res.x))


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"x0": np.ones((2, 2))}, ValueError, "x0 must be a non-empty one-dimensional"),
        ({"x0": np.array([1.0, np.inf])}, ValueError, "x0 must be finite"),
        ({"fun": 3}, TypeError, "fun must be callable"),
        ({"method": "bfgs"}, ValueError, "method must be one of"),
        (
            {"options": {"learning_rate": -1}},
            ValueError,
            "learning_rate must be a finite number > 0",
        ),
        ({"options": {"n_directions": 2}}, ValueError, "n_directions must be >= 3"),
        ({"options": {"history": 0}}, ValueError, "history must be an integer >= 1"),
        ({"options": {"inverse": "dense"}}, ValueError, "inverse must be one of"),
        ({"rng": np.random.RandomState(0)}, TypeError, "RandomState"),
        ({"fun": lambda x: "a"}, TypeError, "fun must return a real scalar"),
        ({"fun": lambda x: np.ones(2)}, TypeError, "fun must return a real scalar"),
    ],
)
def test_bad_input(kwargs, exc, match):
    call = {"fun": sphere, "x0": np.ones(4), "options": {"maxiter": 2}, **kwargs}
    with pytest.raises(exc, match=match):
        zovh_opt.minimize(**call)


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


def test_decoupled_step_is_inverse_times_gradient():
    opt = zovh_opt.ZoVH(
        np.linspace(-1, 1, 30), rng=0, product="decoupled", history=1, n_directions=4
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
    opt = zovh_opt.ZoVH(np.zeros(12), rng=1, history=2)
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


def test_ask_tell_protocol_errors():
    opt = zovh_opt.ZoVH(np.zeros(5), rng=0)
    with pytest.raises(RuntimeError, match="preceding ask"):
        opt.tell(np.zeros(3))
    opt.ask()
    with pytest.raises(RuntimeError, match="twice"):
        opt.ask()
    with pytest.raises(ValueError, match="expects 3 values"):
        opt.tell(np.zeros(4))


# --- end to end ----------------------------------------------------------------------------


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
