"""A property test of the edges: random boxes, starts on faces and corners, x and f at scales
1e-300 ... 1e300, float32 and float64, on convex quadratics (issue #27).

Every evaluated point is finite and in the box; ``success=True`` only where the run is within
``1e-6 (f(x0) - f*)`` of the minimum over the box, ``f*`` from L-BFGS-B on the problem in unit
scales (an independent solver, to ~1e-15).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.optimize
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zovh_opt

SIDES = st.sampled_from(["open", "lower", "upper", "both"])
WHERE = st.sampled_from(["lower", "upper", "inside"])


@st.composite
def problems(draw):
    """A convex quadratic in ``d <= 5`` with condition <= 100, a box, a start on it."""
    dim = draw(st.integers(1, 5))
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    top = 300 if dtype is np.float64 else 30  # float32 holds 1e-38 ... 3e38
    x_scale = 10.0 ** draw(st.integers(-top, top))
    f_scale = 10.0 ** draw(st.integers(-300, 300))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
    hessian = q @ np.diag(np.logspace(0, 2, dim)) @ q.T
    centre = rng.uniform(-2, 2, dim)
    lower = np.full(dim, -np.inf)
    upper = np.full(dim, np.inf)
    start = rng.uniform(-1, 1, dim)
    for i in range(dim):
        sides = draw(SIDES)
        lo, hi = sorted(rng.uniform(-1.5, 1.5, 2))
        hi = max(hi, lo + 0.1)
        if sides in ("lower", "both"):
            lower[i] = lo
        if sides in ("upper", "both"):
            upper[i] = hi
        where = draw(WHERE)
        if where == "lower" and np.isfinite(lower[i]):
            start[i] = lower[i]
        elif where == "upper" and np.isfinite(upper[i]):
            start[i] = upper[i]
        else:
            start[i] = np.clip(start[i], lower[i], upper[i])
    return dim, dtype, x_scale, f_scale, hessian, centre, lower, upper, start


def inward(bound, dtype, direction=1):
    """Each bound as the nearest number of ``dtype`` on the box's side of it (as float64)."""
    rounded = bound.astype(dtype).astype(np.float64)
    step = np.nextafter(bound.astype(dtype), dtype(direction * np.inf)).astype(np.float64)
    with np.errstate(invalid="ignore"):  # inf - inf at an open end: kept as it is
        return np.where(direction * (rounded - bound) < 0, step, rounded)


def unit_quadratic(hessian, centre):
    def fun(u):
        r = u - centre
        return float(r @ hessian @ r)

    return fun


@settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(problems())
def test_points_stay_finite_in_the_box_and_success_means_converged(problem):
    dim, dtype, x_scale, f_scale, hessian, centre, lower, upper, start = problem
    g = unit_quadratic(hessian, centre)
    # the box the run can reach: its bounds rounded inward to numbers of the dtype
    reach_lower, reach_upper = inward(lower * x_scale, dtype), inward(upper * x_scale, dtype, -1)
    reach_lower, reach_upper = reach_lower / x_scale, reach_upper / x_scale
    reference = scipy.optimize.minimize(
        g,
        np.clip(centre, reach_lower, reach_upper),
        jac=lambda u: 2 * hessian @ (u - centre),
        method="L-BFGS-B",
        bounds=list(zip(reach_lower, reach_upper, strict=True)),
        options={"ftol": 1e-15, "gtol": 1e-13},
    )
    g_star = reference.fun
    x0 = (start * x_scale).astype(dtype)
    bounds_x = list(zip(lower * x_scale, upper * x_scale, strict=True))
    points = []

    def fun(x):
        x = np.asarray(x, dtype=np.float64)
        points.append(x)
        return f_scale * g(x / x_scale)

    f0 = f_scale * g(np.asarray(x0, dtype=np.float64) / x_scale)
    tolerance = 1e-5 if dtype is np.float32 else 1e-12
    if np.allclose(start, reference.x, rtol=tolerance, atol=tolerance):
        return  # the start is the minimiser, up to the dtype's rounding of it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = zovh_opt.minimize(fun, x0, bounds=bounds_x, rng=0)
    points = np.array(points)
    assert np.all(np.isfinite(points))
    assert np.all(points >= lower * x_scale) and np.all(points <= upper * x_scale)
    assert res.x.dtype == np.dtype(dtype) and np.all(np.isfinite(res.x))
    gap = (res.fun / f_scale - g_star) / (f0 / f_scale - g_star)
    if res.success:
        assert gap <= 1e-6, (res.message, gap)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_property_tests_problems_are_solved_at_unit_scale(dtype):
    """A check of the property test itself: its problems are solved from a corner of the box,
    and the run says so, so `success` is claimed and checked, not vacuously true."""
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    hessian = q @ np.diag(np.logspace(0, 2, 4)) @ q.T
    g = unit_quadratic(hessian, np.full(4, 0.2))
    res = zovh_opt.minimize(g, np.ones(4, dtype=dtype), bounds=[(-1, 1)] * 4, rng=0)
    assert math.isfinite(res.fun) and res.fun <= 1e-6 * g(np.ones(4))
    assert res.success


@pytest.mark.parametrize("dtype, tolerance", [(np.float64, 1e-6), (np.float32, 1e-4)])
def test_success_in_boxes_of_mixed_widths_is_within_the_dtypes_tolerance(dtype, tolerance):
    """Separable quadratics (curvatures 1 ... 100) in boxes whose widths span 1e-3 ... 3, the
    minimum inside, from a random start: ``success=True`` only within ``tolerance`` of the
    start's gap (issue #67: in float32 a phase that crawled below its difference step ended
    as converged, and 12 of 23 successes were more than 1e-4 above the minimum)."""
    for case in range(30):
        f, x0, bounds, shift = mixed_widths(case, dtype)
        res = zovh_opt.minimize(f, x0, bounds=bounds, rng=0)
        assert res.fun < f(x0)
        if res.success:
            assert res.fun - shift <= tolerance * (f(x0) - shift), (case, res.message)


def mixed_widths(case, dtype):
    """Case ``case`` of the test above: ``f``, ``x0``, the box and ``f``'s minimum."""
    rng = np.random.default_rng(case)
    d = int(rng.integers(2, 11))
    width = 10 ** rng.uniform(-3, np.log10(3), d)
    lower = rng.uniform(-1, 1, d)
    centre = lower + rng.uniform(0.1, 0.9, d) * width
    a = 10 ** rng.uniform(0, 2, d)
    shift = rng.uniform(0, 100)

    def f(x):
        return float(np.sum(a * (np.asarray(x, dtype=np.float64) - centre) ** 2)) + shift

    x0 = (lower + rng.uniform(0, 1, d) * width).astype(dtype)
    return f, x0, list(zip(lower, lower + width, strict=True)), shift


def test_in_float32_an_opening_region_at_the_phases_resolution_goes_on():
    """Case 11 above (d = 3, a box 1.3e-3 wide along one coordinate): within its 30
    evaluations the trust region's opening comes within `OPENING_FINE` difference steps of the
    phase's (sqrt(eps) = 3.5e-4 of x in float32), so it goes on to its own end, 2e-14 above
    the minimum. Handed to the phase there (`OPENING_FINE = 0`), the phase read its own
    rounding and claimed success at 5.6e-4 of the start's gap on NumPy 2.4; on 2.5 the path
    differs in its last bits and a region after the phase went on down, so only the rule's
    own run is asserted (its gap: whether the method after it meets a tolerance before
    ``maxfev`` hangs on those bits too)."""
    f, x0, bounds, shift = mixed_widths(11, np.float32)
    gap0 = f(x0) - shift
    res = zovh_opt.minimize(f, x0, bounds=bounds, rng=0)
    assert x0.shape == (3,) and res.trust_region["nfev"] > 30
    assert res.trust_region["ended"] == "radius"
    assert res.fun - shift <= 1e-4 * gap0
