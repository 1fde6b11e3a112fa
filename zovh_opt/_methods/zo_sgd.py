"""Vanilla zeroth-order SGD with the anchor baseline (Nesterov and Spokoiny, 2017)."""

from __future__ import annotations

from typing import Any

from .._backend import gaussian_direction
from .._history import DirectionRows
from .._options import Option, integer_at_least
from ._base import AskTellMethod


class ZOSGD(AskTellMethod):
    r"""Gradient step with the anchor-baseline estimate, ``K + 1`` evaluations per iteration.

    .. math:: \hat\nabla F = \frac1K \sum_{k=1}^K \frac{f(x + \mu u_k) - f(x)}{\mu} u_k,
              \qquad x \leftarrow x - \eta \hat\nabla F .

    The paper's "Vanilla ZOO" baseline (Appx. ``synthetic-setup``).
    """

    name = "zo-sgd"
    options = {
        **AskTellMethod.options,
        "n_directions": Option(3, integer_at_least(1)),
    }

    def __init__(self, x0: Any, *, rng: Any = None, **options: Any) -> None:
        super().__init__(x0, rng=rng, **options)
        self._jac = None

    @property
    def points_per_iteration(self) -> int:
        return self.n_directions + 1

    def _ask(self) -> tuple[Any, Any]:
        seeds = self.seeds.seeds(self.n_directions)
        rows = [gaussian_direction(s, self.x, self.seeds.native) for s in seeds]
        points = self._points(self.x, rows, self.smoothing, with_center=True)
        return points, DirectionRows(seeds, rows, self.x, self.seeds.native)

    def _tell(self, rows: Any, values: Any) -> None:
        coef = (values[1:] - values[0]) / (self.smoothing * self.n_directions)
        self._jac = rows.combine(coef)
        self.x = self.x - self.learning_rate * self._jac

    def restart(self, x: Any, learning_rate: float) -> None:
        super().restart(x, learning_rate)
        self._jac = None

    @property
    def step_norm(self) -> float:
        if self._jac is None:
            return float("nan")
        return self.learning_rate * float(self.xp.linalg.vector_norm(self._jac))

    def estimates(self) -> dict[str, Any]:
        """``jac``: the latest anchor-baseline gradient estimate."""
        return {} if self._jac is None else {"jac": self._jac}
