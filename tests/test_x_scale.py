"""The option ``x_scale``: the scales a user knows per coordinate, and by default the scales
the bounds give (issue #29, item 3)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.optimize

import zovh_opt

SCALES = np.array([0.06, 0.12, 0.8, 1.8, 6.0, 9.0])
CENTRE = SCALES * np.array([1.2, 0.9, 1.1, 0.8, 1.05, 0.95])


def badly_scaled(x):
    """A quadratic whose natural unit in each coordinate is ``SCALES``."""
    return float(np.sum(((x - CENTRE) / SCALES) ** 2))


_Q, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((6, 6)))
COUPLING = (_Q * np.linspace(1.0, 10.0, 6)) @ _Q.T


def badly_scaled_coupled(x):
    """The same units, the coordinates coupled in them (condition 10): no diagonal of
    ``x``'s coordinates whitens it, so the quasi-Newton phase keeps its scalar ``H0``."""
    u = (x - CENTRE) / SCALES
    return float(u @ COUPLING @ u)


def test_x_scale_is_the_run_in_scaled_coordinates_bit_for_bit():
    scaled = zovh_opt.minimize(badly_scaled, SCALES, rng=3, options={"x_scale": SCALES})
    by_hand = zovh_opt.minimize(lambda u: badly_scaled(u * SCALES), np.ones(6), rng=3)
    assert np.array_equal(scaled.x, by_hand.x * SCALES) and scaled.nfev == by_hand.nfev
    # the estimates in the user's units: d/dx = (d/du) / s, inverse Hessian times s^2
    np.testing.assert_array_equal(scaled.jac, by_hand.jac / SCALES)
    np.testing.assert_array_equal(
        scaled.hess_inv.diagonal(), by_hand.hess_inv.diagonal() * SCALES**2
    )


def evaluations_to(res, level):
    """The evaluations a run took to an f estimate at most ``level`` (None: never)."""
    reached = res.trace["fun"] <= level
    return int(res.trace["nfev"][np.argmax(reached)]) if reached.any() else None


def test_x_scale_x0_takes_the_scales_of_the_start_and_helps_a_badly_scaled_start():
    """Told the scales, the run starts in the problem's own units: on this quadratic (whose
    scales span 150, coupled in them) it reaches 1e-6 in under half the evaluations of the
    run that learns them (81 and 220 with this seed)."""
    plain = zovh_opt.minimize(badly_scaled_coupled, SCALES, rng=0, options={"maxfev": 600})
    scaled = zovh_opt.minimize(
        badly_scaled_coupled, SCALES, rng=0, options={"maxfev": 600, "x_scale": "x0"}
    )
    by_array = zovh_opt.minimize(
        badly_scaled_coupled, SCALES, rng=0, options={"maxfev": 600, "x_scale": SCALES}
    )
    assert np.array_equal(scaled.x, by_array.x)
    assert 2 * evaluations_to(scaled, 1e-6) < evaluations_to(plain, 1e-6)


def test_the_phase_learns_the_scales_of_a_separable_badly_scaled_start():
    """Uncoupled, the scales are a diagonal curvature, which the quasi-Newton phase's initial
    matrix takes from its secant pairs: without ``x_scale`` the run reaches 1e-6 within
    twice the evaluations of the run told the scales (35 and 25 with this seed; 304 and 25
    with the scalar initial matrix of L-BFGS)."""
    plain = zovh_opt.minimize(badly_scaled, SCALES, rng=0, options={"maxfev": 600})
    scaled = zovh_opt.minimize(
        badly_scaled, SCALES, rng=0, options={"maxfev": 600, "x_scale": "x0"}
    )
    assert evaluations_to(plain, 1e-6) <= 2 * evaluations_to(scaled, 1e-6)


def test_x_scale_x0_uses_one_or_the_width_where_x0_is_zero():
    x0 = np.array([0.0, 2.0, 0.0])
    opt = zovh_opt.Optimizer(
        x0, bounds=[(0, 0.5), (None, None), (None, None)], options={"x_scale": "x0"}
    )
    np.testing.assert_array_equal(opt._parts.coordinates.x_scale, [0.5, 2.0, 1.0])


def scales_of_run(x0, bounds, **options):
    return zovh_opt.Optimizer(x0, bounds=bounds, options=options)._parts.coordinates.x_scale


def test_by_default_the_bounds_give_the_scales():
    x0 = np.array([0.5, 2.0, -3.0, 5.0])
    bounds = [(0, 1), (0, None), (None, 1), (1, 11)]  # width 1, 2 from 0, 4 from 1, width 10
    np.testing.assert_array_equal(scales_of_run(x0, bounds), [1.0, 2.0, 4.0, 10.0])
    # a start on a one-sided bound (up to the rounding of a float32 x0) says nothing of the
    # coordinate's size: the root mean square of the others' scales, never the rounding error
    x0 = np.array([0.13087497, 2.0, -3.0], dtype=np.float32)
    bounds = [(0.13087497, None), (0, None), (None, 1)]
    np.testing.assert_allclose(scales_of_run(x0, bounds), [10**0.5, 2.0, 4.0], rtol=1e-6)
    # every coordinate on its bound: the margins' scales, max(|b|, |x0_i|)
    x0 = np.array([0.13087497, -1.4917845], dtype=np.float32)
    bounds = [(0.13087497, None), (-1.4917845, None)]
    np.testing.assert_allclose(scales_of_run(x0, bounds), [0.13087497, 1.4917845], rtol=1e-6)


@pytest.mark.parametrize(
    ("bounds", "options"),
    [
        ([(0, None)] * 5 + [(None, None)], {}),  # a coordinate without a bound
        ([(-10, 10)] * 6, {}),  # the same scale everywhere: nothing to change
        ([(0, None)] * 6, {"learning_rate": 1e-3}),  # a rate in the user's units
        ([(0, None)] * 6, {"curvature": "off"}),  # the paper's iteration as it is
        ([(0, None)] * 6, {"x_scale": 1.0}),  # the user's own, one for all
    ],
)
def test_the_bounds_scales_are_left_out(bounds, options):
    scales = scales_of_run(SCALES, bounds, **options)
    assert scales is None or np.all(np.asarray(scales) == 1.0)


def test_positivity_bounds_give_a_badly_scaled_start_its_scales():
    """With positivity bounds the default runs as ``x_scale="x0"`` (up to the bound's 1e-9
    in the distances) and, on the coupled quadratic whose scales span 150, reaches 1e-6 in
    under half the evaluations of the isotropic start (``x_scale=1``; 81 and 220 with this
    seed)."""
    bounds = [(1e-9, None)] * 6
    default = zovh_opt.minimize(badly_scaled_coupled, SCALES, bounds=bounds, rng=0)
    isotropic = zovh_opt.minimize(
        badly_scaled_coupled, SCALES, bounds=bounds, rng=0, options={"x_scale": 1.0}
    )
    scaled = zovh_opt.minimize(
        badly_scaled_coupled, SCALES, bounds=bounds, rng=0, options={"x_scale": SCALES - 1e-9}
    )
    assert np.array_equal(default.x, scaled.x) and default.nfev == scaled.nfev
    assert 2 * evaluations_to(default, 1e-6) < evaluations_to(isotropic, 1e-6)


def test_x_scale_survives_a_checkpoint(tmp_path):
    options = {"x_scale": SCALES, "maxfev": 900}
    whole = zovh_opt.minimize(badly_scaled, SCALES, rng=5, options=options)
    part = zovh_opt.Optimizer(SCALES, rng=5, options=options)
    for _ in range(6):  # of the run's 9
        part.tell([badly_scaled(p) for p in part.ask()])
    part.save(tmp_path / "run.npz")
    resumed = zovh_opt.Optimizer.load(tmp_path / "run.npz").run(badly_scaled)
    assert np.array_equal(resumed.x, whole.x) and resumed.nfev == whole.nfev


@pytest.mark.parametrize(
    ("x_scale", "error", "match"),
    [
        ("big", ValueError, "'x0' or positive"),
        ([1.0, -1.0, 1.0, 1.0, 1.0, 1.0], ValueError, "> 0"),
        ([1.0, np.inf, 1.0, 1.0, 1.0, 1.0], ValueError, "finite"),
        ([1.0, 2.0], ValueError, "6 positive numbers"),
        ([[1.0] * 6], ValueError, "one per coordinate"),
        (0.0, ValueError, "> 0"),
        (object(), TypeError, "'x0' or positive"),
    ],
)
def test_bad_x_scale_is_refused(x_scale, error, match):
    with pytest.raises(error, match=match):
        zovh_opt.minimize(badly_scaled, SCALES, options={"x_scale": x_scale})


def test_a_start_on_a_bound_is_not_given_the_bound_as_its_scale():
    """A start on three faces of a box that the property test of test_edge_properties.py
    found: coordinate 1 starts on its lower bound, 0.068, and its optimum is at 213. With the
    bound's magnitude as its scale (0.068, against 6.6 to 83 for the others) the run stalled
    and ended with success at 1.1e-2 of its gap (seeds 0-5: 5e-4 to 1e-2); with the other
    coordinates' root mean square it reaches the optimum."""
    hessian = np.array(
        [
            [48.75748009592869, 13.167298265892713, -27.26994731817593, 28.06131198490574],
            [13.167298265892713, 21.758815257385965, -23.456999109473724, 15.577482788758715],
            [-27.26994731817593, -23.456999109473724, 31.558715061596263, -22.52494951133944],
            [28.06131198490574, 15.577482788758715, -22.52494951133944, 25.110925319020698],
        ]
    )
    centre = np.array(
        [1.8757314772649396, 1.7161055510616778, -1.2892296569520756, 0.43540646737819033]
    )
    lower = np.array(
        [-1.9140498131655415, 0.06785680462375598, -82.86865596653521, 6.626100663434298]
    )
    x0 = np.array([40.97294911294851, lower[1], lower[2], lower[3]])

    def f(x):
        r = np.asarray(x) / 100 - centre
        return float(r @ hessian @ r)

    bounds = [(b, None) for b in lower]
    reference = scipy.optimize.minimize(
        f,
        np.maximum(100 * centre, lower),
        jac=lambda x: hessian @ (np.asarray(x) / 100 - centre) / 50,
        method="L-BFGS-B",
        bounds=bounds,
        options={"ftol": 1e-15, "gtol": 1e-13},
    )
    res = zovh_opt.minimize(f, x0, bounds=bounds, rng=2, options={"maxfev": 40_000})
    assert res.success and res.fun - reference.fun <= 1e-10 * (f(x0) - reference.fun)


def test_the_paper_iterations_inverse_is_left_out_in_other_units():
    """A short budget runs the paper's iteration, whose hess_inv is an operator: with x_scale
    it raised TypeError at the result (it cannot be rescaled without forming it)."""
    options = {"maxfev": 200, "x_scale": 2.0, "quasi_newton": False}
    res = zovh_opt.minimize(lambda x: float(x @ x), np.ones(20), rng=0, options=options)
    assert res.iteration.startswith("Algorithm 1") and "hess_inv" not in res
    assert res.jac.shape == (20,)


def test_the_narrowest_width_is_in_the_runs_coordinates():
    """`Coordinates.narrowest_width`: the narrowest finite interval of the box (fixed
    variables and one-sided bounds aside) over ``x_scale`` and the run's unit; ``inf``
    without an interval."""
    from zovh_opt._driver.coordinates import Coordinates

    x0 = np.array([1.0, 2.0, 3.0, 0.5])
    bounds = [(0.0, 4.0), (1.0, 7.0), (3.0, 3.0), (0.0, None)]
    coordinates, _, _ = Coordinates.start(x0, bounds, {}, x_scale=[2.0, 1.0, 1.0, 1.0])
    assert coordinates.narrowest_width() == 2.0  # 4 / 2, before 6 / 1
    coordinates.unit = 0.5
    assert coordinates.narrowest_width() == 4.0
    one_sided, _, _ = Coordinates.start(x0, [(0.0, None)] * 4, {})
    assert one_sided.narrowest_width() == math.inf
    assert Coordinates.start(x0, None, {})[0].narrowest_width() == math.inf
