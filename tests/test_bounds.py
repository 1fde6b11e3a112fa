"""Bounds: the box map against pycma's, every evaluated point in the box, SciPy's behaviour."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.optimize
from scipy.optimize import Bounds, OptimizeWarning

import zovh_opt
from zovh_opt._arrays.backend import ArraySpace
from zovh_opt._driver.bounds import box_of
from zovh_opt._driver.coordinates import Coordinates

BOUNDS = [(0.0, 1.0), (-5.0, None), (None, 3.0), (2.0, 2.0), (-1e3, 1e4), (None, None)]


def make_box(bounds, x0):
    x0 = np.asarray(x0, dtype=np.float64)
    return box_of(bounds, x0, ArraySpace(x0))[0]


def test_the_box_map_is_pycmas_with_the_same_margins():
    cma_transformations = pytest.importorskip("cma.transformations")
    box = make_box(BOUNDS[:3] + BOUNDS[4:5], [0.5, 0, 0, 0])
    lower, upper = box.host
    reference = cma_transformations.BoxConstraintsLinQuadTransformation(
        [
            [lo if np.isfinite(lo) else None, hi if np.isfinite(hi) else None]
            for lo, hi in zip(lower, upper, strict=True)
        ]
    )
    reference.initialize(4)
    # pycma's margins depend on |bound|; ours on the width: compare the maps at equal margins
    reference._al = np.array([0.05, 0.25, 1.0, 550.0])
    reference._au = np.array([0.05, 1.0, 0.15, 550.0])
    z = np.random.default_rng(0).normal(scale=[2, 20, 20, 3e4], size=(2000, 4))
    expected = np.array([reference.transform(row) for row in z])
    np.testing.assert_allclose(box.to_box(z), expected, rtol=1e-12, atol=1e-9)


def test_the_box_map_covers_the_box_is_c1_and_the_identity_inside():
    box = make_box(BOUNDS, np.zeros(6) + [0.5, 0, 0, 2, 0, 0])
    lower, upper = box.host
    z = np.linspace(-3e4, 3e4, 200_001)[:, None] * np.ones(6)
    x = box.to_box(z)
    assert np.all(x >= lower) and np.all(x <= upper)
    assert np.array_equal(x[:, 3], np.full(len(z), 2.0))  # the fixed variable
    assert np.array_equal(x[:, 5], z[:, 5])  # no bound: the identity
    assert np.min(x[:, 4]) == -1e3 and np.max(x[:, 4]) == 1e4
    # C1: the slopes of neighbouring secants differ by at most h / a (phi'' <= 1 / (2 a))
    z = np.linspace(-30, 30, 600_001)[:, None] * np.ones(6)
    h = z[1, 0] - z[0, 0]
    x = box.to_box(z)
    for j, margin in ((0, 0.05), (1, 0.25), (2, 0.15)):
        finite = [b for b in (lower[j], upper[j]) if np.isfinite(b)]
        assert np.allclose([np.min(np.abs(x[:, j] - b)) for b in finite], 0, atol=1e-12)
        slope = np.diff(x[:, j]) / h
        assert np.max(np.abs(np.diff(slope))) <= 1.01 * h / margin
        assert np.max(np.abs(slope)) <= 1 + 1e-6
    inside = np.array([[0.06, -4.0, 2.0, 2.0, 0.0, 7.0], [0.94, 1e5, -1e5, 2.0, 9e3, -7.0]])
    assert np.array_equal(box.to_box(inside), inside)


def test_folding_a_few_entries_equals_folding_all():
    """`to_box` folds only the entries outside the identity part when they are few: the same
    bits as folding every entry."""
    bounds = BOUNDS[:3] + BOUNDS[4:]  # no fixed variable: those are always folded
    box = make_box(bounds, np.array([0.5, 0, 0, 0, 0]))
    rng = np.random.default_rng(4)
    spikes = rng.normal(scale=30, size=(400, 5))
    z = np.where(rng.uniform(size=(400, 5)) < 0.02, spikes, [0.5, 0.0, 0.0, 1.0, 0.5])
    assert 0 < np.mean((z < box.host[0] + 0.05) | (z > box.host[1] - 0.05)) < 0.05
    assert np.array_equal(box.to_box(z), box._fold(z.copy(), lambda a: a))


def test_from_box_inverts_the_map_on_the_box():
    box = make_box(BOUNDS, np.zeros(6) + [0.5, 0, 0, 2, 0, 0])
    lower, upper = box.host
    rng = np.random.default_rng(1)
    span = np.where(np.isfinite(upper - lower), upper - lower, 50.0)
    base = np.where(np.isfinite(lower), lower, np.where(np.isfinite(upper), upper - 50, -25.0))
    x = base + span * rng.uniform(size=(500, 6))
    x[:5] = np.where(np.isfinite(lower), lower, 0.0)  # on the bounds themselves
    np.testing.assert_allclose(box.to_box(box.from_box(x)), x, rtol=0, atol=1e-12 * 1e4)


def test_the_box_map_keeps_namespace_and_dtype(backend):
    x0 = backend.asarray([0.5, 0.0, 0.5], dtype=np.float32)
    box, _ = box_of([(0, 1), (None, 0.25), (-1, None)], x0, ArraySpace(x0))
    z = backend.asarray(np.linspace(-5, 5, 33)[:, None] * np.ones(3), dtype=np.float32)
    x = box.to_box(z)
    assert x.dtype == backend.xp.float32
    assert type(x) is type(x0)
    host = backend.to_numpy(x)
    assert np.all(host[:, 0] >= 0) and np.all(host[:, 0] <= 1) and np.all(host[:, 1] <= 0.25)
    assert np.all(host[:, 2] >= -1)


@pytest.mark.parametrize("method", ["zovh", "zo-sgd", "zoar", "hizoo", "mezo"])
def test_every_evaluated_point_and_the_result_lie_in_the_box(method):
    d = 8
    lower, upper = np.full(d, -1.0), np.full(d, 0.5)
    upper[0] = np.inf
    seen = []

    def fun(x):
        seen.append(np.array(x))
        return float(np.sum((x - 2.0) ** 2) + np.sum(x[:3]))

    res = zovh_opt.minimize(
        fun,
        np.zeros(d),
        method=method,
        bounds=Bounds(lower, upper),
        rng=3,
        options={"maxfev": 2000},
    )
    seen = np.array(seen)
    assert np.all(seen >= lower) and np.all(seen <= upper)
    assert np.all(res.x >= lower) and np.all(res.x <= upper)
    assert "jac" not in res and "hess_inv" not in res


def test_a_powell_call_becomes_zovh_by_its_method_name():
    """The issue's drop-in: SciPy's Powell call with bounds and jac, the method name changed."""
    d = 20
    centre = np.linspace(-2.0, 2.0, d)

    def f(x):
        return float(np.sum((1.0 + np.arange(d) / d) * (x - centre) ** 2))

    def j(x):
        return 2 * (1.0 + np.arange(d) / d) * (x - centre)

    b = Bounds(-np.ones(d), np.ones(d))
    solution = np.clip(centre, -1, 1)
    reference = scipy.optimize.minimize(f, np.zeros(d), method="Powell", bounds=b)
    assert np.allclose(reference.x, solution, atol=1e-4)
    seen = []

    def logged(x):
        seen.append(np.array(x))
        return f(x)

    with pytest.warns(RuntimeWarning, match="does not use gradient information"):
        res = scipy.optimize.minimize(
            logged, np.zeros(d), method=zovh_opt.zovh, bounds=b, jac=j, options={"rng": 0}
        )
    seen = np.array(seen)
    assert np.all(seen >= -1) and np.all(seen <= 1)
    assert res.success, res.message
    assert res.fun - f(solution) <= 1e-8 * (f(np.zeros(d)) - f(solution))
    assert np.max(np.abs(res.x - solution)) <= 1e-5


def test_minimize_takes_scipys_positional_order():
    d = 4
    pairs = [(0.5, 2.0)] * d
    with pytest.warns(RuntimeWarning) as record:
        res = zovh_opt.minimize(
            lambda x: (float(x @ x), 2 * x),
            np.ones(d),
            (),
            "zo-sgd",
            True,
            lambda x: np.eye(d),
            None,
            pairs,
            (),
            None,
            None,
            {"maxfev": 3000},
            rng=0,
        )
    assert [str(w.message) for w in record] == [
        "Method zo-sgd does not use gradient information (jac).",
        "Method zo-sgd does not use Hessian information (hess).",
    ]
    assert np.allclose(res.x, 0.5, atol=1e-3) and np.all(res.x >= 0.5)


def test_hessp_warns_and_constraints_are_refused():
    with pytest.warns(RuntimeWarning, match="Hessian-vector product"):
        zovh_opt.minimize(
            lambda x: float(x @ x),
            np.ones(3),
            hessp=lambda x, p: p,
            options={"maxfev": 20, "learning_rate": 0.1},
        )
    constraint = {"type": "ineq", "fun": lambda x: x[0]}
    for constraints in (constraint, [constraint], scipy.optimize.LinearConstraint(np.eye(3))):
        with pytest.raises(ValueError, match="bounds= .*no other constraints|no other"):
            zovh_opt.minimize(lambda x: float(x @ x), np.ones(3), constraints=constraints)
    with pytest.raises(ValueError, match="no other constraints"):
        scipy.optimize.minimize(
            lambda x: float(x @ x), np.ones(3), method=zovh_opt.zovh, constraints=[constraint]
        )


def test_bad_bounds_get_scipys_errors_and_x0_outside_is_clipped():
    fun = lambda x: float(x @ x)  # noqa: E731
    with pytest.raises(ValueError, match="upper bound is less than"):
        zovh_opt.minimize(fun, np.zeros(2), bounds=[(0, 1), (2, 1)])
    with pytest.raises(ValueError, match="number of bounds"):
        zovh_opt.minimize(fun, np.zeros(2), bounds=[(0, 1)])
    with pytest.raises(ValueError, match="number of bounds"):
        zovh_opt.minimize(fun, np.zeros(2), bounds=Bounds(np.zeros(3), np.ones(3)))
    with pytest.raises(ValueError, match="NaN"):
        zovh_opt.minimize(fun, np.zeros(2), bounds=[(0, 1), (np.nan, 1)])
    with pytest.raises(TypeError, match="pairs"):
        zovh_opt.minimize(fun, np.zeros(2), bounds=[0, 1])
    with pytest.raises(TypeError, match="real numbers"):
        zovh_opt.minimize(fun, np.zeros(2), bounds=[(0, 1), ("a", 1)])
    opt = None
    with pytest.warns(OptimizeWarning, match="not within the specified bounds"):
        opt = zovh_opt.Optimizer(np.array([5.0, -3.0]), "zo-sgd", bounds=Bounds(0, 1), rng=0)
    # clipped onto the faces, then a quarter margin (a = 0.05) inside: off the stationary point
    np.testing.assert_allclose(opt.x, [1.0 - 0.0125, 0.0125], rtol=0, atol=1e-15)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # open bounds: nothing to keep, nothing to warn
        opt = zovh_opt.Optimizer(np.ones(2), "zo-sgd", bounds=[(None, None)] * 2, rng=0)
    assert opt._parts.coordinates.box is None


def test_a_checkpoint_keeps_the_bounds(tmp_path):
    fun = lambda x: float(np.sum((x - 3) ** 2))  # noqa: E731
    bounds = Bounds([0, -1, 0], [1, 1, np.inf])
    whole = zovh_opt.Optimizer(np.full(3, 0.5), bounds=bounds, rng=5, options={"maxfev": 600})
    whole.run(fun)
    part = zovh_opt.Optimizer(np.full(3, 0.5), bounds=bounds, rng=5, options={"maxfev": 600})
    for _ in range(40):
        part.tell([fun(p) for p in part.ask()])
    part.ask()
    part.save(tmp_path / "run.zovh")
    loaded = zovh_opt.Optimizer.load(tmp_path / "run.zovh")
    assert np.array_equal(loaded.pending, part.pending)
    res = loaded.run(fun)
    assert np.array_equal(res.x, whole.result().x) and res.nfev == whole.result().nfev


def test_bounds_on_every_backend_keep_points_dtype_and_device(backend):
    """Through `minimize` with a vectorized objective: every point in the box, in x0's
    namespace and dtype, and the result too."""
    xp = backend.xp
    x0 = backend.asarray(np.full(6, 0.25), dtype=np.float32)
    seen = []

    def fun(points):
        seen.append(backend.to_numpy(points))
        assert points.dtype == xp.float32
        return xp.sum((points - 2.0) ** 2, axis=1)

    res = zovh_opt.minimize(
        fun,
        x0,
        method="zoar",
        bounds=[(-1.0, 1.0)] * 6,
        rng=0,
        vectorized=True,
        options={"maxfev": 600},
    )
    seen = np.concatenate(seen)
    assert np.all(seen >= -1.0) and np.all(seen <= 1.0)
    assert res.x.dtype == xp.float32 and type(res.x) is type(x0)
    assert np.allclose(backend.to_numpy(res.x), 1.0, atol=0.05)


def test_a_point_moved_into_one_period_is_the_same_box_point(backend):
    """`Coordinates.in_one_period` moves each coordinate with a finite interval by whole
    periods of the map into the period that holds the box (``[0, 1]``: margin 0.05, period
    ``[-0.6, 1.6)``; ``[-1e3, 1e4]``: margin 550, ``[-7600, 16600)``; the fixed ``[2, 2]``,
    ``[0, 4)``), and maps to the same user point bit for bit; one-sided and open coordinates
    stay, and a point in that period already is returned itself."""
    x0 = backend.asarray([0.5, 0.0, 0.0, 2.0, 0.0, 0.0])
    coordinates, _, _ = Coordinates.start(x0, BOUNDS, {})
    space = ArraySpace(x0)
    rng = np.random.default_rng(5)
    for row in rng.normal(scale=[5, 50, 50, 50, 1e5, 50], size=(200, 6)):
        z = space.to_compute(backend.asarray(row))
        moved = coordinates.in_one_period(z)
        # (the run's points are compute arrays: NumPy views of CPU tensors)
        x = coordinates.to_user(space.to_user(z))
        x_moved = coordinates.to_user(space.to_user(moved))
        np.testing.assert_array_equal(backend.to_numpy(x_moved), backend.to_numpy(x))
        host = backend.to_numpy(space.to_user(moved))
        assert -0.6 <= host[0] < 1.6 and -7600 <= host[4] < 16600
        assert 0 <= host[3] < 4  # the fixed variable's (margins of 1): any z gives 2
        np.testing.assert_array_equal(host[1:3], row[1:3])
        assert host[5] == row[5]
    inside = space.to_compute(backend.asarray([1.5, -80.0, 9.0, 3.0, -7600.0, 1e9]))
    assert coordinates.in_one_period(inside) is inside


def test_in_one_period_with_scales_keeps_the_box_point():
    """With ``x_scale`` (the bounds' widths, the default where every coordinate has a
    bound) the period is in scaled coordinates; the moved point maps to the same box point
    up to the rounding of the scale."""
    bounds = [(0.0, 1.0), (-50.0, 50.0), (1.0, 3.0)]
    x0 = np.array([0.5, 0.0, 2.0])
    coordinates, _, _ = Coordinates.start(x0, bounds, {})
    assert coordinates.x_scale is not None
    rng = np.random.default_rng(6)
    for z in rng.normal(scale=20, size=(200, 3)):
        moved = coordinates.in_one_period(z)
        # the periods [l - 2a - w/2, u + 2a + w/2) over the widths w
        assert np.all((moved >= [-0.6, -1.1, -0.1]) & (moved < [1.6, 1.1, 2.1]))
        np.testing.assert_allclose(
            coordinates.to_user(moved), coordinates.to_user(z), atol=1e-12 * 50
        )
