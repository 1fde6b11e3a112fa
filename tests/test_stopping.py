"""Item 6 of the driver issue: maxiter, maxfev, ftarget, ftol (tol), maxtime, callback."""

from __future__ import annotations

import time

import numpy as np
import pytest

import zovh_opt
from zovh_opt._methods.zovh_preconditioned import default_pairs
from zovh_opt._noise.monitor import measurements
from zovh_opt.tuning import DEFAULT

D = 40


def sphere(x):
    return float(x @ x)


@pytest.mark.parametrize("method", ["zovh", "zo-sgd"])
@pytest.mark.parametrize("extra", [1, 13, 100])
def test_maxfev_is_a_hard_budget(method, extra):
    calls = []

    def f(x):
        calls.append(1)
        return sphere(x)

    per = 2 * default_pairs(D) if method == "zovh" else 4  # points per iteration
    maxfev = (
        DEFAULT.noise.PROBE + per + extra
    )  # x0, one iteration, the final evaluation, some left over
    res = zovh_opt.minimize(
        f, np.ones(D), method=method, options={"maxfev": maxfev, "maxiter": 10**6}
    )
    assert res.nfev == len(calls) <= maxfev
    assert res.nfev + per > maxfev  # nothing left unused that could fit an iteration
    assert res.status == 1 and "function evaluations" in res.message


def test_maxiter():
    res = zovh_opt.minimize(sphere, np.ones(D), options={"maxiter": 7})
    assert res.nit == 7 and res.status == 2 and "iterations" in res.message


def test_ftarget_stops_at_the_first_point_that_reaches_it():
    values = []

    def f(x):
        values.append(sphere(x))
        return values[-1]

    target = 0.5 * D
    res = zovh_opt.minimize(
        f, np.ones(D), rng=0, options={"ftarget": target, "learning_rate": 1e-3, "maxiter": 5000}
    )
    assert res.status == 4 and res.success and "ftarget" in res.message
    assert res.fun <= target
    before_last_iteration = values[: res.nfev - 1 - 3]  # without the last iteration and final
    assert min(before_last_iteration) > target


def test_ftol_stops_when_the_smoothed_decrease_is_below_it():
    window = 20
    res = zovh_opt.minimize(
        sphere,
        np.ones(D),
        rng=0,
        tol=1e-2,
        options={"learning_rate": 1e-3, "ftol_window": window, "maxiter": 20000},
    )
    assert res.status == 0 and res.success and "ftol" in res.message
    f = np.array(res.trace["fun"])

    def decrease_small(t):  # the rule, evaluated on the trace after iteration t (1-based)
        before = np.median(f[t - 2 * window : t - window])
        after = np.median(f[t - window : t])
        # relative to the estimates; the floor, eps times f's scale at the start (the first
        # f estimate, here larger than the spread of the first batch's values), is far below
        floor = np.finfo(np.float64).eps * abs(f[0])
        return before - after <= max(1e-2 * max(abs(before), abs(after)), floor)

    # checked at the end of each window of `window` iterations, medians of whole windows
    assert res.nit % window == 0 and decrease_small(res.nit)
    assert not any(decrease_small(t) for t in range(2 * window, res.nit, window))
    assert res.nit < 20000


def test_options_ftol_wins_over_tol():
    res = zovh_opt.minimize(
        sphere,
        np.ones(D),
        rng=0,
        tol=0.5,
        options={"ftol": 1e-9, "learning_rate": 1e-3, "maxiter": 300},
    )
    assert res.status == 2


@pytest.mark.parametrize("d", [4, D])
@pytest.mark.parametrize("noise", [0.0, 0.1])
def test_maxtime_bounds_the_whole_call(noise, d):
    """An objective of 10 ms a call: the run, its final evaluations included, returns within
    0.5 s of a maxtime of 0.3 s (issue #67); at d = 4 having used most of it, at d = 40, where
    the first gradient takes 41 calls, without starting an iteration it cannot finish. A noisy
    end that had no time to compare with x0 says so, and no choice by values."""
    rng = np.random.default_rng(0)

    def slow(x):
        time.sleep(0.01)
        return sphere(x) + noise * rng.standard_normal()

    start = time.perf_counter()
    res = zovh_opt.minimize(slow, np.ones(d), rng=0, options={"maxtime": 0.3, "maxiter": 10**6})
    took = time.perf_counter() - start
    assert res.status == 5 and "Maximum time" in res.message and not res.success
    assert took <= 0.5 and np.isfinite(res.fun)
    if d == 4:  # (with noise the 30 calls go to x0's measurements and the end)
        assert took >= 0.2 and (res.nit > 0 or noise)
    if noise:  # the message says how x was chosen: by the comparison with x0, or without one
        assert ("no time to compare" in res.message) != ("x was chosen by" in res.message)


def test_a_noisy_end_without_time_to_compare_says_so():
    """Twenty values at x0 take 0.2 s of a maxtime of 0.5 s, and the comparison with x0
    would take forty more: the end returns the final iterate and says that no comparison
    chose it."""
    rng = np.random.default_rng(0)

    def slow(x):
        time.sleep(0.01)
        return sphere(x) + 0.1 * rng.standard_normal()

    res = zovh_opt.minimize(
        slow, np.ones(4), rng=0, options={"maxtime": 0.5, "final_evaluations": 20}
    )
    assert res.status == 5 and "no time to compare the final iterate with x0" in res.message
    assert "x was chosen by" not in res.message and np.isfinite(res.fun)


# the method's iterations (the quasi-Newton phase's: tests/test_quasi_newton_phase.py)
METHOD_30 = {"maxiter": 30, "quasi_newton": False}


@pytest.mark.parametrize("through_scipy", [False, True])
def test_callback_stop_iteration(through_scipy):
    import scipy.optimize

    def cb(intermediate_result):
        if intermediate_result.nit == 5:
            raise StopIteration

    if through_scipy:
        res = scipy.optimize.minimize(
            sphere, np.ones(D), method=zovh_opt.zovh, callback=cb, options=METHOD_30
        )
    else:
        res = zovh_opt.minimize(sphere, np.ones(D), callback=cb, options=METHOD_30)
    assert res.nit == 5 and res.status == 99 and not res.success
    assert res.message == "`callback` raised `StopIteration`."
    assert res.nfev == 5 * 2 * default_pairs(D) + 1 + measurements(5)


def rounded_sphere(x):
    """A step function: a sphere rounded to two decimals (a plateau around its minimum)."""
    return float(np.round(np.sum((x - 1.234) ** 2), 2))


def test_a_plateau_ends_the_run_after_flat_iterations():
    """Once every value of ``flat_iterations`` iterations in a row is one number the run ends
    with success; without the rule the same run goes on (the step rule only shrinks its
    queries on a plateau) and makes the same evaluations up to there."""
    runs = {}
    for flat in (3, None):
        values = []

        def f(x, values=values):
            values.append(rounded_sphere(x))
            return values[-1]

        options = {"flat_iterations": flat, "noisy": False, "quasi_newton": False}
        runs[flat] = zovh_opt.minimize(f, np.zeros(5), rng=0, options=options), values
    (res, values), (longer, without) = runs[3], runs[None]
    assert res.status == 0 and "on a plateau of f" in res.message and res.fun == 0.0
    per, rest = divmod(res.nfev - 1, res.nit)  # the iterations and the final evaluation
    assert rest == 0
    last = np.array(values[-1 - 3 * per : -1])
    assert np.all(last == last[0])
    assert not np.all(np.array(values[-1 - 4 * per : -1 - 3 * per]) == last[0])
    assert longer.nfev > res.nfev and "plateau" not in longer.message
    assert without[: res.nfev - 1] == values[:-1]


def test_a_start_on_a_plateau_says_so():
    res = zovh_opt.minimize(lambda x: max(float(x @ x), 1.0), np.full(3, 0.3), rng=0)
    assert res.success and "x0 lies on a plateau" in res.message
    assert res.trust_region["ended"] == "radius"  # the opening's first points: no slope
    assert res.quasi_newton["ended"] == "zero gradient" and res.nit == 1 + 1 + 5


@pytest.mark.parametrize(
    "options, status",
    [({"noisy": True, "maxfev": 400}, 1), ({"learning_rate": 1e-3, "maxiter": 30}, 2)],
)
def test_no_plateau_rule_with_noise_or_a_fixed_rate(options, status):
    """Equal values are no plateau where the objective is known to be noisy (discrete noise
    repeats values by chance), nor with a fixed rate (no tolerance is automatic there)."""
    res = zovh_opt.minimize(lambda x: 1.0, np.ones(4), rng=0, options=options)
    assert res.status == status


def test_a_checkpoint_from_before_the_plateau_rule_runs_without_it():
    opt = zovh_opt.Optimizer(np.ones(4), rng=0)
    state = opt._parts.stopping.state()
    for key in ("flat", "flat_value", "varied"):
        del state[key]
    opt._parts.stopping.load_state(state)
    assert opt.options["flat_iterations"] is None


def rules_after_a_converged_phase(value):
    """The stopping rules of a default run, told that its quasi-Newton phase converged at
    ``value``."""
    rules = zovh_opt.Optimizer(np.ones(4), rng=0)._parts.stopping
    rules.converged_value = value
    return rules


@pytest.mark.parametrize(
    "lowest, stops",
    [(1.0, True), (1.0 - 1e-13, True), (1.0 - 1e-9, False), (0.5, False)],
    ids=["none-lower", "lower-within-ftol", "lower", "much-lower"],
)
def test_after_a_converged_phase_the_methods_first_iterations_decide(lowest, stops):
    """The method's first CONVERGED_WINDOW (10) iterations after a converged quasi-Newton
    phase end the run where they found no value below the phase's (beyond ftol = 1e-12
    relative); else the ftol windows go on as always, the phase's value forgotten."""
    rules = rules_after_a_converged_phase(1.0)
    window = rules.options["ftol_window"]
    assert DEFAULT.stopping.CONVERGED_WINDOW == 10 < window == 50
    values = np.array([1.0, 2.0])
    verdicts = [rules.after_iteration(1.5, lowest, 1.0, 1.0, 1.0, values) for _ in range(window)]
    decided = verdicts[DEFAULT.stopping.CONVERGED_WINDOW - 1]
    assert verdicts[: DEFAULT.stopping.CONVERGED_WINDOW - 1] == [None] * (
        DEFAULT.stopping.CONVERGED_WINDOW - 1
    )
    if stops:
        assert decided.status == 0
        phase = "The quasi-Newton phase converged (f = 1 at its last point), "
        assert decided.message.startswith(phase)
        assert "method's first 10 iterations" in decided.message
    else:
        assert verdicts[DEFAULT.stopping.CONVERGED_WINDOW - 1 :] == [None] * (
            window - DEFAULT.stopping.CONVERGED_WINDOW + 1
        )
        assert rules.converged_value is None
        assert rules.previous_median == 1.5  # the ordinary window, compared with the next


def test_a_shorter_ftol_window_decides_after_a_converged_phase():
    """A user's ftol_window shorter than CONVERGED_WINDOW is the iterations that decide."""
    rules = zovh_opt.Optimizer(np.ones(4), rng=0, options={"ftol_window": 4})._parts.stopping
    rules.converged_value = 1.0
    values = np.array([1.0, 2.0])
    verdicts = [rules.after_iteration(1.5, 1.0, 1.0, 1.0, 1.0, values) for _ in range(4)]
    assert verdicts[:3] == [None] * 3
    assert "method's first 4 iterations" in verdicts[3].message


def test_the_converged_phase_value_survives_a_checkpoint_and_old_ones_load_without_it():
    rules = rules_after_a_converged_phase(2.5)
    state = rules.state()
    fresh = rules_after_a_converged_phase(None)
    fresh.load_state(state)
    assert fresh.converged_value == 2.5
    del state["converged_value"]
    fresh.load_state(state)
    assert fresh.converged_value is None
