"""A noisy run's centre measured against its best measured point (`zovh_opt._noise.drift`)."""

from __future__ import annotations

import numpy as np
import pytest

import zovh_opt
from zovh_opt._noise.centre_average import CentreAverage
from zovh_opt._noise.drift import DriftCheck
from zovh_opt.tuning import DEFAULT

SIZE = 8  # values per measurement in the unit tests
ROOM = 10**6  # evaluations the budget leaves


class Method:
    """What `DriftCheck` reads of a method: the step rule, the centre, its batch size."""

    control = object()
    points_per_iteration = SIZE

    def __init__(self, centre):
        self.centre = np.asarray(centre, dtype=float)
        self.returned_to = None

    def return_to(self, x, factor):
        self.returned_to = (np.array(x), factor)


class Returned:
    """What `DriftCheck` reads of the returned point: the noisy end, x0 and its values."""

    def __init__(self, start_values):
        self.noisy = True
        self.start = np.zeros(2)
        self.start_values = list(start_values)
        self.average = CentreAverage()
        self.average.add(np.ones(2))


def checked(drift, method, returned, room=10**6):
    """Iterations until the next measurement is due; ``True`` if one came within
    `CHECK_EVERY`."""
    return any(drift.due(method, returned, room) for _ in range(DEFAULT.noise.CHECK_EVERY))


def test_the_centre_is_measured_every_40_iterations_of_a_noisy_run_only():
    rng = np.random.default_rng(0)
    drift, method = DriftCheck(), Method([1.0, 1.0])
    quiet = Returned(rng.normal(size=10))
    quiet.noisy = False
    assert not checked(drift, method, quiet) and drift.iterations == 0
    returned = Returned(rng.normal(size=10))
    assert [drift.due(method, returned, 10**6) for _ in range(DEFAULT.noise.CHECK_EVERY)][-1]
    assert drift.iterations == DEFAULT.noise.CHECK_EVERY and drift.size == SIZE
    assert np.array_equal(drift.point(), method.centre) and drift.point() is not drift.pending
    assert np.array_equal(drift.best[0], returned.start) and drift.best[1] == returned.start_values
    assert not checked(DriftCheck(), method, returned, room=SIZE - 1)  # the budget is spent


def test_a_drifted_centre_returns_to_the_best_point_once_its_fresh_values_confirm_it():
    rng = np.random.default_rng(1)
    drift, method, returned = DriftCheck(), Method([3.0, 3.0]), Returned(rng.normal(size=10))
    assert checked(drift, method, returned)
    assert drift.take(list(10 + rng.normal(size=SIZE)), method, returned, ROOM) is None
    assert np.array_equal(drift.pending, returned.start)  # the best point, measured afresh
    reason = drift.take(list(rng.normal(size=SIZE)), method, returned, ROOM)
    assert "drift" in reason and drift.returns == 1 and drift.pending is None
    point, factor = method.returned_to
    assert np.array_equal(point, returned.start) and factor == DEFAULT.noise.RETURN_FACTOR
    assert returned.average.count == 0  # the average starts anew


def test_a_return_needs_the_best_points_fresh_values_and_a_lower_centre_is_the_new_best():
    rng = np.random.default_rng(2)
    drift, method, returned = DriftCheck(), Method([3.0, 3.0]), Returned(rng.normal(size=10))
    assert checked(drift, method, returned)
    centre_values = list(10 + rng.normal(size=SIZE))
    drift.take(centre_values, method, returned, ROOM)
    fresh = list(20 + rng.normal(size=SIZE))  # x0's kept values were low by chance
    assert drift.take(fresh, method, returned, ROOM) is None and method.returned_to is None
    assert np.array_equal(drift.best[0], method.centre) and drift.best[1] == centre_values
    method.centre = np.asarray([5.0, 5.0])
    assert checked(drift, method, returned)
    lower = list(rng.normal(size=SIZE))
    assert drift.take(lower, method, returned, ROOM) is None and drift.pending is None
    assert np.array_equal(drift.best[0], [5.0, 5.0]) and drift.best[1] == lower
    method.centre = np.asarray([6.0, 6.0])
    assert checked(drift, method, returned)
    assert drift.take(list(rng.normal(size=SIZE)), method, returned, ROOM) is None  # level: none
    assert np.array_equal(drift.best[0], [5.0, 5.0]) and drift.pending is None


def test_no_fresh_measurement_where_the_budget_cannot_pay_for_it():
    rng = np.random.default_rng(3)
    drift, method, returned = DriftCheck(), Method([3.0, 3.0]), Returned(rng.normal(size=10))
    assert checked(drift, method, returned)
    assert drift.take(list(10 + rng.normal(size=SIZE)), method, returned, SIZE - 1) is None
    assert drift.pending is None and drift.centre is None and method.returned_to is None


def drifting(seed, d=10):
    """An ill-conditioned quadratic ``g`` under bbob-noisy's severe uniform noise (values
    times up to ``(1e9 / g)**0.6``): the step rule's comparisons are mostly the noise's."""
    noise, scales = np.random.default_rng(seed), np.logspace(0, 3, d)

    def f(x):
        g = float(scales @ (x * x))
        return g * noise.random() * max(1.0, (1e9 / (g + 1e-99)) ** (0.6 * noise.random()))

    return f, scales


def test_a_run_that_drifts_under_noise_goes_back_and_keeps_its_progress():
    """Without the checks (measured by setting `CHECK_EVERY` beyond the run) these six runs
    end where they started: log10 of the gap's ratio 0, 0, -0.35, 0, 0.02, 0; the end
    returns x0 where the iterate drifted uphill."""
    scores, returns = [], []
    for seed in range(6):
        f, scales = drifting(seed)
        res = zovh_opt.minimize(f, np.ones(10), rng=seed, options={"maxfev": 10_000})
        scores.append(np.log10(float(scales @ (res.x * res.x)) / scales.sum()))
        returns.append(sum(r["cause"] == "drift" for r in res.restarts))
        assert res.nfev <= 10_000
    assert np.median(scores) < -0.1 and max(scores) <= 0.01 and sum(returns) >= 3


def test_a_checkpoint_while_the_best_point_is_measured_afresh(tmp_path):
    """Saved between the centre's measurement and the best point's, the run continues as it
    would have, to the same point, value and evaluations."""
    f, _ = drifting(0)
    opt = zovh_opt.Optimizer(np.ones(10), rng=0, options={"maxfev": 10_000})
    while opt._parts.drift.centre is None:
        opt.tell([f(p) for p in np.asarray(opt.ask())])
    opt.save(tmp_path / "run.npz")
    loaded = zovh_opt.Optimizer.load(tmp_path / "run.npz")
    results = []
    for o in (opt, loaded):
        g, _ = drifting(1)
        while not o.done:
            o.tell([g(p) for p in np.asarray(o.ask())])
        results.append(o.result())
    first, second = results
    assert first.nfev == second.nfev and first.fun == second.fun
    assert np.array_equal(first.x, second.x) and first.restarts == second.restarts


def test_a_checkpoint_written_before_the_checks_starts_them_afresh():
    drift = DriftCheck()
    drift.load_state({}, lambda a: a)
    assert (drift.iterations, drift.best, drift.pending, drift.centre) == (0, None, None, None)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_checks_points_are_like_x0(backend, dtype):
    """The centre (and the best point measured afresh) are asked as arrays of x0's
    namespace, dtype and device, every value of the ask at one point."""
    import array_api_compat

    x0 = backend.asarray(np.ones(10), dtype=dtype)
    f, _ = drifting(0)
    opt = zovh_opt.Optimizer(x0, rng=0, options={"maxfev": 10_000})
    checks = 0
    while not opt.done:
        points = opt.ask()
        if opt.stage == "check":
            checks += 1
            assert type(points) is type(x0) and points.dtype == x0.dtype
            assert array_api_compat.device(points) == array_api_compat.device(x0)
            rows = backend.to_numpy(points)
            assert len(rows) == opt._parts.method.points_per_iteration and (rows == rows[0]).all()
        opt.tell([f(p) for p in backend.to_numpy(points)])
    assert checks >= 3
