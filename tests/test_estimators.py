"""Each kernel against an independent dense NumPy transcription of the paper's formula."""

from __future__ import annotations

import numpy as np
import pytest

from zovh_opt import estimators

MU, LAM = 0.1, 0.1
D = 40
# M = K (no reuse) and M = N K (query reuse with N = 4)
SIZES = [3, 12]


def rel_err(a, b) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def sample(M, d=D, seed=0):
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((M, d))
    x = rng.standard_normal(d)
    A = rng.standard_normal((d, d)) / np.sqrt(d)
    f = lambda z: 0.5 * z @ (A + A.T) @ z + np.sin(z).sum()  # noqa: E731
    y = np.array([f(x + MU * u) for u in U])
    return U, y, f, x


# --- dense references, written from the paper with explicit loops ------------------------


def ref_gradient(U, y, mu):
    M = len(y)
    b = y.mean()
    return sum((y[m] - b) / mu * U[m] for m in range(M)) / (M - 1)


def ref_hessian(U, y, mu, W=None):
    M, d = U.shape
    W = np.ones(M) if W is None else W / W.mean()
    b = np.mean(W * y)
    return sum((y[m] - b) / mu**2 * np.outer(U[m], U[m]) * W[m] for m in range(M)) / (M - 1)


def ref_stein(U, coeff):
    K, d = U.shape
    return sum(coeff[k] * (np.outer(U[k], U[k]) - np.eye(d)) for k in range(K)) / K


def ref_inverse_approx(U, y, mu, lam):
    M, d = U.shape
    nu = (y - y.mean()) / mu**2
    out = np.eye(d) / lam
    for m in range(M):
        out -= nu[m] / (lam**2 * (M - 1) + lam * nu[m] * U[m] @ U[m]) * np.outer(U[m], U[m])
    return out


def ref_newton_shared(U, y, mu, lam):
    """Eq. inv-hess-grad-prod-shared with the leave-one-out sum written as a loop."""
    M, d = U.shape
    nu = (y - y.mean()) / mu**2
    p = np.zeros(d)
    for m in range(M):
        loo = sum(nu[j] * U[j] for j in range(M) if j != m)
        num = U[m] @ loo / (M - 2)
        den = lam**2 * (M - 1) + lam * nu[m] * (U[m] @ U[m])
        p += mu * nu[m] * (1 / (lam * (M - 1)) - num / den) * U[m]
    return p


def ref_newton_exact(U, y, mu, lam):
    """Exact Woodbury with the same leave-one-out construction, as dense d x d algebra.

    (H + lam I)^-1 g = g / lam - sum_{m,l} C_ml u_m (u_l . g_{-l}), where the pieces come from
    I/lam - (H + lam I)^-1 = U^T C U, read off a dense inverse by least squares.
    """
    M, d = U.shape
    nu = (y - y.mean()) / mu**2
    H = ref_hessian(U, y, mu)
    R = np.eye(d) / lam - np.linalg.inv(H + lam * np.eye(d))  # = U^T C U
    P = np.linalg.pinv(U.T)
    C = P @ R @ P.T
    g = sum(mu * nu[m] * U[m] for m in range(M)) / (M - 1)
    p = g / lam
    for m in range(M):
        for ell in range(M):
            g_loo = sum(mu * nu[j] * U[j] for j in range(M) if j != ell) / (M - 2)
            p -= C[m, ell] * U[m] * (U[ell] @ g_loo)
    return p


# --- tests ---------------------------------------------------------------------------------


@pytest.mark.parametrize("M", SIZES)
def test_gradient(backend, M):
    U, y, _, _ = sample(M)
    got = estimators.gradient(backend.asarray(U), backend.asarray(y), MU)
    assert rel_err(backend.to_numpy(got), ref_gradient(U, y, MU)) <= 1e-10


@pytest.mark.parametrize("M", SIZES)
@pytest.mark.parametrize("weighted", [False, True])
def test_hessian(backend, M, weighted):
    U, y, _, _ = sample(M)
    W = np.random.default_rng(1).uniform(0.5, 2.0, M) if weighted else None
    kwargs = {"weights": backend.asarray(W)} if weighted else {}
    got = estimators.hessian(backend.asarray(U), backend.asarray(y), MU, **kwargs)
    assert rel_err(backend.to_numpy(got), ref_hessian(U, y, MU, W)) <= 1e-10


def test_hessian_weights_are_self_normalised(backend):
    U, y, _, _ = sample(6)
    W = np.random.default_rng(2).uniform(0.5, 2.0, 6)
    a = estimators.hessian(backend.asarray(U), backend.asarray(y), MU, weights=backend.asarray(W))
    b = estimators.hessian(
        backend.asarray(U), backend.asarray(y), MU, weights=backend.asarray(7.0 * W)
    )
    assert rel_err(backend.to_numpy(a), backend.to_numpy(b)) <= 1e-12


@pytest.mark.parametrize("K", SIZES)
def test_classical_estimators(backend, K):
    U, y, f, x = sample(K)
    f0 = float(f(x))
    y_minus = np.array([f(x - MU * u) for u in U])
    Ub, yb, ymb = backend.asarray(U), backend.asarray(y), backend.asarray(y_minus)
    second = (y - 2 * f0 + y_minus) / MU**2
    cases = {
        "one": (estimators.stein_one_point(Ub, yb, MU), ref_stein(U, y / MU**2)),
        "two": (estimators.stein_two_point(Ub, yb, f0, MU), ref_stein(U, (y - f0) / MU**2)),
        "three": (estimators.stein_three_point(Ub, yb, ymb, f0, MU), ref_stein(U, second / 2)),
        "cd": (
            estimators.central_difference(Ub, yb, ymb, f0, MU),
            sum(second[k] * np.outer(U[k], U[k]) for k in range(K)) / (2 * K),
        ),
    }
    for name, (got, ref) in cases.items():
        assert rel_err(backend.to_numpy(got), ref) <= 1e-10, name


@pytest.mark.parametrize("M", SIZES)
def test_inverse_hessian_exact_is_dense_inverse(backend, M):
    U, y, _, _ = sample(M)
    op = estimators.inverse_hessian(backend.asarray(U), backend.asarray(y), MU, LAM, exact=True)
    ref = np.linalg.inv(ref_hessian(U, y, MU) + LAM * np.eye(D))
    assert rel_err(backend.to_numpy(op.todense()), ref) <= 1e-10
    v = np.random.default_rng(3).standard_normal(D)
    assert rel_err(backend.to_numpy(op.matvec(backend.asarray(v))), ref @ v) <= 1e-10
    V = np.random.default_rng(4).standard_normal((D, 3))
    assert rel_err(backend.to_numpy(op @ backend.asarray(V)), ref @ V) <= 1e-10


@pytest.mark.parametrize("M", SIZES)
def test_inverse_hessian_approx(backend, M):
    U, y, _, _ = sample(M)
    op = estimators.inverse_hessian(backend.asarray(U), backend.asarray(y), MU, LAM)
    assert rel_err(backend.to_numpy(op.todense()), ref_inverse_approx(U, y, MU, LAM)) <= 1e-10


def test_inverse_approx_exact_for_orthogonal_directions(backend):
    rng = np.random.default_rng(5)
    Q, _ = np.linalg.qr(rng.standard_normal((D, 6)))
    U = Q.T * rng.uniform(3, 7, size=(6, 1))  # orthogonal rows of unequal norms
    y = rng.standard_normal(6)
    ref = np.linalg.inv(ref_hessian(U, y, MU) + LAM * np.eye(D))
    op = estimators.inverse_hessian(backend.asarray(U), backend.asarray(y), MU, LAM)
    assert rel_err(backend.to_numpy(op.todense()), ref) <= 1e-10


def test_exact_inverse_with_zero_nu(backend):
    """A query equal to the baseline (nu_m = 0) must not break the exact Woodbury form."""
    U, y, _, _ = sample(3)
    y = np.array([1.0, 2.0, 3.0])  # the middle value equals the mean
    op = estimators.inverse_hessian(backend.asarray(U), backend.asarray(y), MU, LAM, exact=True)
    ref = np.linalg.inv(ref_hessian(U, y, MU) + LAM * np.eye(D))
    assert rel_err(backend.to_numpy(op.todense()), ref) <= 1e-10


@pytest.mark.parametrize("M", SIZES)
def test_newton_direction_shared(backend, M):
    U, y, _, _ = sample(M)
    got = estimators.newton_direction(backend.asarray(U), backend.asarray(y), MU, LAM)
    assert rel_err(backend.to_numpy(got), ref_newton_shared(U, y, MU, LAM)) <= 1e-10


@pytest.mark.parametrize("M", SIZES)
def test_newton_direction_exact(backend, M):
    U, y, _, _ = sample(M)
    got = estimators.newton_direction(backend.asarray(U), backend.asarray(y), MU, LAM, exact=True)
    assert rel_err(backend.to_numpy(got), ref_newton_exact(U, y, MU, LAM)) <= 1e-8


def test_decoupled_coefficients_match_dense_product(backend):
    Uh, yh, _, _ = sample(12, seed=1)
    Ug, yg, _, _ = sample(12, seed=2)
    U = np.concatenate([Uh, Ug])
    for exact in (False, True):
        c = estimators.decoupled_coefficients(
            backend.asarray(U @ U.T),
            backend.asarray(yh),
            backend.asarray(yg),
            MU,
            LAM,
            exact=exact,
        )
        got = backend.to_numpy(c) @ U
        inv = (
            np.linalg.inv(ref_hessian(Uh, yh, MU) + LAM * np.eye(D))
            if exact
            else ref_inverse_approx(Uh, yh, MU, LAM)
        )
        assert rel_err(got, inv @ ref_gradient(Ug, yg, MU)) <= 1e-10


def test_operator_works_with_scipy():
    from scipy.sparse.linalg import aslinearoperator, cg

    U, y, _, _ = sample(12)
    op = estimators.inverse_hessian(U, y, MU, 10.0, exact=True)
    lin = aslinearoperator(op)
    v = np.random.default_rng(6).standard_normal(D)
    assert rel_err(lin.matvec(v), op.todense() @ v) <= 1e-12
    # solving with the inverse recovers (H + lam I) v
    sol, info = cg(lin, v, rtol=1e-12, maxiter=500)
    H = ref_hessian(U, y, MU)
    if np.all(np.linalg.eigvalsh(H + 10.0 * np.eye(D)) > 0):
        assert info == 0
        assert rel_err(sol, (H + 10.0 * np.eye(D)) @ v) <= 1e-6


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda U, y: estimators.gradient(U, y, 0.0), "mu must be a finite number > 0"),
        (lambda U, y: estimators.gradient(U[0], y, 0.1), "two-dimensional"),
        (lambda U, y: estimators.gradient(U, y[:2], 0.1), "must have shape"),
        (lambda U, y: estimators.newton_direction(U[:2], y[:2], 0.1, 0.1), "at least 3"),
        (lambda U, y: estimators.inverse_hessian(U, y, 0.1, -1.0), "lam must be"),
    ],
)
def test_bad_input(call, message):
    U, y, _, _ = sample(3)
    with pytest.raises(ValueError, match=message):
        call(U, y)


def test_mixed_namespaces_are_rejected():
    torch = pytest.importorskip("torch")
    U, y, _, _ = sample(3)
    with pytest.raises(TypeError, match="numpy.*torch|torch.*numpy"):
        estimators.gradient(torch.asarray(U), y, MU)
