"""The test functions against PyTorch autograd (an independent reference) and known minima."""

from __future__ import annotations

import numpy as np
import pytest

from zovh_opt import problems

torch = pytest.importorskip("torch")

PROBLEMS = [
    problems.quadratic,
    problems.RotatedQuadratic(condition=50.0, seed=3),
    problems.rosenbrock,
    problems.levy,
    problems.ackley,
    problems.styblinski_tang,
]


def autograd_reference(problem, x):
    """Value, gradient and dense Hessian from torch.autograd on float64 tensors."""
    t = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    value = problem(t)
    (grad,) = torch.autograd.grad(value, t)
    hess = torch.autograd.functional.hessian(problem, t.detach())
    return float(value.detach()), grad.numpy(), hess.numpy()


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.name)
@pytest.mark.parametrize("d", [1, 2, 7])
def test_derivatives_match_autograd(problem, d):
    if d == 1 and problem is problems.rosenbrock:
        pytest.skip("Rosenbrock needs d >= 2")
    x = np.random.default_rng(d).uniform(-2.0, 2.0, d)
    value, grad, hess = autograd_reference(problem, x)
    assert float(problem(x)) == pytest.approx(value, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(problem.gradient(x), grad, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(problem.hessian(x), hess, rtol=1e-10, atol=1e-10)
    v = np.random.default_rng(7).standard_normal(d)
    np.testing.assert_allclose(problem.hvp(x, v), hess @ v, rtol=1e-10, atol=1e-10)
    assert float(problem.hessian_trace(x)) == pytest.approx(np.trace(hess), rel=1e-10, abs=1e-10)
    assert float(problem.hessian_frobenius(x)) == pytest.approx(np.linalg.norm(hess), rel=1e-10)


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.name)
def test_rows_are_evaluated_separately(problem, xp, backend):
    X = np.random.default_rng(0).uniform(-2.0, 2.0, (4, 6))
    values = backend.to_numpy(problem(backend.asarray(X)))
    expected = [float(backend.to_numpy(problem(backend.asarray(row)))) for row in X]
    np.testing.assert_allclose(values, expected, rtol=1e-12)
    np.testing.assert_allclose(values, [float(problem(row)) for row in X], rtol=1e-12)


@pytest.mark.parametrize(
    "problem, point",
    [
        (problems.quadratic, 0.0),
        (problems.RotatedQuadratic(10.0), 0.0),
        (problems.rosenbrock, 1.0),
        (problems.levy, 1.0),
        (problems.ackley, 0.0),
        (problems.styblinski_tang, -2.903534027771177),
    ],
    ids=lambda p: getattr(p, "name", ""),
)
def test_minimum_value_and_point(problem, point):
    d = 9
    x = np.full(d, point)
    assert float(problem(x)) == pytest.approx(problem.minimum(d), abs=1e-12 * d)
    if problem is not problems.ackley:  # not differentiable at its minimum
        np.testing.assert_allclose(problem.gradient(x), 0.0, atol=1e-9)


def test_rotated_quadratic_has_its_condition_number():
    problem = problems.RotatedQuadratic(condition=1e3, seed=1)
    H = problem.hessian(np.zeros(12))
    eig = np.linalg.eigvalsh(H)
    assert eig[0] == pytest.approx(1.0) and eig[-1] == pytest.approx(1e3)
    assert np.count_nonzero(np.abs(H - np.diag(np.diag(H))) > 1e-3) > 100  # truly rotated
    with pytest.raises(ValueError, match="condition must be >= 1"):
        problems.RotatedQuadratic(condition=0.5)
