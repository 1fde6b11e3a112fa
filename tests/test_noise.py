"""Item 8 of the driver issue: what ``fun`` means for a noisy objective.

With ``f(x) + sigma * xi`` the default (best evaluated value) is biased low: it is the minimum of
thousands of noisy values. ``noisy=True`` reports the final iterate and the mean of fresh
evaluations there, unbiased for f(x), with its standard error.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import zovh_opt
from zovh_opt._noise import NoiseMonitor, fresh_evaluations
from zovh_opt._returned_point import ReturnedPoint, significantly_lower
from zovh_opt.problems import ackley

D, SIGMA, RUNS = 100, 1.0, 8


def runs(noisy):
    gaps, errors = [], []
    for seed in range(RUNS):
        noise = np.random.default_rng(100 + seed)

        def f(x, noise=noise):
            return float(x @ x) + SIGMA * noise.standard_normal()

        res = zovh_opt.minimize(
            f,
            np.ones(D),
            rng=seed,
            options={"learning_rate": 1e-3, "maxiter": 1000, "noisy": noisy},
        )
        gaps.append(res.fun - float(res.x @ res.x))  # reported minus true f at x
        errors.append(res.get("fun_std_error"))
    return np.array(gaps), errors


def test_default_fun_is_biased_low_under_noise():
    gaps, _ = runs(noisy=False)
    # unbiased gaps of spread sigma would make this a 1-in-256 event, with a mean near 0
    assert np.all(gaps < 0) and gaps.mean() < -SIGMA


def test_noisy_fun_is_unbiased_with_a_correct_standard_error():
    gaps, errors = runs(noisy=True)
    # 1 % of the run's evaluations at x: 10 at x0, 3 x 1000 in the iterations, 10 at the
    # final iterate, then 31 at x (test_the_returned_point_takes_a_share_of_the_run)
    n = 31
    sem = SIGMA / np.sqrt(n)
    assert np.all(np.abs(gaps) < 5 * sem)
    assert abs(gaps.mean()) < 4 * sem / np.sqrt(RUNS)
    # the sample standard deviation of 10 normals lies in [0.3, 2] sigma but with
    # probability < 1e-3 over 8 runs (chi-square with 9 degrees of freedom)
    assert all(0.3 * sem < e < 2.0 * sem for e in errors)


def test_noisy_on_a_deterministic_objective_reports_f_at_x():
    res = zovh_opt.minimize(
        lambda x: float(x @ x),
        np.ones(D),
        rng=0,
        options={"learning_rate": 1e-3, "maxiter": 50, "noisy": True, "final_evaluations": 3},
    )
    assert res.fun == float(res.x @ res.x) and res.fun_std_error == 0.0
    assert res.nfev == 50 * 3 + 3 * 3  # final iterate and x0 compared, then x measured


def recorded(f, sigma, seed):
    """``f`` plus noise, keeping every point evaluated and its value."""
    noise, points, values = np.random.default_rng(seed), [], []

    def noisy(x):
        points.append(np.array(x))
        values.append(float(f(x)) + sigma * noise.standard_normal())
        return values[-1]

    return noisy, points, values


def trailing(points, x):
    """How many of the last ``points`` equal ``x``."""
    return next((k for k, p in enumerate(reversed(points)) if not np.array_equal(p, x)), 0)


def test_a_noisy_run_that_ends_above_its_start_returns_the_start():
    """Where noise buries the slope (Ackley, d = 1000, sigma = 1, 8 d evaluations) the step
    rule accepts trials by chance and the iterate drifts uphill. x0 is measured
    ``final_evaluations`` times before the first iteration, the final iterate and the average
    of the centres as often at the end; the lower mean wins, and is measured ``m`` times
    more (1 % of the run's evaluations, 80 reserved): ``x`` is x0 and ``fun`` the mean of
    those last values, which the choice did not see."""
    n, d = 10, 1000
    x0 = np.random.default_rng(0).standard_normal(d)
    fun, points, values = recorded(ackley, 1.0, 5)
    res = zovh_opt.minimize(fun, x0, rng=0, options={"maxfev": 8 * d, "noisy": True})
    m = trailing(points, x0)
    assert m == 80 == math.ceil((len(points) - m) / 99)
    final, average = points[-2 * n - m], points[-n - m]
    for point, block in ((final, slice(-2 * n - m, -n - m)), (average, slice(-n - m, -m))):
        assert ackley(point) > ackley(x0) + 0.3  # the drift this guards against
        assert all(np.array_equal(p, point) for p in points[block])
        assert np.mean(values[:n]) < np.mean(values[block])
    assert all(np.array_equal(p, x0) for p in points[:n])
    assert np.array_equal(res.x, x0) and "x is the start" in res.message
    assert res.fun == sum(values[-m:]) / m and res.nfev == len(points) <= 8 * d


@pytest.mark.parametrize("seed", [0, 1])
def test_a_noisy_run_that_made_progress_returns_the_candidate_of_its_comparison(seed):
    """The final iterate and the average of the centres are measured, 10 values each; the
    average is the candidate unless the iterate's values are significantly the lower (seed 0:
    the average; seed 1: the noise drew the iterate's values 1.5 standard errors low), it
    beats x0, and 30 fresh values there (1 % of 3000) give ``fun``."""
    n = 10
    fun, points, values = recorded(lambda x: float(x @ x), 1.0, 6)
    res = zovh_opt.minimize(fun, np.ones(D), rng=seed, options={"maxfev": 3000, "noisy": True})
    assert float(res.x @ res.x) < D / 10 and "start" not in res.message
    m = 30
    iterate, average = slice(-2 * n - m, -n - m), slice(-n - m, -m)
    assert all(np.array_equal(p, points[-2 * n - m]) for p in points[iterate])
    assert all(np.array_equal(p, points[-n - m]) for p in points[average])
    assert all(np.array_equal(p, res.x) for p in points[-m:])
    lower = significantly_lower(values[iterate], values[average])
    assert lower == (seed == 1)
    assert np.array_equal(res.x, points[-2 * n - m] if lower else points[-n - m])
    assert ("average" in res.message) != lower
    assert all(np.array_equal(p, np.ones(D)) for p in points[:n])  # x0, before iterating
    assert res.fun == sum(values[-m:]) / m and res.nfev == len(points) <= 3000


def test_a_checkpoint_between_the_comparison_and_the_last_measurement(tmp_path):
    options = {"learning_rate": 1e-3, "maxiter": 20, "noisy": True, "final_evaluations": 4}
    fun, _, _ = recorded(lambda x: float(x @ x), 1.0, 7)
    opt = zovh_opt.Optimizer(np.ones(D), rng=2, options=options)
    for _ in range(1 + 20 + 1):  # 4 values at x0, 20 iterations, 4 at the final iterate
        opt.tell([fun(p) for p in opt.ask()])
    assert opt._returned.compared is not None and not opt.done
    opt.save(tmp_path / "run.npz")
    loaded = zovh_opt.Optimizer.load(tmp_path / "run.npz")
    results = []
    for o in (opt, loaded):
        points = o.ask()
        assert points.shape == (4, D) and not o.done
        o.tell([float(p @ p) for p in points])
        results.append(o.result())
    assert results[0].fun == results[1].fun and np.array_equal(results[0].x, results[1].x)
    assert opt.done and loaded.done and results[0].nfev == 20 * 3 + 12


def test_the_returned_point_takes_a_share_of_the_run():
    """With ``final_evaluations`` left to its default, a noisy run reserves 1 % of
    ``maxfev`` (10 to 1000) for the fresh values at its returned point, and takes 1 % of the
    evaluations it made (these included) where it ended before ``maxfev``; a given
    ``final_evaluations`` is taken as it is."""
    assert [fresh_evaluations(n) for n in (50, 1000, 20_000, 20_050, 10**6)] == [
        10, 10, 200, 201, 1000]  # fmt: skip
    returned = ReturnedPoint(noisy=False, final_evaluations=1, start=None, xp=np)
    returned.become_noisy(10, np.zeros(3), [1.0] * 10, fresh=200)
    assert returned.reserve == 10 + 200  # the final iterate's (no average yet), x's
    returned.compared = [1.0] * 10
    assert [returned.final_size(n) for n in (19_790, 2970, 99, 5)] == [200, 30, 10, 10]
    given = ReturnedPoint(noisy=False, final_evaluations=1, start=None, xp=np)
    given.become_noisy(7, np.zeros(3), [1.0] * 7, fresh=7)
    given.compared = [1.0] * 7
    assert given.final_size(19_790) == 7
    options = {"maxfev": 20_000, "noisy": True, "final_evaluations": 7}
    fun, points, _ = recorded(lambda x: float(x @ x), 1.0, 8)
    res = zovh_opt.minimize(fun, np.ones(20), rng=0, options=options)
    assert trailing(points, res.x) in (7, 14) and res.nfev <= 20_000


def test_noise_found_late_reserves_what_the_budget_leaves():
    """Found with little budget left, the values at x0 and at the end fit in it: the fresh
    sample shrinks first, never below the others'."""
    monitor = NoiseMonitor("auto", True, None, start=np.zeros(3), maxfev=20_000)
    assert (monitor.evaluations, monitor.fresh) == (10, 200)
    monitor.values = [1.0, 2.0]
    monitor.found(room=100)
    assert (monitor.evaluations, monitor.fresh) == (10, 100 + 2 - 20)
    monitor = NoiseMonitor("auto", True, None, start=np.zeros(3), maxfev=20_000)
    monitor.values = [1.0, 2.0]
    monitor.found(room=19)
    assert (monitor.evaluations, monitor.fresh) == (7, 7)
