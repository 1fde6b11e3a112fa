"""ZoVH's curvature model (the default iteration): its estimator against a dense transcription
of eq. (9) and against theory, one update and one step against their formulas, the learned
inverse Hessian against the true one, and the option that switches it off."""

from __future__ import annotations

import math

import numpy as np
import pytest

import zovh_opt
from zovh_opt import ZoVH, estimators
from zovh_opt._curvature.diagonal import DiagonalOperator
from zovh_opt._methods.zovh_paper import PaperZoVH
from zovh_opt._methods.zovh_preconditioned import PreconditionedZoVH, default_pairs
from zovh_opt.tuning import DEFAULT

MU = 0.1


def ref_hessian_diagonal(U, y, mu):
    """diag of eq. (9) with the averaged baseline, as a loop over the queries."""
    P = len(y)
    b = y.mean()
    return sum((y[m] - b) / mu**2 * U[m] * U[m] for m in range(P)) / (P - 1)


def test_the_estimator_is_the_diagonal_of_eq_9_on_the_pair_means_less_the_model(backend):
    rng = np.random.default_rng(0)
    P, d, c = 6, 40, 1.7
    U, x = rng.standard_normal((P, d)), rng.standard_normal(d)
    A = rng.standard_normal((d, d)) / np.sqrt(d)

    def f(z):
        return 0.5 * z @ (A + A.T) @ z + np.sin(z).sum()

    plus = np.array([f(x + MU * u) for u in U])
    minus = np.array([f(x - MU * u) for u in U])
    # the values whose eq. (9) is the model's error: pair means less the model's prediction
    v = (plus + minus) / 2 - MU**2 * c / 2 * np.array([u @ u for u in U])
    got = estimators.diagonal_hessian_error(
        backend.asarray(U), backend.asarray(plus), backend.asarray(minus), MU, c
    )
    want = ref_hessian_diagonal(U, v, MU)
    assert np.linalg.norm(backend.to_numpy(got) - want) <= 1e-10 * np.linalg.norm(want)


def test_the_estimator_is_unbiased_for_the_models_error_on_a_quadratic():
    """E e = diag(A) - c for f(z) = z.A z / 2 + g.z, whatever the gradient: the pairs cancel
    it. Tolerance: 5 standard errors of the mean, per coordinate."""
    rng = np.random.default_rng(1)
    d, P, c, n = 6, 4, 1.5, 20_000
    B = rng.standard_normal((d, d))
    A = B @ B.T / d + np.diag(np.arange(1.0, d + 1))
    g, x = 10 * rng.standard_normal(d), rng.standard_normal(d)

    def f(Z):
        return 0.5 * np.einsum("...i,ij,...j->...", Z, A, Z) + Z @ g

    E = []
    for U in rng.standard_normal((n, P, d)):
        E.append(estimators.diagonal_hessian_error(U, f(x + MU * U), f(x - MU * U), MU, c))
    E = np.array(E)
    error = np.abs(E.mean(axis=0) - (np.diag(A) - c))
    assert np.all(error <= 5 * E.std(axis=0) / math.sqrt(n)), error


def test_the_model_leaves_no_residual_when_it_is_right():
    """The model as control variate: on f = c |z|^2 / 2 the residuals vanish, so a right
    model is a fixed point without noise."""
    U = np.random.default_rng(2).standard_normal((5, 30))
    y = 1.5 * np.sum((0.3 + MU * U) ** 2, axis=1)
    y_minus = 1.5 * np.sum((0.3 - MU * U) ** 2, axis=1)
    e = estimators.diagonal_hessian_error(U, y, y_minus, MU, 3.0)
    assert np.abs(e).max() <= 1e-9


def diagonal_quadratic(d, kappa):
    h = np.logspace(0, np.log10(kappa), d)
    return h, (lambda X: 0.5 * (X * X) @ h)


def test_the_first_step_is_the_models_newton_step_the_rules_first_step_long():
    """The model's scale is set so that the first step, -sum_m delta_m s u_m / (c (d+P+1)),
    is the rule's first step long, 0.1 |x0| for the diagonal model (x0's length scale)."""
    d = 50
    _, f = diagonal_quadratic(d, 1e3)
    x0 = np.random.default_rng(3).standard_normal(d)
    opt = ZoVH(x0, rng=0)
    P = opt.n_directions
    assert isinstance(opt, PreconditionedZoVH) and P == default_pairs(d)
    points = opt.ask()
    values = f(points)
    (plus, minus), (up, down) = opt.pair_split(points), opt.pair_split(values)
    assert np.array_equal(plus, points[0::2])  # the pairs are adjacent, + first
    W = (plus - x0) / opt.smoothing
    np.testing.assert_allclose(minus, x0 - opt.smoothing * W, rtol=1e-14)
    delta = (up - down) / (2 * opt.smoothing)
    opt.tell(values)  # measures x0, then steps
    step = opt.x - x0
    np.testing.assert_allclose(
        np.linalg.norm(step), DEFAULT.step_rule.INITIAL_STEP * np.linalg.norm(x0), rtol=1e-12
    )
    direction = -(delta @ W)
    cosine = step @ direction / np.linalg.norm(step) / np.linalg.norm(direction)
    assert cosine == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("kind", ["linear", "quadratic"])
@pytest.mark.parametrize("d", [8, 20, 50])  # the full model (two first steps), the diagonal one
def test_with_f_x0_known_a_flat_start_takes_the_longest_first_step(kind, d):
    """Given f(x0) (the driver's measurement), a start where the pairs measure no curvature
    (a linear f) takes a first step FIRST_STEP_RANGE times the rule's first step (the step
    rule then judges it: 0.3 |x0| for the full model up to d = 10, else 0.1 |x0|); any
    curvature keeps the rule's."""
    a = np.linspace(-1, 1, d)
    f = {"linear": lambda x: float(a @ x), "quadratic": lambda x: float(a @ x + x @ x)}[kind]
    x0 = np.full(d, 0.5)
    opt = ZoVH(x0, rng=0)
    points = opt.ask()
    opt.value_at_centre(f(x0))
    opt.tell(np.array([f(p) for p in points]))
    longest = DEFAULT.method.FIRST_STEP_RANGE if kind == "linear" else 1.0
    first = (
        DEFAULT.method.FULL_INITIAL_STEP
        if d <= DEFAULT.dimensions.INITIAL_STEP_MAX_DIMENSION
        else DEFAULT.step_rule.INITIAL_STEP
    )
    assert np.linalg.norm(opt.x - x0) == pytest.approx(
        longest * first * np.linalg.norm(x0), rel=1e-9
    )


def test_one_update_of_the_model_is_the_formula():
    """log h moves by SCALE_RATE mean(rho) + SHAPE_RATE (rho - mean(rho)), with
    rho = clip(e / c, -1, 1) and e the estimator on the unwhitened directions."""
    d = 60
    _, f = diagonal_quadratic(d, 1e4)
    opt = ZoVH(np.random.default_rng(4).standard_normal(d), rng=1)
    for _ in range(5):
        opt.tell(f(opt.ask()))
    mu = opt.smoothing
    c, shape = opt.model.curvature, opt.model.shape.copy()
    s = np.exp(-shape / 2)
    x = opt.x
    points = opt.ask()
    values = f(points)
    (plus, _), (up, down) = opt.pair_split(points), opt.pair_split(values)
    U = (plus - x) / (mu * s)
    e = estimators.diagonal_hessian_error(U, up, down, mu, c)
    rho = np.clip(e / c, -1, 1)
    want = (
        math.log(c)
        + shape
        + DEFAULT.curvature.DIAGONAL_SCALE_RATE * rho.mean()
        + DEFAULT.curvature.DIAGONAL_SHAPE_RATE * (rho - rho.mean())
    )
    opt.tell(values)
    got = math.log(opt.model.curvature) + opt.model.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)


@pytest.mark.parametrize("seed", [0, 1])
def test_the_learned_inverse_hessian_is_the_true_one_on_a_quadratic(seed):
    """hess_inv = diag(1/h) after a default run on a diagonal quadratic with condition 1e4:
    near the optimum the residuals vanish where the model is right, so it is learned exactly."""
    d = 100
    h, f = diagonal_quadratic(d, 1e4)
    x0 = np.random.default_rng(seed).standard_normal(d)
    options = {"maxfev": 20_000, "quasi_newton": False}  # the model's learning from x0
    res = zovh_opt.minimize(f, x0, rng=seed, options=options)
    assert res.success and res.fun <= 1e-12 * f(x0)
    learned = res.hess_inv.diagonal()
    assert res.hess_inv.shape == (d, d)
    np.testing.assert_allclose(res.hess_inv @ np.ones(d), learned)
    assert np.median(np.abs(np.log(learned * h))) <= 0.01
    assert np.corrcoef(np.log(learned), -np.log(h))[0, 1] >= 0.999


@pytest.mark.parametrize("history", [1, 2, 4])
def test_jac_and_the_step_with_a_fixed_rate(history, drive_pairs):
    """After a tell, jac = sum_m delta'_m w_m / (M s^2) over the M = N P pairs of the last N
    iterations, the earlier ones' differences moved to x with the model (delta'_m = delta_m +
    w_m . (h (x - x_b)), h = c / s^2), and the fixed rate 1 moved x by the full step
    sum_m delta'_m w_m / (c (d + M + 1)); computed here from the points and values alone."""
    d = 40
    h, f = diagonal_quadratic(d, 1e2)
    x0 = np.random.default_rng(5).standard_normal(d)
    opt = ZoVH(x0, rng=2, curvature="diagonal", learning_rate=1.0, history=history)
    P = opt.n_directions
    state = lambda o: (o.x, o.model.whitening, o.model.curvature)  # noqa: E731
    batches, (x, s, c) = drive_pairs(opt, f, 5, state)
    used = batches[-1 : -history - 1 : -1]
    M = P * len(used)
    hessian = c / (s * s)
    total = sum((delta + W @ (hessian * (x - centre))) @ W for W, delta, centre in used)
    np.testing.assert_allclose(opt.estimates()["jac"], total / M / (s * s), rtol=1e-9)
    # a fixed rate of 1 takes the model's full Newton step for that estimate
    np.testing.assert_allclose(opt.x, x - total / (c * (d + M + 1)), rtol=1e-9)


def test_flat_and_linear_objectives_neither_blow_up_nor_stall():
    """A flat f: the model's curvature falls towards 0 and its step grows without bound; the
    trust radius keeps rejected trials from growing, and (without the plateau rule, which
    ends it after 5 iterations) ftol ends the run, after the three finer scales it tries
    first. A linear f: the steps grow geometrically."""
    flat = {"flat_iterations": None, "quasi_newton": False}  # (the phase's zero gradient
    # would end the run after one window of the method: nothing lower than f(x0))
    res = zovh_opt.minimize(lambda x: 1.0, np.ones(50), rng=0, options=flat)
    assert res.status == 0 and np.all(np.isfinite(res.x)) and res.nfev < 5000
    assert [r["cause"] for r in res.restarts] == ["stall"] * 3
    res = zovh_opt.minimize(lambda x: 1.0, np.ones(50), rng=0)
    assert res.status == 0 and "x0 lies on a plateau" in res.message
    assert res.quasi_newton["ended"] == "zero gradient" and res.nit == 1 + 5  # its gradient
    options = {"maxfev": 5000}
    linear = zovh_opt.minimize(lambda x: float(np.sum(x)), np.ones(50), rng=0, options=options)
    assert np.all(np.isfinite(linear.x)) and linear.fun < -1e6


def test_the_option_curvature_selects_the_iteration():
    x0 = np.ones(60)  # above the full model's dimensions: "auto" is the diagonal model
    assert type(ZoVH(x0)) is PreconditionedZoVH
    assert type(ZoVH(x0, learning_rate=1e-3)) is PaperZoVH  # the paper's Algorithm 1
    assert type(ZoVH(x0, curvature="off")) is PaperZoVH  # with the step rule
    assert type(ZoVH(x0, curvature="diagonal", learning_rate=1.0)) is PreconditionedZoVH
    assert type(ZoVH(np.ones(30), curvature="diagonal")) is PreconditionedZoVH
    assert all(isinstance(ZoVH(x0, curvature=c), ZoVH) for c in ("auto", "diagonal", "off"))
    assert ZoVH(x0, curvature="off").n_directions == 3 and ZoVH(x0).n_directions == 8
    with pytest.raises(ValueError, match="product, inverse: option.* of the paper's iteration"):
        ZoVH(x0, history=2, product="decoupled", inverse="exact")
    assert ZoVH(x0).history == 4 and ZoVH(x0, history=2).history == 2
    with pytest.raises(ValueError, match="curvature must be one of 'auto', 'full', 'diagonal'"):
        zovh_opt.minimize(lambda x: float(x @ x), x0, options={"curvature": "dense"})


def test_the_paper_iteration_is_unchanged_with_a_float_rate():
    """A float learning rate is Algorithm 1 whatever else is left at its default: the same
    run as with curvature="off" spelled out, K = 3 points per iteration."""
    _, f = diagonal_quadratic(40, 1e2)
    x0 = np.random.default_rng(6).standard_normal(40)
    a = zovh_opt.minimize(f, x0, rng=0, options={"learning_rate": 1e-3, "maxiter": 50})
    b = zovh_opt.minimize(
        f, x0, rng=0, options={"learning_rate": 1e-3, "maxiter": 50, "curvature": "off"}
    )
    assert np.array_equal(a.x, b.x) and a.nfev == b.nfev == 50 * 3 + 1


def test_auto_runs_the_paper_iteration_on_a_budget_below_30_d(tmp_path):
    """``curvature="auto"`` with the step rule: the model from a budget of 30 d evaluations
    on (and with the default budget), the paper's iteration below it; an explicit choice is
    kept whatever the budget, and a checkpoint keeps the choice made."""
    d = 100
    x0 = np.linspace(-1, 1, d)
    for maxfev, model in [(30 * d - 1, False), (30 * d, True), (None, True)]:
        options = {"maxiter": 3} if maxfev is None else {"maxiter": 3, "maxfev": maxfev}
        res = zovh_opt.minimize(lambda x: float(x @ x), x0, rng=0, options=options)
        assert isinstance(res.hess_inv, DiagonalOperator) is model, maxfev
    small = {"maxfev": 10 * d, "curvature": "diagonal"}
    assert isinstance(
        zovh_opt.Optimizer(x0, rng=0, options=small)._parts.method, PreconditionedZoVH
    )
    opt = zovh_opt.Optimizer(x0, rng=0, options={"maxfev": 10 * d})
    assert isinstance(opt._parts.method, PaperZoVH)
    opt.tell([float(p @ p) for p in opt.ask()])
    opt.save(tmp_path / "run.npz")
    assert isinstance(zovh_opt.Optimizer.load(tmp_path / "run.npz")._parts.method, PaperZoVH)


def test_a_state_with_more_kept_iterations_than_history_or_another_storage_is_refused():
    _, f = diagonal_quadratic(30, 1e2)
    opt = ZoVH(np.ones(30), rng=0, history=3)
    for _ in range(5):
        opt.tell(f(opt.ask()))
    state = opt.state()
    assert len(state["kept"]) == 2 and all(k["rows"].shape == (7, 30) for k in state["kept"])
    too_many = {**state, "kept": state["kept"] + state["kept"][:1]}
    with pytest.raises(ValueError, match="history=3 keeps at most 2 iterations"):
        ZoVH(np.ones(30), rng=0, history=3).load_state(too_many)
    with pytest.raises(ValueError, match="the kept pairs and the directions storage disagree"):
        ZoVH(np.ones(30), rng=0, history=3, directions="seeds").load_state(state)
