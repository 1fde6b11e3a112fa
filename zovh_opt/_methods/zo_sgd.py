"""Vanilla zeroth-order SGD with the anchor baseline (Nesterov and Spokoiny, 2017)."""

from __future__ import annotations

from typing import Any

from ._base import MAX_DIRECTIONS, GradientStepMethod
from .option_specs import Option, integer_between


class ZOSGD(GradientStepMethod):
    r"""Gradient step with the anchor-baseline estimate, ``K + 1`` evaluations per iteration.

    .. math:: \hat\nabla F = \frac1K \sum_{k=1}^K \frac{f(x + \mu u_k) - f(x)}{\mu} u_k,
              \qquad x \leftarrow x - \eta \hat\nabla F .

    The paper's "Vanilla ZOO" baseline (Appx. F.2; Nesterov and Spokoiny,
    *Random Gradient-Free Minimization of Convex Functions*, Found. Comput. Math. 17, 2017).

    Examples
    --------
    >>> import numpy as np
    >>> from zovh_opt import ZOSGD
    >>> from zovh_opt.problems import quadratic
    >>> opt = ZOSGD(np.ones(100), rng=0, learning_rate=1e-3)
    >>> points = opt.ask()            # f(x) first, then the K = 3 queries
    >>> points.shape
    (4, 100)
    >>> opt.tell(quadratic(points))
    >>> for _ in range(499):
    ...     opt.tell(quadratic(opt.ask()))
    >>> bool(quadratic(opt.x) < quadratic(np.ones(100))), opt.nfev
    (True, 2000)
    """

    name = "zo-sgd"
    options = {
        **GradientStepMethod.options,
        "n_directions": Option(3, integer_between(1, MAX_DIRECTIONS)),
    }

    @property
    def points_per_iteration(self) -> int:
        return self.n_directions + 1

    def _prepare(self) -> None:
        self._draw(self.n_directions)

    def _layout(self) -> tuple[Any, tuple[float, ...], bool]:
        return self._rows[1], (self.smoothing,), True

    def _tell(self, values: Any, *, direction: bool = True) -> None:
        if not direction:
            return
        coef = (values[1:] - values[0]) / (self.smoothing * self.n_directions)
        self._direction = self.space.from_host(coef) @ self._rows[1]
