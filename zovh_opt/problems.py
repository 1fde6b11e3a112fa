"""Test functions with analytic derivatives, written against the array API.

The paper's functions (Appx. F.1, F.2), each a `Problem` with ``gradient``, ``hvp``,
``hessian``, ``hessian_trace``, ``hessian_frobenius`` and ``minimum(d)``, in ``x``'s namespace.

Examples
--------
>>> import numpy as np
>>> from zovh_opt import problems
>>> float(problems.rosenbrock(np.ones(5))), problems.rosenbrock.minimum(5)
(0.0, 0.0)
>>> x = np.linspace(-1, 1, 4)
>>> np.allclose(problems.levy.hvp(x, np.ones(4)), problems.levy.hessian(x) @ np.ones(4))
True
"""

from __future__ import annotations

import math
from typing import Any

from array_api_compat import device as _device

from ._arrays.backend import gaussian_direction, namespace_of

__all__ = [
    "Problem",
    "RotatedQuadratic",
    "ackley",
    "levy",
    "quadratic",
    "rosenbrock",
    "styblinski_tang",
]

_PI = math.pi


class Problem:
    """A test function with its gradient, Hessian-vector products and Hessian norms.

    Subclasses implement ``_value`` (on the last axis), ``gradient``, ``hvp``,
    ``hessian_trace``, ``hessian_frobenius`` and ``minimum``.

    Examples
    --------
    Every problem takes one point or a batch of points in rows, in any array namespace:

    >>> import numpy as np
    >>> from zovh_opt.problems import rosenbrock
    >>> x = np.zeros(4)
    >>> float(rosenbrock(x)), rosenbrock(np.stack([x, x + 1])).tolist()
    (3.0, [3.0, 0.0])
    >>> rosenbrock.gradient(x).tolist()
    [-2.0, -2.0, -2.0, 0.0]
    >>> bool(np.isclose(rosenbrock.hessian_trace(x), np.trace(rosenbrock.hessian(x))))
    True
    """

    name = ""

    def __call__(self, x: Any) -> Any:
        """The value at ``x`` (shape ``(d,)``), or the values of the rows of ``x`` (``(n, d)``)."""
        return self._value(namespace_of(x), x)

    def __repr__(self) -> str:
        return f"<problem {self.name}>"

    def _value(self, xp: Any, x: Any) -> Any:
        raise NotImplementedError

    def gradient(self, x: Any) -> Any:
        """The gradient at ``x``, shape ``(d,)``."""
        raise NotImplementedError

    def hvp(self, x: Any, v: Any) -> Any:
        """The Hessian-vector product :math:`\\nabla^2 f(x)\\, v`, shape ``(d,)``."""
        raise NotImplementedError

    def hessian(self, x: Any) -> Any:
        """The dense Hessian at ``x``, shape ``(d, d)``, from ``d`` Hessian-vector products."""
        xp = namespace_of(x)
        eye = xp.eye(x.shape[0], dtype=x.dtype, device=_device(x))
        return xp.stack([self.hvp(x, eye[i, :]) for i in range(x.shape[0])], axis=1)

    def hessian_trace(self, x: Any) -> Any:
        """:math:`\\mathrm{tr}\\, \\nabla^2 f(x)` as a 0-d array."""
        raise NotImplementedError

    def hessian_frobenius(self, x: Any) -> Any:
        """:math:`\\|\\nabla^2 f(x)\\|_F` as a 0-d array."""
        raise NotImplementedError

    def minimum(self, d: int) -> float:
        """The global minimum value in dimension ``d``."""
        raise NotImplementedError


class _Separable(Problem):
    """A problem whose Hessian is diagonal; subclasses give ``hessian_diagonal``."""

    def hessian_diagonal(self, x: Any) -> Any:
        """The diagonal of the Hessian at ``x``, shape ``(d,)``."""
        raise NotImplementedError

    def hvp(self, x: Any, v: Any) -> Any:
        return self.hessian_diagonal(x) * v

    def hessian_trace(self, x: Any) -> Any:
        return namespace_of(x).sum(self.hessian_diagonal(x))

    def hessian_frobenius(self, x: Any) -> Any:
        return namespace_of(x).linalg.vector_norm(self.hessian_diagonal(x))


class Quadratic(_Separable):
    r"""The isotropic quadratic :math:`\frac12 \sum_i x_i^2` (Appx. F.2).

    Minimum 0 at the origin; the Hessian is the identity.

    Examples
    --------
    >>> import numpy as np
    >>> from zovh_opt.problems import quadratic
    >>> round(float(quadratic(np.zeros(5))), 6), quadratic.minimum(5)
    (0.0, 0.0)
    """

    name = "quadratic"

    def _value(self, xp: Any, x: Any) -> Any:
        return xp.sum(x * x, axis=-1) / 2

    def gradient(self, x: Any) -> Any:
        return x

    def hessian_diagonal(self, x: Any) -> Any:
        return namespace_of(x).ones_like(x)

    def minimum(self, d: int) -> float:
        return 0.0


class RotatedQuadratic(Problem):
    r"""The quadratic :math:`\frac12 x^T A x` with :math:`A = Q \Lambda Q^T` of a given condition.

    The eigenvalues are log-spaced, :math:`\lambda_i = \kappa^{(i-1)/(d-1)}` from 1 to the
    condition number :math:`\kappa`; :math:`Q = P_1 P_2` is a product of two Householder
    reflections :math:`P_j = I - 2 w_j w_j^T / \|w_j\|^2` with Gaussian :math:`w_j` drawn from
    ``seed``, a rotation that mixes every coordinate with every other at :math:`O(d)` cost per
    product. Minimum 0 at the origin.

    Parameters
    ----------
    condition : float
        :math:`\kappa \ge 1`.
    seed : int
        Seed of the rotation; the same seed gives the same matrix on every backend, a GPU's too.

    Examples
    --------
    >>> import numpy as np
    >>> from zovh_opt.problems import RotatedQuadratic
    >>> f = RotatedQuadratic(condition=100.0, seed=0)
    >>> eigenvalues = np.linalg.eigvalsh(f.hessian(np.zeros(6)))
    >>> bool(np.allclose(eigenvalues, 100.0 ** (np.arange(6) / 5)))
    True
    """

    def __init__(self, condition: float = 100.0, seed: int = 0) -> None:
        if not condition >= 1:
            raise ValueError(f"condition must be >= 1, got {condition!r}")
        self.condition = float(condition)
        self.seed = int(seed)
        self.name = f"rotated quadratic (condition {self.condition:g})"
        self._cache: dict[tuple, tuple[Any, Any, Any]] = {}

    def _parts(self, x: Any) -> tuple[Any, Any, Any]:
        """The eigenvalues and the two unit Householder vectors, cached per namespace, device,
        dtype and dimension."""
        xp, d = namespace_of(x), x.shape[-1]
        key = (xp.__name__, str(_device(x)), str(x.dtype), d)
        if key not in self._cache:
            like = x if x.ndim == 1 else x[0, :]
            w = [gaussian_direction(self.seed * 2 + j, like) for j in range(2)]
            w = [wj / xp.linalg.vector_norm(wj) for wj in w]
            i = xp.arange(d, dtype=x.dtype, device=_device(x))
            eig = self.condition ** (i / max(d - 1, 1))
            self._cache[key] = (eig, w[0], w[1])
        return self._cache[key]

    @staticmethod
    def _reflect(xp: Any, w: Any, v: Any) -> Any:
        return v - 2 * xp.sum(v * w, axis=-1, keepdims=True) * w

    def _rotate(self, x: Any, v: Any, *, transpose: bool) -> Any:
        xp = namespace_of(x)
        _, w1, w2 = self._parts(x)
        first, second = (w1, w2) if transpose else (w2, w1)
        return self._reflect(xp, second, self._reflect(xp, first, v))

    def _value(self, xp: Any, x: Any) -> Any:
        eig = self._parts(x)[0]
        z = self._rotate(x, x, transpose=True)
        return xp.sum(eig * z * z, axis=-1) / 2

    def gradient(self, x: Any) -> Any:
        return self.hvp(x, x)

    def hvp(self, x: Any, v: Any) -> Any:
        eig = self._parts(x)[0]
        return self._rotate(x, eig * self._rotate(x, v, transpose=True), transpose=False)

    def hessian_trace(self, x: Any) -> Any:
        return namespace_of(x).sum(self._parts(x)[0])

    def hessian_frobenius(self, x: Any) -> Any:
        return namespace_of(x).linalg.vector_norm(self._parts(x)[0])

    def minimum(self, d: int) -> float:
        return 0.0


class Rosenbrock(Problem):
    r"""Rosenbrock :math:`\sum_{i<d} 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2`; minimum 0 at ones.

    The Hessian is tridiagonal.

    Examples
    --------
    >>> import numpy as np
    >>> from zovh_opt.problems import rosenbrock
    >>> round(float(rosenbrock(np.ones(5))), 6), rosenbrock.minimum(5)
    (0.0, 0.0)
    """

    name = "rosenbrock"

    def _value(self, xp: Any, x: Any) -> Any:
        head, tail = x[..., :-1], x[..., 1:]
        return xp.sum(100.0 * (tail - head**2) ** 2 + (1.0 - head) ** 2, axis=-1)

    def gradient(self, x: Any) -> Any:
        xp = namespace_of(x)
        head, tail = x[:-1], x[1:]
        inner = tail - head**2
        zero = xp.zeros_like(x[:1])
        return xp.concat([-400.0 * head * inner - 2.0 * (1.0 - head), zero]) + xp.concat(
            [zero, 200.0 * inner]
        )

    def _bands(self, x: Any) -> tuple[Any, Any]:
        """The diagonal (``d``) and the off-diagonal (``d - 1``) of the Hessian."""
        xp = namespace_of(x)
        head, tail = x[:-1], x[1:]
        zero = xp.zeros_like(x[:1])
        diag = xp.concat([1200.0 * head**2 - 400.0 * tail + 2.0, zero]) + xp.concat(
            [zero, xp.full_like(tail, 200.0)]
        )
        return diag, -400.0 * head

    def hvp(self, x: Any, v: Any) -> Any:
        xp = namespace_of(x, v)
        diag, off = self._bands(x)
        zero = xp.zeros_like(x[:1])
        return diag * v + xp.concat([off * v[1:], zero]) + xp.concat([zero, off * v[:-1]])

    def hessian_trace(self, x: Any) -> Any:
        return namespace_of(x).sum(self._bands(x)[0])

    def hessian_frobenius(self, x: Any) -> Any:
        xp = namespace_of(x)
        diag, off = self._bands(x)
        return xp.sqrt(xp.sum(diag * diag) + 2 * xp.sum(off * off))

    def minimum(self, d: int) -> float:
        return 0.0


class StyblinskiTang(_Separable):
    r"""Styblinski-Tang :math:`\frac12 \sum_i (x_i^4 - 16 x_i^2 + 5 x_i)`, the standard function.

    The paper's Appx. F.1 prints the linear coefficient as 50; the function in
    the literature, used here, has 5. Minimum :math:`-39.16616570377142\, d` at
    :math:`x_i = -2.903534\ldots`.

    Examples
    --------
    >>> import numpy as np
    >>> from zovh_opt.problems import styblinski_tang
    >>> x = np.full(2, -2.903534)                  # the minimiser, in every coordinate
    >>> round(float(styblinski_tang(x)), 4), round(styblinski_tang.minimum(2), 4)
    (-78.3323, -78.3323)
    """

    name = "styblinski-tang"

    def _value(self, xp: Any, x: Any) -> Any:
        return xp.sum(x**4 - 16.0 * x**2 + 5.0 * x, axis=-1) / 2

    def gradient(self, x: Any) -> Any:
        return 2.0 * x**3 - 16.0 * x + 2.5

    def hessian_diagonal(self, x: Any) -> Any:
        return 6.0 * x**2 - 16.0

    def minimum(self, d: int) -> float:
        return -39.16616570377142 * d


class Levy(_Separable):
    r"""Levy (Appx. F.2); minimum 0 at ones.

    .. math:: \sin^2(\pi w_1) + \sum_{i<d} (w_i - 1)^2 \big(1 + 10 \sin^2(\pi w_i + 1)\big)
              + (w_d - 1)^2 \big(1 + \sin^2(2 \pi w_d)\big), \qquad w_i = 1 + (x_i - 1)/4 .

    Every term depends on one coordinate, so the Hessian is diagonal.

    Examples
    --------
    >>> import numpy as np
    >>> from zovh_opt.problems import levy
    >>> round(float(levy(np.ones(5))), 6), levy.minimum(5)
    (0.0, 0.0)
    """

    name = "levy"

    def _value(self, xp: Any, x: Any) -> Any:
        w = 1.0 + (x - 1.0) / 4.0
        head, last = w[..., :-1], w[..., -1]
        body = (head - 1.0) ** 2 * (1.0 + 10.0 * xp.sin(_PI * head + 1.0) ** 2)
        return (
            xp.sin(_PI * w[..., 0]) ** 2
            + xp.sum(body, axis=-1)
            + (last - 1.0) ** 2 * (1.0 + xp.sin(2 * _PI * last) ** 2)
        )

    def _terms(self, x: Any, order: int) -> Any:
        """First (``order=1``) or second derivatives of the three kinds of terms in ``w``,
        summed per coordinate, times ``dw/dx = 1/4`` to that power."""
        xp = namespace_of(x)
        w = 1.0 + (x - 1.0) / 4.0
        a = w - 1.0
        zero = xp.zeros_like(x[:1])
        s = 1.0 + 10.0 * xp.sin(_PI * w + 1.0) ** 2
        t = 1.0 + xp.sin(2 * _PI * w) ** 2
        if order == 1:
            first = _PI * xp.sin(2 * _PI * w)
            body = 2 * a * s + a**2 * 10.0 * _PI * xp.sin(2 * (_PI * w + 1.0))
            last = 2 * a * t + a**2 * 2 * _PI * xp.sin(4 * _PI * w)
        else:
            first = 2 * _PI**2 * xp.cos(2 * _PI * w)
            body = (
                2 * s
                + 4 * a * 10.0 * _PI * xp.sin(2 * (_PI * w + 1.0))
                + a**2 * 20.0 * _PI**2 * xp.cos(2 * (_PI * w + 1.0))
            )
            last = (
                2 * t
                + 4 * a * 2 * _PI * xp.sin(4 * _PI * w)
                + a**2 * 8 * _PI**2 * xp.cos(4 * _PI * w)
            )
        total = (
            xp.concat([first[:1], xp.zeros_like(x[1:])])
            + xp.concat([body[:-1], zero])
            + xp.concat([xp.zeros_like(x[:-1]), last[-1:]])
        )
        return total / 4.0**order

    def gradient(self, x: Any) -> Any:
        return self._terms(x, 1)

    def hessian_diagonal(self, x: Any) -> Any:
        return self._terms(x, 2)

    def minimum(self, d: int) -> float:
        return 0.0


class Ackley(Problem):
    r"""Ackley (Appx. F.2); minimum 0 at the origin.

    .. math:: -20 \exp\Big(-0.2 \sqrt{\tfrac1d \textstyle\sum_i x_i^2}\Big)
              - \exp\Big(\tfrac1d \textstyle\sum_i \cos(2\pi x_i)\Big) + 20 + e .

    Its Hessian is a diagonal plus a rank-two matrix,
    :math:`\alpha I + \mathrm{diag}(\delta) + \beta x x^T + \gamma q q^T` with
    :math:`q = -2\pi \sin(2\pi x)`; it is undefined at the origin itself.

    Examples
    --------
    >>> import numpy as np
    >>> from zovh_opt.problems import ackley
    >>> round(float(ackley(np.zeros(5))), 6), ackley.minimum(5)
    (0.0, 0.0)
    """

    name = "ackley"

    def _value(self, xp: Any, x: Any) -> Any:
        d = x.shape[-1]
        r = xp.sqrt(xp.sum(x * x, axis=-1) / d)
        c = xp.sum(xp.cos(2 * _PI * x), axis=-1) / d
        return -20.0 * xp.exp(-0.2 * r) - xp.exp(c) + 20.0 + math.e

    def _parts(self, x: Any) -> tuple[Any, Any, Any, Any]:
        """``alpha + delta`` (the diagonal), ``beta``, ``gamma``, ``q`` of the Hessian."""
        xp = namespace_of(x)
        d = x.shape[0]
        r = xp.sqrt(xp.sum(x * x) / d)
        e1 = xp.exp(-0.2 * r)
        E = xp.exp(xp.sum(xp.cos(2 * _PI * x)) / d)
        f1, f2 = 4.0 * e1, -0.8 * e1  # first and second derivatives of -20 exp(-0.2 r) in r
        alpha = f1 / (d * r)
        beta = (f2 - f1 / r) / (d * r) ** 2
        delta = 4 * _PI**2 * E * xp.cos(2 * _PI * x) / d
        q = -2 * _PI * xp.sin(2 * _PI * x)
        return alpha + delta, beta, -E / d**2, q

    def gradient(self, x: Any) -> Any:
        xp = namespace_of(x)
        d = x.shape[0]
        r = xp.sqrt(xp.sum(x * x) / d)
        E = xp.exp(xp.sum(xp.cos(2 * _PI * x)) / d)
        return 4.0 * xp.exp(-0.2 * r) * x / (d * r) + 2 * _PI * E * xp.sin(2 * _PI * x) / d

    def hvp(self, x: Any, v: Any) -> Any:
        xp = namespace_of(x, v)
        diag, beta, gamma, q = self._parts(x)
        return diag * v + beta * xp.sum(x * v) * x + gamma * xp.sum(q * v) * q

    def hessian_trace(self, x: Any) -> Any:
        xp = namespace_of(x)
        diag, beta, gamma, q = self._parts(x)
        return xp.sum(diag) + beta * xp.sum(x * x) + gamma * xp.sum(q * q)

    def hessian_frobenius(self, x: Any) -> Any:
        xp = namespace_of(x)
        diag, beta, gamma, q = self._parts(x)
        xx, qq, xq = xp.sum(x * x), xp.sum(q * q), xp.sum(x * q)
        low_rank = beta**2 * xx**2 + gamma**2 * qq**2 + 2 * beta * gamma * xq**2
        cross = beta * xp.sum(diag * x * x) + gamma * xp.sum(diag * q * q)
        return xp.sqrt(xp.sum(diag * diag) + 2 * cross + low_rank)

    def minimum(self, d: int) -> float:
        return 0.0


quadratic = Quadratic()
rosenbrock = Rosenbrock()
levy = Levy()
ackley = Ackley()
styblinski_tang = StyblinskiTang()
