"""Test functions for benchmarks and examples, written against the array API.

Each takes a one-dimensional array and returns a 0-d array of its namespace, so the same
function runs on NumPy, PyTorch or CuPy inputs.
"""

from __future__ import annotations

from typing import Any

from ._backend import namespace_of

__all__ = ["quadratic", "rosenbrock", "rosenbrock_gradient"]


def quadratic(x: Any) -> Any:
    r"""Isotropic quadratic :math:`\frac12 \sum_i x_i^2`; minimum 0 at the origin."""
    xp = namespace_of(x)
    return xp.sum(x * x) / 2


def rosenbrock(x: Any) -> Any:
    r"""Rosenbrock :math:`\sum_{i<d} 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2`; minimum 0 at ones.

    With a two-dimensional input ``(n, d)`` it returns the ``n`` values of the rows.
    """
    xp = namespace_of(x)
    head, tail = x[..., :-1], x[..., 1:]
    return xp.sum(100.0 * (tail - head**2) ** 2 + (1.0 - head) ** 2, axis=-1)


def rosenbrock_gradient(x: Any) -> Any:
    """Analytic gradient of `rosenbrock` for a one-dimensional ``x``."""
    xp = namespace_of(x)
    head, tail = x[:-1], x[1:]
    inner = tail - head**2
    g = xp.zeros_like(x)
    g[:-1] = -400.0 * head * inner - 2.0 * (1.0 - head)
    g[1:] = g[1:] + 200.0 * inner
    return g
