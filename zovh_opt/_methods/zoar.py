"""ZoAR: averaged baseline and query reuse for the gradient, plain gradient steps."""

from __future__ import annotations

from typing import Any

from .. import estimators
from ._base import MAX_DIRECTIONS, MAX_HISTORY, GradientStepMethod, ReusesQueries
from .history import STORAGES, QueryHistory
from .option_specs import Option, integer_between, one_of


class ZOAR(ReusesQueries, GradientStepMethod):
    r"""Gradient step with the averaged-baseline estimate over the last ``N`` iterations' queries.

    .. math:: \hat\nabla F = \frac{1}{NK-1} \sum_{i,k=1}^{N,K}
              \frac{y_{t-i,k} - \hat b_t}{\mu} u_{t-i,k}, \qquad
              \hat b_t = \frac{1}{NK} \sum_{i,k} y_{t-i,k}, \qquad
              x \leftarrow x - \eta \hat\nabla F ,

    eq. (35) of the paper; ``K`` evaluations per iteration. This is ZoVH's
    gradient without the curvature correction; with ``K = 1`` the first iteration only fills the
    history (Qiu, Xie, Yan, Yang and Shu, *Zeroth-Order
    Optimization is Secretly Single-Step Policy Optimization*, arXiv:2506.14460, 2025).

    Examples
    --------
    >>> import numpy as np
    >>> from zovh_opt import ZOAR
    >>> from zovh_opt.problems import quadratic
    >>> opt = ZOAR(np.ones(100), rng=0, learning_rate=1e-2, history=4)
    >>> for _ in range(500):
    ...     opt.tell(quadratic(opt.ask()))
    >>> bool(quadratic(opt.x) < quadratic(np.ones(100)) / 2), opt.nfev
    (True, 1500)
    """

    name = "zoar"
    options = {
        **GradientStepMethod.options,
        "n_directions": Option(3, integer_between(1, MAX_DIRECTIONS)),
        "history": Option(4, integer_between(1, MAX_HISTORY)),
        "directions": Option("vectors", one_of(*STORAGES)),
    }

    def __init__(self, x0: Any, *, rng: Any = None, **options: Any) -> None:
        super().__init__(x0, rng=rng, **options)
        if self.n_directions * self.history < 2:
            raise ValueError(
                "zoar needs n_directions * history >= 2 queries for the averaged baseline, got "
                f"{self.n_directions} * {self.history}"
            )
        self.queries = QueryHistory(
            self.space,
            self.source,
            self.history,
            self.n_directions,
            self.directions,
            track_gram=False,
        )

    @property
    def points_per_iteration(self) -> int:
        return self.n_directions

    def _tell(self, values: Any, *, direction: bool = True) -> None:
        self.queries.push(values)
        if not direction:
            return
        y, mu = self.queries.values(), self.smoothing
        if y.shape[0] < 2:  # K = 1: the first iteration has no baseline to compare with
            self._direction = None
            return
        coef = mu * estimators.centred_values(y, mu) / (y.shape[0] - 1)
        self._direction = self.queries.combine(coef)
