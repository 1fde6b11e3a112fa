"""Item 8 of the driver issue: what ``fun`` means for a noisy objective.

With ``f(x) + sigma * xi`` the default (best evaluated value) is biased low: it is the minimum of
thousands of noisy values. ``noisy=True`` reports the final iterate and the mean of fresh
evaluations there, unbiased for f(x), with its standard error.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import zovh_opt
from zovh_opt._driver.returned_point import ReturnedPoint
from zovh_opt._noise.monitor import NoiseMonitor, fresh_evaluations
from zovh_opt._noise.samples import significantly_lower
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


def check_rounds(rounds, candidate, start):
    """A close comparison's rounds: half their values at the candidate, half at ``x0``."""
    for points, _ in rounds:
        half = len(points) // 2
        assert all(np.array_equal(p, candidate) for p in points[:half])
        assert all(np.array_equal(p, start) for p in points[half:])


def test_a_noisy_run_that_ends_above_its_start_returns_the_start(run_to_end, tune):
    """Where noise buries the slope (Ackley, d = 1000, sigma = 1, 8 d evaluations) the step
    rule accepts trials by chance and the iterate drifts uphill (here with the drift checks
    off, `zovh_opt._noise.drift`: with them this run goes back to x0 eight times, its final iterate
    ends 0.18 above x0's Ackley rather than 0.3, and it returns x0 too; the end's rule is what
    this test is about). x0 is measured
    ``final_evaluations`` times before the first iteration, the final iterate and the average
    of the centres as often at the end (and both the candidate and x0 more where that is
    close); the lower mean wins, and is measured afresh: ``x`` is x0 and ``fun`` the mean of
    those last values, which the choice did not see. The end takes 1 % of the run twice
    (80 reserved each): the close comparison's values and the fresh ones together."""
    tune("noise", CHECK_EVERY=10**9)
    n, d = 10, 1000
    x0 = np.random.default_rng(0).standard_normal(d)
    fun, points, values = recorded(ackley, 1.0, 5)
    res, end = run_to_end(fun, x0, 0, {"maxfev": 8 * d, "noisy": True})
    (compared, told), rounds, (fresh, fresh_values) = end[0], end[1:-1], end[-1]
    final, average = compared[0], compared[n]
    for point, block in ((final, slice(0, n)), (average, slice(n, 2 * n))):
        assert ackley(point) > ackley(x0) + 0.3  # the drift this guards against
        assert all(np.array_equal(p, point) for p in compared[block])
        assert np.mean(values[:n]) < np.mean(told[block])
    check_rounds(rounds, average, x0)
    assert all(np.array_equal(p, x0) for p in points[:n])
    assert np.array_equal(res.x, x0) and "x is the start" in res.message
    assert all(np.array_equal(p, x0) for p in fresh)
    added = sum(len(p) for p, _ in rounds)
    ended_at = len(points) - 2 * n - added - len(fresh)
    share = min(80, max(n, math.ceil(ended_at / 98)))
    assert len(fresh) + added == 2 * share
    assert res.fun == sum(fresh_values) / len(fresh_values) and res.nfev == len(points) <= 8 * d


def test_a_noisy_run_that_made_progress_returns_the_candidate_of_its_comparison(run_to_end):
    """The final iterate and the average of the centres are measured, 10 values each; the
    average is the candidate unless the iterate's values are significantly the lower (here
    the average; `test_the_comparison_returns_the_average_the_iterate_or_the_start` has the
    other cases), it beats x0, and fresh values there give ``fun``."""
    n = 10
    fun, points, values = recorded(lambda x: float(x @ x), 1.0, 6)
    res, end = run_to_end(fun, np.ones(D), 1, {"maxfev": 3000, "noisy": True})
    (compared, told), rounds, (fresh, fresh_values) = end[0], end[1:-1], end[-1]
    assert float(res.x @ res.x) < D / 10 and "start" not in res.message
    iterate, average = compared[0], compared[n]
    assert all(np.array_equal(p, iterate) for p in compared[:n])
    assert all(np.array_equal(p, average) for p in compared[n:]) and len(compared) == 2 * n
    lower = significantly_lower(told[:n], told[n:])
    assert not lower
    candidate = iterate if lower else average
    check_rounds(rounds, candidate, np.ones(D))
    assert np.array_equal(res.x, candidate) and ("average" in res.message) != lower
    assert all(np.array_equal(p, np.ones(D)) for p in points[:n])  # x0, before iterating
    assert all(np.array_equal(p, res.x) for p in fresh)
    assert res.fun == sum(fresh_values) / len(fresh_values) and res.nfev == len(points) <= 3000


def test_a_checkpoint_between_the_comparison_and_the_last_measurement(tmp_path):
    options = {"learning_rate": 1e-3, "maxiter": 20, "noisy": True, "final_evaluations": 4}
    fun, _, _ = recorded(lambda x: float(x @ x), 1.0, 7)
    opt = zovh_opt.Optimizer(np.ones(D), rng=2, options=options)
    for _ in range(1 + 20 + 1):  # 4 values at x0, 20 iterations, 4 at the final iterate
        opt.tell([fun(p) for p in opt.ask()])
    assert opt._parts.returned.compared is not None and not opt.done
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


def test_the_end_takes_a_share_of_the_run_for_x_and_one_for_a_close_comparison():
    """With ``final_evaluations`` left to its default, a noisy run reserves 1 % of
    ``maxfev`` (10 to 1000) for the fresh values at its returned point and as much for a
    close comparison with x0, which adds values at both sides in rounds that double them until
    one side is significantly the lower; the fresh sample takes 1 % of the run and what the
    comparison left (where the run ended before ``maxfev``: 1 % of what it made). A given
    ``final_evaluations`` is taken as it is, with no rounds."""
    assert [fresh_evaluations(n) for n in (50, 1000, 20_000, 20_050, 10**6)] == [
        10, 10, 200, 201, 1000]  # fmt: skip
    level = [1.0, 2.0] * 5
    returned = ReturnedPoint(noisy=False, final_evaluations=1, start=np.zeros(3), xp=np)
    returned.become_noisy(10, np.zeros(3), level, fresh=200, extension=200)
    assert returned.reserve == 10 + 200 + 200  # the final iterate's (no average yet), x's
    assert returned.final_size(19_580) == 10  # the comparison: 1 % of the run is 200
    returned.take_final(level)  # level with x0's: close
    assert returned.confirming and returned.final_size(19_590) == 2 * 10
    points = [returned.final_point(i, lambda: "iterate", lambda z: "start") for i in range(20)]
    assert points == ["iterate"] * 10 + ["start"] * 10
    returned.take_final(level + level)
    assert returned.final_size(19_610) == 2 * 20  # still close: the sample doubles
    returned.take_final([0.0] * 20 + [5.0] * 20)  # now the candidate is the lower
    assert not returned.confirming and returned.chosen() == "iterate"
    assert returned.final_size(19_650) == 200 + 200 - 60  # x takes what the rounds left
    ended = ReturnedPoint(noisy=False, final_evaluations=1, start=np.zeros(3), xp=np)
    ended.become_noisy(10, np.zeros(3), level, fresh=200, extension=200)
    assert ended.final_size(2940) == 10  # maxiter ended the run: 1 % of it is 30
    ended.take_final([1.0] * 10)  # neither side varies (an exact f): no round
    assert not ended.confirming and ended.final_size(2950) == 30 + 30
    given = ReturnedPoint(noisy=False, final_evaluations=1, start=np.zeros(3), xp=np)
    given.become_noisy(7, np.zeros(3), level[:7], fresh=7, extension=0)
    assert given.final_size(19_790) == 7
    given.take_final(level[:7])
    assert not given.confirming and given.final_size(19_797) == 7


def test_noise_found_late_reserves_what_the_budget_leaves():
    """Found with little budget left, the values at x0 and at the end fit in it: a close
    comparison's reserve goes first, then the fresh sample's, never below the others'."""
    monitor = NoiseMonitor("auto", True, None, start=np.zeros(3), maxfev=20_000)
    assert (monitor.evaluations, monitor.fresh, monitor.extension) == (10, 200, 200)
    monitor.values = [1.0, 2.0]
    monitor.found(room=300)
    assert (monitor.evaluations, monitor.fresh, monitor.extension) == (10, 200, 300 + 2 - 220)
    monitor = NoiseMonitor("auto", True, None, start=np.zeros(3), maxfev=20_000)
    monitor.values = [1.0, 2.0]
    monitor.found(room=100)
    assert (monitor.evaluations, monitor.fresh, monitor.extension) == (10, 100 + 2 - 20, 0)
    monitor = NoiseMonitor("auto", True, None, start=np.zeros(3), maxfev=20_000)
    monitor.values = [1.0, 2.0]
    monitor.found(room=19)
    assert (monitor.evaluations, monitor.fresh, monitor.extension) == (7, 7, 0)


def test_a_checkpoint_in_a_close_comparison_with_x0(tmp_path):
    """A flat noisy objective leaves the comparison with x0 close: saved between its rounds,
    the run continues as it would have, to the same point, value and evaluations."""
    noise = np.random.default_rng(9)
    opt = zovh_opt.Optimizer(np.ones(5), rng=3, options={"maxfev": 2000, "noisy": True})
    while not opt._parts.returned.confirming:
        opt.tell([1.0 + noise.standard_normal() for _ in opt.ask()])
    assert opt._parts.returned.compared is not None and not opt.done
    opt.save(tmp_path / "run.npz")
    loaded = zovh_opt.Optimizer.load(tmp_path / "run.npz")
    results = []
    for o in (opt, loaded):
        rest = np.random.default_rng(10)
        rounds = 0
        while not o.done:
            rounds += o._parts.returned.confirming
            o.tell([1.0 + rest.standard_normal() for _ in o.ask()])
        results.append((o.result(), rounds))
    (first, rounds), (second, again) = results
    assert rounds == again >= 1 and first.nfev == second.nfev <= 2000
    assert first.fun == second.fun and np.array_equal(first.x, second.x)


OSBORNE_Y = np.array([
    0.844, 0.908, 0.932, 0.936, 0.925, 0.908, 0.881, 0.850, 0.818, 0.784, 0.751, 0.718, 0.685,
    0.658, 0.628, 0.603, 0.580, 0.558, 0.538, 0.522, 0.506, 0.490, 0.478, 0.467, 0.457, 0.448,
    0.438, 0.431, 0.424, 0.420, 0.414, 0.411, 0.406,
])  # fmt: skip


def osborne(x):
    """Osborne's exponential fit (More, Garbow and Hillstrom's problem 17): ``f`` rises past
    1e100 within a unit of its standard start, where ``f(x0) = 0.879``."""
    t = 10.0 * np.arange(33)
    r = OSBORNE_Y - (x[0] + x[1] * np.exp(-t * x[3]) + x[2] * np.exp(-t * x[4]))
    return float(r @ r)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_noisy_batch_with_a_huge_finite_value_does_not_wreck_the_run(seed, tune):
    """Relative noise 1e-3 on Osborne's fit, the method's path (the trust region off): the
    first noisy batch reaches values above 1e110 (finite); it is dropped and the radius
    shrinks, and the run ends 100 times below f(x0) (issue #70: the model's scale became
    1e-160 and the run returned x0)."""
    tune("dimensions", TRUST_REGION_MAX_DIMENSION=0)
    noise, seen = np.random.default_rng(100 + seed), []

    def f(x):
        seen.append(osborne(x) * (1 + 1e-3 * noise.standard_normal()))
        return seen[-1]

    x0 = np.array([0.5, 1.5, -1.0, 0.01, 0.02])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # exp overflows far from x0
        res = zovh_opt.minimize(f, x0, rng=seed, options={"maxfev": 1200})
    assert max(seen) > 1e110 and res.get("trust_region") is None
    assert osborne(res.x) <= osborne(x0) / 100


@pytest.mark.parametrize("seed", range(4))
def test_mild_noise_at_small_d_takes_the_trust_region_to_the_fit(seed):
    """The same fit at the issue's budget, 100 (d + 1) = 600, by default: the trust region's
    first radius is a tenth of each ``|x0_j|``, so no value explodes, and the run ends 100
    times below f(x0) = 0.879 (the issue's target) and within ten times the fit's minimum
    5.46e-5 (issue #70: the method's path ended 1.2e-3 to 0.68, 22 to 12 000 times it;
    NEWUOA 1.2e-3 to 0.14)."""
    noise = np.random.default_rng(100 + seed)
    x0 = np.array([0.5, 1.5, -1.0, 0.01, 0.02])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = zovh_opt.minimize(
            lambda x: osborne(x) * (1 + 1e-3 * noise.standard_normal()), x0, rng=seed,
            options={"maxfev": 600},
        )  # fmt: skip
    assert res.trust_region["nfev"] >= 100  # it ran, and handed over before the end
    assert osborne(res.x) <= osborne(x0) / 100 and osborne(res.x) <= 10 * 5.46e-5
