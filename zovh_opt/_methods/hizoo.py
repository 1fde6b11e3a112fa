"""HiZOO: zeroth-order steps preconditioned by a diagonal Hessian estimate (Zhao et al., 2025)."""

from __future__ import annotations

from typing import Any

from ._base import MAX_DIRECTIONS, GradientStepMethod
from .option_specs import Option, fraction, integer_between


class HiZOO(GradientStepMethod):
    r"""Diagonal-Hessian-preconditioned ZO steps, ``2K + 1`` evaluations per iteration.

    HiZOO keeps a diagonal Hessian estimate :math:`\Sigma` (initially :math:`I`) and perturbs
    along :math:`\Sigma^{-1/2} u_k`. With :math:`y^\pm_k = f(x \pm \mu \Sigma^{-1/2} u_k)` and
    :math:`y_0 = f(x)`, one iteration is

    .. math::
        \hat\Sigma &= \frac{1}{2K} \sum_{k=1}^K \frac{y^+_k - 2 y_0 + y^-_k}{\mu^2}\,
                      \Sigma^{1/2} \mathrm{diag}(u_k u_k^T) \Sigma^{1/2},
        \qquad \Sigma \leftarrow (1 - \alpha) \Sigma + \alpha |\hat\Sigma|, \\
        x &\leftarrow x - \eta\, \Sigma^{-1/2} \frac1K \sum_{k=1}^K
             \frac{y^+_k - y^-_k}{2\mu} u_k ,

    the diagonal of the central-difference estimator (eq. (5)) taken in the
    preconditioned coordinates and mapped back, as in the paper's Table 2
    (Zhao, Dang, Ye, Dai, Qian and Tsang, *Second-Order Fine-Tuning without Pain for LLMs: A
    Hessian Informed Zeroth-Order Optimizer*, ICLR 2025). The default ``K = 1`` gives HiZOO's
    three evaluations per iteration; ``hessian_smoothing`` is :math:`\alpha`, 1e-8 in all of
    the paper's experiments. ``ask`` returns ``x``, then the ``K`` points ``+``, then the ``K``
    points ``-``. ``hess_diag`` is the current :math:`\Sigma`.

    Examples
    --------
    >>> import numpy as np
    >>> from zovh_opt import HiZOO
    >>> from zovh_opt.problems import quadratic
    >>> opt = HiZOO(np.ones(100), rng=0, learning_rate=1e-2, hessian_smoothing=0.1)
    >>> for _ in range(500):
    ...     opt.tell(quadratic(opt.ask()))
    >>> opt.points_per_iteration, bool(quadratic(opt.x) < quadratic(np.ones(100)))
    (3, True)
    >>> opt.hess_diag.shape          # the running diagonal Hessian estimate
    (100,)
    """

    name = "hizoo"
    direction_is_gradient = False  # the step is preconditioned
    options = {
        **GradientStepMethod.options,
        "n_directions": Option(1, integer_between(1, MAX_DIRECTIONS)),
        "hessian_smoothing": Option(1e-8, fraction),
    }

    def __init__(self, x0: Any, *, rng: Any = None, **options: Any) -> None:
        super().__init__(x0, rng=rng, **options)
        self._hess_diag = self.xp.ones_like(self._x)
        self._scaled = None

    def restart(self, x: Any, learning_rate: float) -> None:
        super().restart(x, learning_rate)
        self._hess_diag = self.xp.ones_like(self._x)

    @property
    def hess_diag(self) -> Any:
        """The running diagonal Hessian estimate :math:`\\Sigma`, shape ``(d,)``."""
        return self.space.to_user(self._hess_diag)

    @property
    def points_per_iteration(self) -> int:
        return 2 * self.n_directions + 1

    def state(self) -> dict[str, Any]:
        return {**super().state(), "hess_diag": self._hess_diag}

    def load_state(self, state: dict[str, Any]) -> None:
        super().load_state(state)
        self._hess_diag = self.vector(state["hess_diag"])
        self._scaled = None

    def discard(self) -> None:
        super().discard()
        self._scaled = None

    def _prepare(self) -> None:
        self._draw(self.n_directions)
        self._scaled = None

    def _layout(self) -> tuple[Any, tuple[float, ...], bool]:
        if self._scaled is None:  # kept until the tell: every pending point reads it
            self._scaled = self._rows[1] / self.xp.sqrt(self._hess_diag)
        return self._scaled, (self.smoothing, -self.smoothing), True

    def _tell(self, values: Any, *, direction: bool = True) -> None:
        rows, self._scaled = self._rows[1], None
        xp, K, mu = self.xp, self.n_directions, self.smoothing
        y0, y_plus, y_minus = values[0], values[1 : K + 1], values[K + 1 :]
        curvature = (y_plus - 2 * y0 + y_minus) / (2 * K) / mu / mu
        estimate = self._hess_diag * (self.space.from_host(curvature) @ (rows * rows))
        alpha = self.hessian_smoothing
        self._hess_diag = (1 - alpha) * self._hess_diag + alpha * xp.abs(estimate)
        if not direction:
            return
        gradient = self.space.from_host((y_plus - y_minus) / (2 * mu * K)) @ rows
        self._direction = gradient / xp.sqrt(self._hess_diag)
