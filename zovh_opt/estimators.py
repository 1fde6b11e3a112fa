"""Zeroth-order estimators of the gradient, the Hessian and its regularised inverse.

Pure array-API kernels on Gaussian directions ``U`` (``(M, d)``) and values ``y[m] = f(x + mu
U[m])``, in ``U``'s namespace, dtype and device; equation numbers are the paper's.

Examples
--------
>>> import numpy as np
>>> from zovh_opt import estimators
>>> A, rng = np.diag([1.0, 2.0, 3.0]), np.random.default_rng(0)
>>> f = lambda X: 0.5 * np.einsum("ij,jk,ik->i", X, A, X)
>>> H = np.mean([estimators.hessian(U, f(0.1 * U), mu=0.1)
...              for U in rng.standard_normal((20000, 6, 3))], axis=0)
>>> bool(np.abs(H - A).max() < 0.1)   # unbiased on a quadratic
True
"""

from __future__ import annotations

from typing import Any

from array_api_compat import device as _device

from ._arrays.backend import array_sum, namespace_of

__all__ = [
    "InverseHessianOperator",
    "central_difference",
    "diagonal_hessian_error",
    "gradient",
    "hessian",
    "hessian_error",
    "hessian_terms",
    "inverse_hessian",
    "newton_direction",
    "pair_residuals",
    "stein_one_point",
    "stein_three_point",
    "stein_two_point",
    "transported_differences",
]


# --------------------------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------------------------


def _check(U: Any, *values: Any, mu: float, min_rows: int = 1) -> Any:
    xp = namespace_of(U, *values)
    if U.ndim != 2:
        raise ValueError(f"U must be two-dimensional (M, d), got shape {tuple(U.shape)}")
    M = U.shape[0]
    for v in values:
        if v.ndim != 1 or v.shape[0] != M:
            raise ValueError(
                f"function values must have shape ({M},) to match U, got {tuple(v.shape)}"
            )
    if M < min_rows:
        raise ValueError(f"this estimator needs at least {min_rows} directions, got M = {M}")
    _check_positive("mu", mu)
    return xp


def _check_positive(name: str, value: float) -> None:
    if not value > 0 or value == float("inf"):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


def _eye(xp: Any, n: int, like: Any) -> Any:
    return xp.eye(n, dtype=like.dtype, device=_device(like))


def _scaled_outer_sum(U: Any, w: Any) -> Any:
    """Return :math:`\\sum_m w_m u_m u_m^T` as a dense ``(d, d)`` array."""
    return (U.T * w[None, :]) @ U


# --------------------------------------------------------------------------------------------
# Averaged-baseline estimators (the paper's own)
# --------------------------------------------------------------------------------------------


def centred_values(y: Any, mu: float) -> Any:
    r"""Return :math:`\nu_m = (y_m - \bar y) / \mu^2` with the averaged baseline :math:`\bar y`."""
    nu = y - array_sum(y) / y.shape[0]
    nu /= mu  # twice, not by mu**2: a Python float can overflow
    nu /= mu
    return nu


def gradient(U: Any, y: Any, mu: float) -> Any:
    r"""Gradient estimate with the averaged baseline (eqs. (6), (35)).

    .. math:: \hat\nabla F = \frac{1}{M-1} \sum_{m=1}^M \frac{y_m - b}{\mu} u_m,
              \qquad b = \frac1M \sum_m y_m .

    The factor :math:`1/(M-1)` corrects for the baseline being the sample mean, so the estimate
    is unbiased for :math:`\nabla F_\mu(x)` (eq. (22)).

    Parameters
    ----------
    U : array, shape (M, d)
        Directions, one per row.
    y : array, shape (M,)
        Function values ``f(x + mu * U[m])``.
    mu : float
        Smoothing radius, > 0.

    Returns
    -------
    array, shape (d,)

    Examples
    --------
    >>> import numpy as np
    >>> from zovh_opt import estimators
    >>> U = np.random.default_rng(0).standard_normal((4, 3))
    >>> y = (np.ones(3) + 0.1 * U) @ np.array([1.0, 2.0, 3.0])  # f(x) = a @ x
    >>> estimators.gradient(U, y, mu=0.1).shape
    (3,)
    """
    _check(U, y, mu=mu, min_rows=2)
    return (mu * centred_values(y, mu) / (U.shape[0] - 1)) @ U


def hessian(U: Any, y: Any, mu: float, *, weights: Any = None) -> Any:
    r"""Dense ZoVH Hessian estimate (Def. 4.1, eq. (9); eq. (10)).

    .. math:: \hat H = \frac{1}{M-1} \sum_{m=1}^M \frac{y_m - \hat b}{\mu^2}\,
              \mathcal W_m\, u_m u_m^T, \qquad \hat b = \frac1M \sum_m \mathcal W_m y_m .

    Unbiased for :math:`\nabla^2 F_\mu(x)` (Thm. 4.6). This forms a ``(d, d)``
    array and is meant for analysis and tests; the optimizer never calls it.

    Parameters
    ----------
    U : array, shape (M, d)
        Directions, one per row.
    y : array, shape (M,)
        Function values ``f(x + mu * U[m])``.
    mu : float
        Smoothing radius, > 0.
    weights : array, shape (M,), optional
        Importance ratios :math:`\pi_\theta(x_m) / \rho(u_m)` (Prop. 3.7). They are
        self-normalised to mean one, as the paper recommends for stability; ``None`` means all
        ones.

    Returns
    -------
    array, shape (d, d)

    Examples
    --------
    >>> import numpy as np
    >>> from zovh_opt import estimators
    >>> U = np.random.default_rng(0).standard_normal((5, 4))
    >>> y = 0.5 * np.sum((0.1 * U) ** 2, axis=1)        # f(x) = |x|^2 / 2 at x = 0
    >>> H = estimators.hessian(U, y, mu=0.1)
    >>> H.shape, bool(np.allclose(H, H.T))
    ((4, 4), True)
    """
    if weights is None:
        _check(U, y, mu=mu, min_rows=2)
        return _dense(U, hessian_terms("zovh", y, mu))
    xp = _check(U, y, weights, mu=mu, min_rows=2)
    W = weights / xp.mean(weights)
    nu = W * (y - xp.mean(W * y)) / mu / mu
    return _scaled_outer_sum(U, nu / (U.shape[0] - 1))


def pair_residuals(y_plus: Any, y_minus: Any, sq_norms: Any, mu: float, curvature: float) -> Any:
    r"""Centred antithetic pair means, less what an isotropic curvature model predicts.

    .. math:: \sigma_m = \tfrac12 (y^+_m + y^-_m), \qquad
              r_m = (\sigma_m - \bar\sigma) - \tfrac{\mu^2 c}{2}
              \bigl(\|u_m\|^2 - \overline{\|u\|^2}\bigr),

    with :math:`y^\pm_m = f(x \pm \mu u_m)`. In the pair mean the gradient term cancels:
    :math:`\sigma_m = f(x) + \frac{\mu^2}{2} u_m^T \nabla^2 f\, u_m + O(\mu^4)`, so
    :math:`r_m` is the curvature term of the averaged-baseline values less the model's
    :math:`\frac{\mu^2}{2} c \|u_m\|^2`, which acts as a control variate (`diagonal_hessian_error`).

    Parameters
    ----------
    y_plus, y_minus : array, shape (P,)
        ``f(x + mu * u_m)`` and ``f(x - mu * u_m)``.
    sq_norms : array, shape (P,)
        :math:`\|u_m\|^2`.
    mu : float
        Smoothing radius, > 0.
    curvature : float
        The model's curvature :math:`c` along every direction.

    Returns
    -------
    array, shape (P,)

    Examples
    --------
    On a quadratic whose Hessian is the model's, ``c I``, nothing is left to explain:

    >>> import numpy as np
    >>> from zovh_opt import estimators
    >>> U = np.random.default_rng(0).standard_normal((4, 10))
    >>> f = lambda X: 1.5 * np.sum(X * X, axis=1)         # Hessian 3 I
    >>> r = estimators.pair_residuals(f(0.1 * U), f(-0.1 * U), np.sum(U * U, axis=1), 0.1, 3.0)
    >>> bool(np.abs(r).max() < 1e-15)
    True
    """
    xp = namespace_of(y_plus)
    n = y_plus.shape[0]
    sigma = (y_plus + y_minus) / 2
    model = (mu * mu * curvature / 2) * sq_norms
    return (sigma - xp.sum(sigma) / n) - (model - xp.sum(model) / n)


def diagonal_hessian_error(U: Any, y_plus: Any, y_minus: Any, mu: float, curvature: float) -> Any:
    r"""Diagonal of the ZoVH Hessian estimate (eq. (9)) of :math:`\nabla^2 f - c I`, from
    ``P`` antithetic pairs.

    .. math:: e_j = \frac{1}{P-1} \sum_{m=1}^P \frac{r_m}{\mu^2} u_{mj}^2

    with the residuals :math:`r_m` of `pair_residuals`. Because :math:`\sum_m r_m = 0`, this is
    exactly the diagonal of eq. (9) with the averaged baseline applied to the values
    :math:`r_m`, and it is unbiased for :math:`\operatorname{diag}(\nabla^2 f) - c` on a
    quadratic (Thm. 4.6). The pairs remove the gradient term
    :math:`\mu\, \nabla f \cdot u_m`, whose variance would otherwise swamp the curvature;
    the model removes the part of the curvature it already explains. ZoVH's curvature model
    (`zovh_opt.ZoVH`) takes ``U`` in its whitened coordinates. Costs :math:`O(P d)`.

    Parameters
    ----------
    U : array, shape (P, d)
        Directions, one per row.
    y_plus, y_minus : array, shape (P,)
        ``f(x + mu * U[m])`` and ``f(x - mu * U[m])``.
    mu : float
        Smoothing radius, > 0.
    curvature : float
        The model's curvature :math:`c`; 0 gives the diagonal of the Hessian estimate itself.

    Returns
    -------
    array, shape (d,)

    Examples
    --------
    >>> import numpy as np
    >>> from zovh_opt import estimators
    >>> h = np.array([1.0, 4.0, 9.0])
    >>> f = lambda X: 0.5 * (X * X) @ h
    >>> rng = np.random.default_rng(0)
    >>> e = np.mean([estimators.diagonal_hessian_error(U, f(0.1 * U), f(-0.1 * U), 0.1, 2.0)
    ...              for U in rng.standard_normal((20000, 6, 3))], axis=0)
    >>> bool(np.abs(e - (h - 2.0)).max() < 0.2)
    True
    """
    xp = _check(U, y_plus, y_minus, mu=mu, min_rows=2)
    U2 = U * U
    r = pair_residuals(y_plus, y_minus, xp.sum(U2, axis=1), mu, curvature)
    return (r / mu / mu / (U.shape[0] - 1)) @ U2


def hessian_error(U: Any, y_plus: Any, y_minus: Any, mu: float, curvature: float) -> Any:
    r"""The ZoVH Hessian estimate (eq. (9)) of :math:`\nabla^2 f - c I` from ``P``
    antithetic pairs: the full matrix whose diagonal is `diagonal_hessian_error`.

    .. math:: E = \frac{1}{P-1} \sum_{m=1}^P \frac{r_m}{\mu^2}\, u_m u_m^T

    with the residuals :math:`r_m` of `pair_residuals`; unbiased for
    :math:`\nabla^2 f - c I` on a quadratic. ZoVH's full curvature model
    (``curvature="full"``) learns from it in its whitened coordinates, without forming it:
    ``E`` has rank ``P``. Costs :math:`O(P d^2)`.

    Parameters
    ----------
    U : array, shape (P, d)
        Directions, one per row.
    y_plus, y_minus : array, shape (P,)
        ``f(x + mu * U[m])`` and ``f(x - mu * U[m])``.
    mu : float
        Smoothing radius, > 0.
    curvature : float
        The model's curvature :math:`c`; 0 gives the Hessian estimate itself.

    Returns
    -------
    array, shape (d, d)

    Examples
    --------
    >>> import numpy as np
    >>> from zovh_opt import estimators
    >>> H = np.array([[2.0, 1.0], [1.0, 3.0]])
    >>> f = lambda X: 0.5 * np.einsum("mi,ij,mj->m", X, H, X)
    >>> rng = np.random.default_rng(0)
    >>> E = np.mean([estimators.hessian_error(U, f(0.1 * U), f(-0.1 * U), 0.1, 1.0)
    ...              for U in rng.standard_normal((20000, 6, 2))], axis=0)
    >>> bool(np.abs(E - (H - np.eye(2))).max() < 0.1)
    True
    """
    xp = _check(U, y_plus, y_minus, mu=mu, min_rows=2)
    r = pair_residuals(y_plus, y_minus, xp.sum(U * U, axis=1), mu, curvature)
    return U.T @ ((r / mu / mu / (U.shape[0] - 1))[:, None] * U)


def transported_differences(U: Any, deltas: Any, displacement: Any, hessian_diagonal: Any) -> Any:
    r"""Directional derivatives measured at an earlier point, moved to the current one with a
    diagonal model of the Hessian.

    .. math:: \delta'_m = \delta_m + u_m^T \operatorname{diag}(h)\, (x - x_b)

    with :math:`\delta_m \approx u_m \cdot \nabla f(x_b)` (central differences at
    :math:`x_b`). Since :math:`\nabla f(x) = \nabla f(x_b) + \nabla^2 f\, (x - x_b)` on a
    quadratic, :math:`\delta'_m = u_m \cdot \nabla f(x)` exactly when the Hessian is
    :math:`\operatorname{diag}(h)`; otherwise the error is
    :math:`u_m^T (\nabla^2 f - \operatorname{diag}(h)) (x - x_b)`, small while the model is
    good or the displacement short. ZoVH's curvature model (`zovh_opt.ZoVH`) reuses the pairs
    of its last ``history`` iterations this way, as the paper reuses its queries (eq. (122)).
    Costs :math:`O(P d)`.

    Parameters
    ----------
    U : array, shape (P, d)
        The directions of the earlier pairs, one per row.
    deltas : array, shape (P,)
        Their directional derivatives at :math:`x_b`.
    displacement : array, shape (d,)
        :math:`x - x_b`.
    hessian_diagonal : array, shape (d,), or float
        :math:`h`, the model of :math:`\operatorname{diag}(\nabla^2 f)`.

    Returns
    -------
    array, shape (P,)

    Examples
    --------
    >>> import numpy as np
    >>> from zovh_opt import estimators
    >>> h = np.array([1.0, 10.0, 100.0])
    >>> grad = lambda x: h * x                           # f = x^T diag(h) x / 2
    >>> U = np.random.default_rng(0).standard_normal((4, 3))
    >>> xb, x = np.array([1.0, 1.0, 1.0]), np.array([0.5, -0.2, 0.01])
    >>> moved = estimators.transported_differences(U, U @ grad(xb), x - xb, h)
    >>> bool(np.allclose(moved, U @ grad(x)))
    True
    """
    return deltas + U @ (hessian_diagonal * displacement)


# --------------------------------------------------------------------------------------------
# Classical estimators (Sec. 2), for comparison
# --------------------------------------------------------------------------------------------


HESSIAN_KINDS = ("zovh", "stein-1", "stein-2", "stein-3", "central-difference")


def hessian_terms(
    kind: str, y: Any, mu: float, *, f0: Any = None, y_minus: Any = None
) -> tuple[Any, Any]:
    r"""The estimate :math:`\hat H = \sum_m c_m u_m u_m^T + a I` as its coefficients ``(c, a)``.

    Every Hessian estimator here is a weighted sum of the outer products of its directions, plus
    a multiple of the identity for the Stein estimators. This returns those weights without
    touching the directions, so that products, traces and Frobenius norms of the estimate cost
    :math:`O(M d)` instead of :math:`O(d^2)`; the dense estimators below are built from them.

    Parameters
    ----------
    kind : {"zovh", "stein-1", "stein-2", "stein-3", "central-difference"}
        `hessian` (without weights), `stein_one_point`, `stein_two_point`,
        `stein_three_point` or `central_difference`.
    y : array, shape (M,)
        ``f(x + mu * U[m])``.
    mu : float
        Smoothing radius.
    f0 : float or 0-d array, optional
        ``f(x)``, for ``"stein-2"``, ``"stein-3"`` and ``"central-difference"``.
    y_minus : array, shape (M,), optional
        ``f(x - mu * U[m])``, for ``"stein-3"`` and ``"central-difference"``.

    Returns
    -------
    c : array, shape (M,)
    a : float or 0-d array

    Examples
    --------
    >>> import numpy as np
    >>> from zovh_opt import estimators
    >>> U = np.random.default_rng(0).standard_normal((5, 4))
    >>> y = np.sum(U, axis=1)
    >>> c, a = estimators.hessian_terms("zovh", y, mu=0.1)
    >>> bool(np.allclose(U.T @ np.diag(c) @ U + a * np.eye(4), estimators.hessian(U, y, 0.1)))
    True
    """
    xp = namespace_of(y)
    K = y.shape[0]
    needs = {"stein-2": ("f0",), "stein-3": ("f0", "y_minus")}
    needs["central-difference"] = needs["stein-3"]
    if kind not in HESSIAN_KINDS:
        raise ValueError(f"kind must be one of {HESSIAN_KINDS}, got {kind!r}")
    given = {"f0": f0, "y_minus": y_minus}
    missing = [name for name in needs.get(kind, ()) if given[name] is None]
    if missing:
        raise ValueError(f"kind={kind!r} needs {' and '.join(missing)}")
    if kind == "zovh":
        return centred_values(y, mu) / (K - 1), 0.0
    if kind == "stein-1":
        scaled = y / mu / mu
    elif kind == "stein-2":
        scaled = (y - f0) / mu / mu
    else:
        scaled = _second_difference(y, y_minus, f0, mu) / 2
    if kind == "central-difference":
        return scaled / K, 0.0
    return scaled / K, -xp.mean(scaled)


def _dense(U: Any, terms: tuple[Any, Any]) -> Any:
    """The dense ``(d, d)`` array of the terms from `hessian_terms`."""
    xp = namespace_of(U)
    c, a = terms
    return _scaled_outer_sum(U, c) + a * _eye(xp, U.shape[1], U)


def stein_one_point(U: Any, y: Any, mu: float) -> Any:
    r"""One-point Stein estimator (eq. (2)), zero baseline.

    .. math:: \hat H_{S_1} = \frac1K \sum_k \frac{f(x + \mu u_k)}{\mu^2} (u_k u_k^T - I_d)

    Parameters
    ----------
    U : array, shape (K, d)
    y : array, shape (K,)
        ``f(x + mu * U[k])``.
    mu : float

    Returns
    -------
    array, shape (d, d)

    Examples
    --------
    >>> import numpy as np
    >>> from zovh_opt import estimators
    >>> U = np.random.default_rng(0).standard_normal((4, 3))
    >>> f = lambda X: 0.5 * np.sum(X * X, axis=-1)
    >>> estimators.stein_one_point(U, f(0.1 * U), mu=0.1).shape
    (3, 3)
    """
    _check(U, y, mu=mu)
    return _dense(U, hessian_terms("stein-1", y, mu))


def stein_two_point(U: Any, y: Any, f0: Any, mu: float) -> Any:
    r"""Two-point Stein estimator (eq. (3)), anchor baseline ``f0 = f(x)``.

    .. math:: \hat H_{S_2} = \frac1K \sum_k \frac{f(x + \mu u_k) - f(x)}{\mu^2} (u_k u_k^T - I_d)

    Parameters
    ----------
    U : array, shape (K, d)
    y : array, shape (K,)
        ``f(x + mu * U[k])``.
    f0 : float or 0-d array
        ``f(x)``.
    mu : float

    Returns
    -------
    array, shape (d, d)

    Examples
    --------
    >>> import numpy as np
    >>> from zovh_opt import estimators
    >>> U = np.random.default_rng(0).standard_normal((5, 3))
    >>> f = lambda X: 0.5 * np.sum(X * X, axis=-1)
    >>> estimators.stein_two_point(U, f(0.1 * U), f0=0.0, mu=0.1).shape
    (3, 3)
    """
    _check(U, y, mu=mu)
    return _dense(U, hessian_terms("stein-2", y, mu, f0=f0))


def _second_difference(y_plus: Any, y_minus: Any, f0: Any, mu: float) -> Any:
    return (y_plus - 2 * f0 + y_minus) / mu / mu


def stein_three_point(U: Any, y_plus: Any, y_minus: Any, f0: Any, mu: float) -> Any:
    r"""Three-point Stein estimator (eq. (4)), antithetic pairs.

    .. math:: \hat H_{S_3} = \frac{1}{2K} \sum_k
              \frac{f(x + \mu u_k) - 2 f(x) + f(x - \mu u_k)}{\mu^2} (u_k u_k^T - I_d)

    Parameters
    ----------
    U : array, shape (K, d)
    y_plus, y_minus : array, shape (K,)
        ``f(x + mu * U[k])`` and ``f(x - mu * U[k])``.
    f0 : float or 0-d array
        ``f(x)``.
    mu : float

    Returns
    -------
    array, shape (d, d)

    Examples
    --------
    >>> import numpy as np
    >>> from zovh_opt import estimators
    >>> U = np.random.default_rng(0).standard_normal((6, 3))
    >>> f = lambda X: 0.5 * np.sum(X * X, axis=-1)
    >>> estimators.stein_three_point(U, f(0.1 * U), f(-0.1 * U), f0=0.0, mu=0.1).shape
    (3, 3)
    """
    _check(U, y_plus, y_minus, mu=mu)
    return _dense(U, hessian_terms("stein-3", y_plus, mu, f0=f0, y_minus=y_minus))


def central_difference(U: Any, y_plus: Any, y_minus: Any, f0: Any, mu: float) -> Any:
    r"""Randomised central-difference estimator (eq. (5)), as used by HiZOO.

    .. math:: \hat H_{CD} = \frac{1}{2K} \sum_k
              \frac{f(x + \mu u_k) - 2 f(x) + f(x - \mu u_k)}{\mu^2} u_k u_k^T

    Biased: on a quadratic with Hessian :math:`A` its mean is :math:`(2A + \mathrm{tr}(A) I)/2`.

    Parameters
    ----------
    U : array, shape (K, d)
    y_plus, y_minus : array, shape (K,)
        ``f(x + mu * U[k])`` and ``f(x - mu * U[k])``.
    f0 : float or 0-d array
        ``f(x)``.
    mu : float

    Returns
    -------
    array, shape (d, d)

    Examples
    --------
    Its bias on a quadratic, :math:`\mathrm{tr}(A) I / 2`, in a Monte-Carlo mean:

    >>> import numpy as np
    >>> from zovh_opt import estimators
    >>> f = lambda X: 0.5 * np.sum(X * X, axis=-1)        # A = I, tr(A) = 3
    >>> rng = np.random.default_rng(0)
    >>> H = np.mean([estimators.central_difference(U, f(0.1 * U), f(-0.1 * U), 0.0, mu=0.1)
    ...              for U in rng.standard_normal((20000, 2, 3))], axis=0)
    >>> bool(np.abs(H - 2.5 * np.eye(3)).max() < 0.1)
    True
    """
    _check(U, y_plus, y_minus, mu=mu)
    return _dense(U, hessian_terms("central-difference", y_plus, mu, f0=f0, y_minus=y_minus))


# --------------------------------------------------------------------------------------------
# Regularised inverse and the Newton direction
# --------------------------------------------------------------------------------------------


def inverse_correction(gram: Any, nu: Any, lam: float, *, exact: bool) -> Any:
    r"""The ``(M, M)`` matrix :math:`C` in :math:`(\hat H + \lambda I)^{-1} = I/\lambda - U^T C U`.

    With :math:`D = \mathrm{diag}(\nu)/(M-1)` and the Gram matrix :math:`G = U U^T`, Woodbury
    (eq. (14)) gives :math:`C = \lambda^{-2} (D^{-1} + G/\lambda)^{-1}`. We use the
    equivalent :math:`C = (\lambda^2 I + \lambda D G)^{-1} D`, which never divides by
    :math:`\nu_m`, so a zero :math:`\nu_m` (a query equal to the baseline) is harmless.
    Replacing :math:`G` by its diagonal gives eq. (15):
    :math:`C = \mathrm{diag}\big(\nu_m / (\lambda^2 (M-1) + \lambda \nu_m \|u_m\|^2)\big)`.
    """
    xp = namespace_of(gram)
    M = gram.shape[0]
    if not exact:
        return _diag_matrix(xp, _diagonal_correction(gram, nu, lam))
    D = nu / (M - 1)
    system = lam * lam * _eye(xp, M, gram) + lam * D[:, None] * gram
    return xp.linalg.solve(system, _diag_matrix(xp, D))


def _diagonal_correction(gram: Any, nu: Any, lam: float, sq_norms: Any = None) -> Any:
    """The diagonal of :math:`C` in eq. (15)."""
    if sq_norms is None:
        sq_norms = namespace_of(gram).linalg.diagonal(gram)
    return nu / (lam * lam * (gram.shape[0] - 1) + lam * nu * sq_norms)


def _diag_matrix(xp: Any, v: Any) -> Any:
    return _eye(xp, v.shape[0], v) * v[None, :]


def newton_coefficients(gram: Any, y: Any, mu: float, lam: float, *, exact: bool) -> Any:
    r"""Coefficients :math:`c` of the bias-corrected shared product :math:`p = \sum_m c_m u_m`.

    This is the whole of eq. (16) (and eq. (122))
    once the Gram matrix :math:`G = U U^T` is known; see `newton_direction` for the formula.
    Costs :math:`O(M^2)` for the diagonal inverse and :math:`O(M^3)` for the exact one.
    """
    return newton_coefficients_from_centred(gram, centred_values(y, mu), mu, lam, exact=exact)


def newton_coefficients_from_centred(
    gram: Any, nu: Any, mu: float, lam: float, *, exact: bool, sq_norms: Any = None
) -> Any:
    """`newton_coefficients` from the centred values ``nu`` (`centred_values`) instead of ``y``;
    ``sq_norms``, the diagonal of ``gram``, where the caller has it."""
    M = gram.shape[0]
    if sq_norms is None:
        sq_norms = namespace_of(gram).linalg.diagonal(gram)
    # u_l . g_{-l}: the gradient projected on u_l with query l left out (the self term is
    # correlated with nu_l and would bias the product).
    loo = gram @ nu
    loo -= nu * sq_norms
    loo *= mu / (M - 2)
    if exact:
        correction = inverse_correction(gram, nu, lam, exact=True) @ loo
    else:
        correction = _diagonal_correction(gram, nu, lam, sq_norms)
        correction *= loo
    c = nu * (mu / (lam * (M - 1)))
    c -= correction
    return c


def decoupled_coefficients(
    gram: Any, y_hess: Any, y_grad: Any, mu: float, lam: float, *, exact: bool
) -> Any:
    r"""Coefficients of :math:`(\hat H + \lambda I)^{-1} \hat\nabla F` with independent directions.

    Regime 1 of Sec. 5.2: the Hessian uses the first ``M_h`` rows, the gradient the last ``M_g``
    rows; ``gram`` is the Gram matrix of all ``M_h + M_g`` rows in that order. With
    :math:`\hat H^{-1}_\lambda = I/\lambda - U_h^T C U_h` and :math:`\hat\nabla F = U_g^T
    (\mu \nu^g)/(M_g - 1)`, the product is
    :math:`U_g^T \mu\nu^g / (\lambda (M_g-1)) - U_h^T C\, G_{hg}\, \mu\nu^g/(M_g-1)`; the two sets
    are independent, so no leave-one-out correction is needed.
    """
    xp = namespace_of(gram, y_hess, y_grad)
    Mh, Mg = y_hess.shape[0], y_grad.shape[0]
    nu_h, nu_g = centred_values(y_hess, mu), centred_values(y_grad, mu)
    grad_coef = mu * nu_g / (Mg - 1)
    C = inverse_correction(gram[:Mh, :Mh], nu_h, lam, exact=exact)
    hess_coef = -(C @ (gram[:Mh, Mh:] @ grad_coef))
    return xp.concat([hess_coef, grad_coef / lam])


class SymmetricOperator:
    """The SciPy ``LinearOperator`` interface of a symmetric operator from its ``matvec`` and
    ``matmat``: ``@``, ``dot``, the transpose and the adjoint (the operator itself)."""

    def matvec(self, v: Any) -> Any:
        raise NotImplementedError

    def matmat(self, V: Any) -> Any:
        raise NotImplementedError

    def rmatvec(self, v: Any) -> Any:
        """``A^T v = A v``."""
        return self.matvec(v)

    def rmatmat(self, V: Any) -> Any:
        """``A^T V = A V``."""
        return self.matmat(V)

    def __matmul__(self, other: Any) -> Any:
        return self.matvec(other) if other.ndim == 1 else self.matmat(other)

    def dot(self, other: Any) -> Any:
        """Same as ``self @ other``."""
        return self @ other

    @property
    def T(self) -> SymmetricOperator:
        """The transpose, which is the operator itself."""
        return self

    def adjoint(self) -> SymmetricOperator:
        """The adjoint, which is the operator itself."""
        return self

    H = T


class InverseHessianOperator(SymmetricOperator):
    r"""The regularised inverse-Hessian estimate :math:`I/\lambda - U^T C U` as a linear operator.

    It has the interface of ``scipy.sparse.linalg.LinearOperator`` (``shape``, ``dtype``,
    ``matvec``, ``rmatvec``, ``matmat``, ``@``, ``todense``) and works in the namespace of the
    directions, so it also serves PyTorch and CuPy arrays. For NumPy arrays,
    ``scipy.sparse.linalg.aslinearoperator(op)`` gives a SciPy operator. No ``(d, d)`` array is
    formed except by `todense`. A product costs :math:`O(M d)`.

    Parameters
    ----------
    rows : object
        The directions: an object with ``__len__``, ``dot(v)`` (the ``M`` inner products with a
        vector) and ``combine(c)`` (:math:`\sum_m c_m u_m`); see ``StackedRows``.
    correction : array, shape (M, M)
        The matrix :math:`C` from `inverse_correction`.
    lam : float
        The ridge :math:`\lambda`.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.sparse.linalg import aslinearoperator
    >>> from zovh_opt import estimators
    >>> U = np.random.default_rng(0).standard_normal((6, 50))
    >>> op = estimators.inverse_hessian(U, np.sum(U, axis=1), mu=0.1, lam=0.1)
    >>> v = np.ones(50)
    >>> bool(np.allclose(op @ v, op.todense() @ v)), aslinearoperator(op).shape
    (True, (50, 50))
    """

    def __init__(self, rows: Any, correction: Any, lam: float) -> None:
        self._rows = rows
        self._C = correction
        self._lam = lam
        d = rows.dim
        self.shape = (d, d)
        self.dtype = correction.dtype
        self.ndim = 2

    def matvec(self, v: Any) -> Any:
        """Return ``A @ v`` for a vector ``v`` of shape ``(d,)`` (or ``(d, 1)``)."""
        xp = namespace_of(v)
        if v.ndim == 2:
            return xp.reshape(self.matvec(xp.reshape(v, (-1,))), (-1, 1))
        return v / self._lam - self._rows.combine(self._C @ self._rows.dot(v))

    def matmat(self, V: Any) -> Any:
        """Return ``A @ V`` for ``V`` of shape ``(d, n)``."""
        xp = namespace_of(V)
        cols = [self.matvec(V[:, j]) for j in range(V.shape[1])]
        return xp.stack(cols, axis=1)

    def todense(self) -> Any:
        """Return the dense ``(d, d)`` array (for analysis; costs :math:`O(d^2)` memory)."""
        U = self._rows.stacked()
        xp = namespace_of(U)
        return _eye(xp, U.shape[1], U) / self._lam - U.T @ (self._C @ U)

    def __repr__(self) -> str:
        return f"<{self.shape[0]}x{self.shape[1]} InverseHessianOperator with dtype={self.dtype}>"


class StackedRows:
    """Directions held as one ``(M, d)`` array, for the stateless kernels."""

    def __init__(self, U: Any) -> None:
        self.U = U
        self.dim = U.shape[1]

    def __len__(self) -> int:
        return self.U.shape[0]

    def dot(self, v: Any) -> Any:
        return self.U @ v

    def combine(self, c: Any) -> Any:
        return c @ self.U

    def gram(self) -> Any:
        return self.U @ self.U.T

    def stacked(self) -> Any:
        return self.U


def inverse_hessian(
    U: Any, y: Any, mu: float, lam: float, *, exact: bool = False
) -> InverseHessianOperator:
    r"""Regularised inverse :math:`(\hat H + \lambda I)^{-1}` of the ZoVH Hessian estimate.

    ``exact=True`` applies Woodbury (eq. (14)) through an ``(M, M)`` system, in a
    form where a zero :math:`\nu_m` is harmless (see `inverse_correction`). ``exact=False``
    replaces the Gram matrix :math:`U U^T` by its diagonal (eq. (15)):

    .. math:: \tilde H^{-1} = \frac{I}{\lambda} - \sum_m
              \frac{\nu_m}{\lambda^2 (M-1) + \lambda \nu_m \|u_m\|^2} u_m u_m^T ,

    exact for orthogonal directions and within :math:`O_p(M/\sqrt d)` of the exact inverse for
    Gaussian ones (Prop. D.2).

    Parameters
    ----------
    U : array, shape (M, d)
    y : array, shape (M,)
    mu, lam : float
        Smoothing radius and ridge, both > 0.
    exact : bool, default False

    Returns
    -------
    InverseHessianOperator
        A ``(d, d)`` linear operator; nothing of size ``d x d`` is formed.

    Notes
    -----
    The inverse exists only while :math:`\hat H + \lambda I` is nonsingular. :math:`\hat H` is
    indefinite in general, so with the diagonal form a denominator
    :math:`\lambda (M-1) + \nu_m \|u_m\|^2` near zero (a strongly negative :math:`\nu_m`) makes
    the estimate blow up; larger :math:`\lambda` guards against it.

    Examples
    --------
    The exact form is the inverse of the regularised estimate:

    >>> import numpy as np
    >>> from zovh_opt import estimators
    >>> rng = np.random.default_rng(0)
    >>> U, y = rng.standard_normal((6, 40)), rng.standard_normal(6)
    >>> H = estimators.hessian(U, y, mu=0.1)
    >>> op = estimators.inverse_hessian(U, y, mu=0.1, lam=0.1, exact=True)
    >>> bool(np.allclose(op.todense(), np.linalg.inv(H + 0.1 * np.eye(40))))
    True
    """
    _check(U, y, mu=mu, min_rows=2)
    _check_positive("lam", lam)
    rows = StackedRows(U)
    C = inverse_correction(rows.gram(), centred_values(y, mu), lam, exact=exact)
    return InverseHessianOperator(rows, C, lam)


def newton_direction(U: Any, y: Any, mu: float, lam: float, *, exact: bool = False) -> Any:
    r"""Bias-corrected inverse-Hessian-gradient product, the ZoVH step direction.

    Eq. (16) (``M = K``) and eq. (122)
    (``M = N K``), with :math:`s = \sum_j \nu_j u_j`:

    .. math:: p = \sum_{m=1}^M \mu \nu_m \left( \frac{1}{\lambda (M-1)} -
              \frac{(u_m^T s - \nu_m \|u_m\|^2) / (M-2)}
                   {\lambda^2 (M-1) + \lambda \nu_m \|u_m\|^2} \right) u_m .

    The gradient and the Hessian share the same queries; the term
    :math:`u_m^T s - \nu_m\|u_m\|^2 = u_m^T \sum_{j \ne m} \nu_j u_j` multiplies the Hessian's
    rank-one piece :math:`u_m u_m^T` by a gradient estimate that leaves query ``m`` out, which
    removes the correlation bias. Time :math:`O(M d)` (one Gram matrix, one combination), extra
    memory :math:`O(d)`.

    ``exact=True`` uses the exact Woodbury inverse with the same leave-one-out construction.
    Write :math:`(\hat H + \lambda I)^{-1} = I/\lambda - U^T C U` with
    :math:`C = (\lambda^2 I + \lambda D G)^{-1} D`, :math:`D = \mathrm{diag}(\nu)/(M-1)`,
    :math:`G = U U^T`, and :math:`\hat\nabla F = U^T \mu\nu/(M-1)`. Then

    .. math:: (\hat H + \lambda I)^{-1} \hat\nabla F
              = \frac{\hat\nabla F}{\lambda} - \sum_{m,l} C_{ml}\, u_m\, (u_l^T \hat\nabla F).

    In each term, replace the gradient projected on :math:`u_l` by the leave-:math:`l`-out
    estimate :math:`\hat\nabla_{-l} F = \frac{\mu}{M-2} \sum_{j \ne l} \nu_j u_j`, exactly as the
    shared product does for :math:`l = m`:
    :math:`q_l = u_l^T \hat\nabla_{-l} F = \mu\, ((G\nu)_l - \nu_l G_{ll}) / (M-2)`, and

    .. math:: p = \sum_m \Big(\frac{\mu \nu_m}{\lambda (M-1)} - (C q)_m\Big) u_m .

    With :math:`G` replaced by its diagonal inside :math:`C`, :math:`C` becomes diagonal with
    entries :math:`\nu_m / (\lambda^2(M-1) + \lambda\nu_m\|u_m\|^2)` and this is exactly eq.
    (16); so both forms share one implementation.

    Parameters
    ----------
    U : array, shape (M, d)
        Directions, ``M >= 3``.
    y : array, shape (M,)
    mu, lam : float
        Smoothing radius and ridge, both > 0.
    exact : bool, default False

    Returns
    -------
    array, shape (d,)
        The step direction; the optimizer moves ``x <- x - learning_rate * p``.

    Examples
    --------
    >>> import numpy as np
    >>> from zovh_opt import estimators
    >>> U = np.random.default_rng(0).standard_normal((12, 1000))
    >>> y = 0.5 * np.sum((1.0 + 0.1 * U) ** 2, axis=1)     # |x|^2 / 2 around x = 1
    >>> p = estimators.newton_direction(U, y, mu=0.1, lam=0.1)
    >>> p.shape
    (1000,)
    >>> g = estimators.gradient(U, y, mu=0.1)          # in high dimension p is close to g / lam
    >>> bool(np.linalg.norm(p - g / 0.1) < 0.2 * np.linalg.norm(g / 0.1))
    True
    """
    _check(U, y, mu=mu, min_rows=3)
    _check_positive("lam", lam)
    rows = StackedRows(U)
    return rows.combine(newton_coefficients(rows.gram(), y, mu, lam, exact=exact))
