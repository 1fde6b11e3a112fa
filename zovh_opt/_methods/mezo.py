"""MeZO: zeroth-order SGD with two-point central differences (Malladi et al., 2023)."""

from __future__ import annotations

from typing import Any

from ._base import MAX_DIRECTIONS, GradientStepMethod
from .option_specs import Option, integer_between


class MeZO(GradientStepMethod):
    r"""Gradient step with the two-point central-difference estimate, ``2K`` evaluations.

    .. math:: \hat\nabla F = \frac1K \sum_{k=1}^K
              \frac{f(x + \mu u_k) - f(x - \mu u_k)}{2\mu} u_k,
              \qquad x \leftarrow x - \eta \hat\nabla F .

    The default ``K = 1`` is MeZO's SPSA step (Malladi, Gao, Nichani, Damian, Lee, Chen and
    Arora, *Fine-Tuning Language Models with Just Forward Passes*, NeurIPS 2023); the paper
    compares with it in Appx. F.4. ``ask`` returns the ``K`` points
    ``x + mu u_k`` followed by the ``K`` points ``x - mu u_k``.

    Examples
    --------
    >>> import numpy as np
    >>> from zovh_opt import MeZO
    >>> from zovh_opt.problems import quadratic
    >>> opt = MeZO(np.ones(100), rng=0, learning_rate=1e-2)
    >>> for _ in range(500):
    ...     opt.tell(quadratic(opt.ask()))
    >>> opt.nfev, bool(quadratic(opt.x) < quadratic(np.ones(100)) / 2)
    (1000, True)
    """

    name = "mezo"
    options = {
        **GradientStepMethod.options,
        "n_directions": Option(1, integer_between(1, MAX_DIRECTIONS)),
    }

    @property
    def points_per_iteration(self) -> int:
        return 2 * self.n_directions

    def _prepare(self) -> None:
        self._draw(self.n_directions)

    def _layout(self) -> tuple[Any, tuple[float, ...], bool]:
        return self._rows[1], (self.smoothing, -self.smoothing), False

    def _tell(self, values: Any, *, direction: bool = True) -> None:
        if not direction:
            return
        K = self.n_directions
        coef = (values[:K] - values[K:]) / (2 * self.smoothing * K)
        self._direction = self.space.from_host(coef) @ self._rows[1]
