"""Item 1 of the driver issue: every argument and option is checked, with a clear message."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.optimize import OptimizeWarning

import zovh_opt
from zovh_opt._methods.zovh_preconditioned import default_pairs
from zovh_opt.tuning import DEFAULT


def sphere(x):
    return float(x @ x)


D = 30
BAD_ARGUMENTS = [
    ({"x0": np.ones((2, 2))}, ValueError, "x0 must be a non-empty one-dimensional"),
    ({"x0": np.ones(0)}, ValueError, "x0 must be a non-empty one-dimensional"),
    ({"x0": np.array([1.0, np.inf])}, ValueError, "x0 must be finite"),
    ({"x0": np.array([1.0, np.nan])}, ValueError, "x0 must be finite"),
    ({"x0": np.ones(3, dtype=complex)}, TypeError, "x0 must be real"),
    ({"x0": np.ones(3, dtype=bool)}, TypeError, "x0 must be real"),
    ({"x0": np.ones(3, dtype=np.float16)}, TypeError, "x0 must be float32 or float64"),
    ({"fun": 3}, TypeError, "fun must be callable"),
    ({"method": "bfgs"}, ValueError, "method must be one of"),
    ({"method": None}, ValueError, "method must be one of"),
    ({"options": [("maxiter", 3)]}, TypeError, "options must be a dict"),
    ({"rng": np.random.RandomState(0)}, TypeError, "RandomState"),
    ({"rng": -1}, ValueError, "rng: an integer seed must be non-negative"),
    ({"rng": "seed"}, TypeError, "rng: expected None, an int"),
    ({"workers": 0}, ValueError, "workers must be None, -1, an integer >= 1"),
    ({"workers": -2}, ValueError, "workers must be None, -1, an integer >= 1"),
    ({"workers": 1.5}, ValueError, "workers must be None, -1, an integer >= 1"),
    ({"workers": map, "vectorized": True}, ValueError, "workers cannot be combined"),
    ({"vectorized": "yes"}, TypeError, "vectorized must be True or False"),
    ({"tol": -1.0}, ValueError, "ftol must be a finite number > 0"),
    ({"callback": 3}, TypeError, "callback must be callable"),
]


@pytest.mark.parametrize("kwargs, exc, match", BAD_ARGUMENTS)
def test_bad_arguments(kwargs, exc, match):
    call = {"fun": sphere, "x0": np.ones(D), "options": {"maxiter": 2}, **kwargs}
    with pytest.raises(exc, match=match):
        zovh_opt.minimize(**call)


POSITIVE_REALS = ["learning_rate", "smoothing", "regularization", "maxtime", "ftol"]
INTEGERS = {  # name: smallest and largest allowed value
    "n_directions": (2, 10_000),  # 3 for product="shared": test_minimum_directions_per_method
    "history": (1, 10_000),
    "maxiter": (1, 2**62),
    "maxfev": (1, 2**62),
    "ftol_window": (1, 2**62),
    "flat_iterations": (1, 2**62),
    "final_evaluations": (1, 10_000),
    "max_restarts": (0, 10**6),
}


@pytest.mark.parametrize("name", POSITIVE_REALS)
@pytest.mark.parametrize(
    "value, exc",
    [
        (0.0, ValueError),
        (-1.0, ValueError),
        (np.nan, ValueError),
        (np.inf, ValueError),
        ("1", TypeError),
        (True, TypeError),
    ],
)
def test_positive_real_options(name, value, exc):
    with pytest.raises(exc, match=f"{name} must be a finite number > 0"):
        zovh_opt.minimize(sphere, np.ones(D), options={"maxiter": 2, name: value})


@pytest.mark.parametrize("name, bounds", sorted(INTEGERS.items()))
def test_integer_options(name, bounds):
    """Every integer option is bounded on both sides at validation, before any evaluation
    (``final_evaluations=10**9`` used to pass and then evaluate on)."""
    lo, hi = bounds
    allowed = rf"{name} must be an integer in \[{lo}, {hi}\]"
    for value in (lo - 1, hi + 1, 10**30):
        with pytest.raises(ValueError, match=allowed):
            zovh_opt.minimize(sphere, np.ones(D), options={"maxiter": 2, name: value})
    for value in (2.5, "3", True, np.inf):
        with pytest.raises(TypeError, match=allowed):
            zovh_opt.minimize(sphere, np.ones(D), options={"maxiter": 2, name: value})


def test_integral_floats_are_integers_as_in_scipy():
    res = zovh_opt.minimize(sphere, np.ones(D), options={"maxfev": 1e3, "maxiter": np.float64(5)})
    assert res.nit == 5
    with pytest.raises(ValueError, match=r"maxfev must be an integer in \[1, "):
        zovh_opt.minimize(sphere, np.ones(D), options={"maxfev": 0.0})


def test_zovh_history_is_bounded_by_its_host_algebra():
    with pytest.raises(ValueError, match="at most 4096 queries"):
        zovh_opt.Optimizer(
            np.ones(D), options={"curvature": "off", "n_directions": 100, "history": 41}
        )


@pytest.mark.parametrize(
    "options, exc, match",
    [
        ({"learning_rate": "fast"}, TypeError, "learning_rate must be a finite number > 0"),
        ({"ftarget": np.nan}, ValueError, "ftarget must be a finite number"),
        ({"ftarget": "low"}, TypeError, "ftarget must be a finite number"),
        ({"product": "both"}, ValueError, "product must be one of 'shared', 'decoupled'"),
        ({"inverse": "dense"}, ValueError, "inverse must be one of 'diagonal', 'exact'"),
        ({"directions": "disk"}, ValueError, "directions must be one of 'auto', 'vectors'"),
        ({"noisy": "yes"}, TypeError, "noisy must be True, False or 'auto'"),
        ({"progress": 2}, TypeError, "progress must be True or False"),
        ({"disp": -1}, ValueError, r"disp must be an integer in \[0, "),
    ],
)
def test_other_options(options, exc, match):
    with pytest.raises(exc, match=match):
        zovh_opt.minimize(sphere, np.ones(D), options={"maxiter": 2, **options})


@pytest.mark.parametrize(
    "method, options, exc, match",
    [
        ("hizoo", {"hessian_smoothing": 0.0}, ValueError, r"hessian_smoothing must be .*\(0, 1\]"),
        ("hizoo", {"hessian_smoothing": 1.5}, ValueError, r"hessian_smoothing must be .*\(0, 1\]"),
        ("hizoo", {"hessian_smoothing": "x"}, TypeError, "hessian_smoothing must be"),
        ("zoar", {"n_directions": 1, "history": 1}, ValueError, "n_directions \\* history >= 2"),
    ],
)
def test_peer_method_options(method, options, exc, match):
    with pytest.raises(exc, match=match):
        zovh_opt.minimize(sphere, np.ones(D), method=method, options={"maxiter": 2, **options})


@pytest.mark.parametrize(
    "method, options, minimum",
    [
        ("zovh", {}, 2),  # antithetic pairs
        ("zovh", {"curvature": "off"}, 3),
        ("zovh", {"curvature": "off", "product": "decoupled"}, 2),
        ("zo-sgd", {}, 1),
        ("zoar", {}, 1),
        ("hizoo", {}, 1),
        ("mezo", {}, 1),
    ],
)
def test_minimum_directions_per_method(method, options, minimum):
    with pytest.raises(ValueError, match=f"n_directions must be .*(>= |in \\[){minimum}"):
        zovh_opt.minimize(
            sphere,
            np.ones(D),
            method=method,
            options={"maxiter": 2, "n_directions": minimum - 1, **options},
        )
    res = zovh_opt.minimize(
        sphere,
        np.ones(D),
        method=method,
        options={"maxiter": 2, "n_directions": minimum, **options},
    )
    assert res.nit == 2


@pytest.mark.parametrize(
    "method, options, smallest",
    [
        ("zovh", {"curvature": "diagonal"}, DEFAULT.noise.PROBE + 2 * default_pairs(D) + 1),
        ("zovh", {}, DEFAULT.noise.PROBE + 4),  # the default runs the paper's iteration below 30 d
        ("zovh", {"curvature": "off"}, DEFAULT.noise.PROBE + 4),
        ("zo-sgd", {}, DEFAULT.noise.PROBE + 5),
        ("hizoo", {}, DEFAULT.noise.PROBE + 4),
        ("mezo", {"n_directions": 2}, DEFAULT.noise.PROBE + 5),
        # x0, the final iterate, a close comparison's more values at it and x0, then x
        ("zovh", {"curvature": "off", "noisy": True}, 3 + 4 * 10),
        ("zovh", {"curvature": "off", "product": "decoupled", "final_evaluations": 2}, 10),
    ],
)
def test_maxfev_too_small_for_one_iteration(method, options, smallest):
    with pytest.raises(ValueError, match=f"maxfev must allow one iteration .*>= {smallest}"):
        zovh_opt.minimize(
            sphere, np.ones(D), method=method, options={"maxfev": smallest - 1, **options}
        )
    res = zovh_opt.minimize(
        sphere, np.ones(D), method=method, options={"maxfev": smallest, **options}
    )
    assert res.nit == 1 and res.nfev == smallest


@pytest.mark.parametrize(
    "returns",
    ["a", None, 1 + 2j, np.ones(2), np.array([1 + 1j]), True, [1.0]],
    ids=["str", "None", "complex", "array", "complex-array", "bool", "list"],
)
def test_objective_must_return_a_real_scalar(returns):
    with pytest.raises(TypeError, match="the value returned by fun must be a real scalar"):
        zovh_opt.minimize(lambda x: returns, np.ones(D), options={"maxiter": 2})


def test_objective_may_return_real_scalars_of_any_kind():
    for value in (1, 1.5, np.float32(2.0), np.int64(3), np.array(4.0), np.array([5.0])):
        res = zovh_opt.minimize(lambda x, v=value: v, np.ones(D), options={"maxiter": 2})
        assert res.fun == float(np.reshape(value, ()))


def test_vectorized_objective_must_return_one_value_per_point():
    with pytest.raises(ValueError, match=f"must return {2 * default_pairs(D)} values"):
        options = {"quasi_newton": False}  # the method's ask (the phase's first: D points)
        zovh_opt.minimize(lambda X: np.ones(2), np.ones(D), vectorized=True, options=options)
    with pytest.raises(ValueError, match=f"must return {D} values"):
        zovh_opt.minimize(lambda X: np.ones(2), np.ones(D), vectorized=True)
    with pytest.raises(ValueError, match="must be one-dimensional"):
        zovh_opt.minimize(lambda X: np.ones((3, 1)), np.ones(D), vectorized=True)


def test_unknown_options_warn_like_scipy_and_are_ignored():
    with pytest.warns(OptimizeWarning, match="Unknown solver options: bogus, colour"):
        res = zovh_opt.minimize(
            sphere, np.ones(D), rng=0, options={"bogus": 1, "colour": 2, "maxiter": 3}
        )
    assert res.nit == 3
    with pytest.warns(OptimizeWarning, match="Unknown solver options: bogus"):
        zovh_opt.Optimizer(np.ones(D), options={"bogus": 1})


def test_method_specific_options_are_unknown_to_other_methods():
    with pytest.warns(OptimizeWarning, match="Unknown solver options: history"):
        zovh_opt.minimize(sphere, np.ones(D), method="zo-sgd", options={"history": 2, "maxiter": 2})


def test_a_scalar_x0_is_a_one_element_array_as_in_scipy():
    """0.1.0 refused a scalar x0, which scipy.optimize.minimize accepts."""
    seen = []

    def f(x):
        seen.append(x.shape)
        return float((x[0] - 0.5) ** 2)

    res = zovh_opt.minimize(f, 3.0, method="zo-sgd", rng=0, options={"maxiter": 20})
    assert res.x.shape == (1,) and set(seen) == {(1,)} and res.fun < 6.25


def test_maxfun_is_scipys_name_for_maxfev():
    """0.1.0 warned that maxfun (L-BFGS-B's and TNC's name) was unknown and ignored it."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # five iterations of K = 3 (the paper's iteration: a budget below 30 d) and the final
        # evaluation
        maxfun = DEFAULT.noise.PROBE + 5 * 3 + 1  # and x0 measured twice
        res = zovh_opt.minimize(sphere, np.ones(40), options={"maxfun": maxfun})
    assert res.nfev == maxfun and res.status == 1
    with pytest.raises(ValueError, match="maxfun is another name for maxfev"):
        zovh_opt.minimize(sphere, np.ones(D), options={"maxfun": 31, "maxfev": 40})
