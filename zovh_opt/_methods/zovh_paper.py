"""ZoVH's Algorithm 1 (``curvature="off"``): the paper's iteration, exactly."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from scipy.optimize import OptimizeWarning

from .. import estimators
from ..tuning import active
from ._base import PAPER_REGULARIZATION, ReusesQueries
from .history import QueryHistory
from .zovh import ZoVH

# n_directions="auto" of Algorithm 1 (Appx. F.2: K = 3, N = 4)
PAPER_DIRECTIONS, PAPER_HISTORY = 3, 4


class PaperZoVH(ReusesQueries, ZoVH, curvature="off"):
    r"""Algorithm 1 (``curvature="off"``): ``x <- x - learning_rate * p``, ``p`` the ZoVH
    Newton direction.

    Each iteration draws ``K`` Gaussian directions, evaluates ``f(x + mu * u_k)``, pushes the
    queries into a FIFO history of the last ``N`` iterations and computes the bias-corrected
    inverse-Hessian-gradient product from all ``M = N K`` kept queries (eq.
    (16) for ``N = 1``, eq. (122) for ``N > 1``).
    With ``product="decoupled"`` (Sec. 5.2, Regime 1) the Hessian and the gradient use two
    independent sets of ``K`` directions, ``2K`` evaluations per iteration.

    The optimizer's own work per iteration is ``O(M d)``: the new block's inner products with
    the kept directions and the combination ``p = sum_m c_m u_m``. On the CPU both are one
    pass over the history: the step of a ``tell`` is formed in the next ``ask``, as it draws
    the next block (reading `x` in between forms it then, with the same bits).

    A step more than ``max_amplification`` (10) times longer than the plain gradient step
    ``g / lambda`` of the same values comes from a Woodbury denominator near zero (a sampled
    direction whose curvature estimate is close to ``-lambda``); it is not taken, the iterate
    stays, and ``rejected_steps`` counts it. Healthy runs stay below 1.2 (Rosenbrock and a
    quadratic in ``d = 1000``, 36000 iterations). A smaller learning rate would not remove such
    a pole, which is why the step is rejected rather than the rate cut.

    The diagonal inverse (eq. (15)) treats the ``M`` directions as orthogonal,
    which needs ``d >> M``. On a quadratic the step is then about ``(1 - M/d) g / lambda`` away
    from the curvature correction, so for ``d < 2M`` it is slowed more than twofold and for
    ``d < M`` it points uphill; constructing one warns (``OptimizeWarning``).

    Examples
    --------
    The paper's iteration with nothing around it: no budget, no safeguard, no best point
    (`zovh_opt.Optimizer` adds those).

    >>> import numpy as np
    >>> from zovh_opt import ZoVH
    >>> from zovh_opt.problems import rosenbrock
    >>> x0 = np.random.default_rng(1).standard_normal(1000)
    >>> opt = ZoVH(x0, rng=0, learning_rate=1e-7, history=4)   # a float rate: curvature="off"
    >>> type(opt).__name__
    'PaperZoVH'
    >>> for _ in range(300):
    ...     opt.tell(rosenbrock(opt.ask()))      # K = 3 points per ask, evaluated in a batch
    >>> opt.nit, opt.nfev, bool(rosenbrock(opt.x) < rosenbrock(x0) / 2)
    (300, 900, True)
    >>> opt.estimates()["hess_inv"]            # the latest (H + lambda I)^-1 estimate
    <1000x1000 InverseHessianOperator with dtype=float64>
    """

    max_amplification = 10.0
    iteration = "Algorithm 1 (curvature='off')"
    max_queries = 4096  # M = N K: the host algebra is O(M^2) per iteration, O(M^3) if exact

    def __init__(self, x0: Any, *, rng: Any = None, **options: Any) -> None:
        super().__init__(x0, rng=rng, **options)
        if self.curvature == "diagonal":
            raise ValueError("PaperZoVH is the iteration of curvature='off'")
        self.curvature = "off"
        if self.n_directions == "auto":
            self.n_directions = PAPER_DIRECTIONS
        if self.history == "auto":
            self.history = PAPER_HISTORY
        if self.product == "shared" and self.n_directions < 3:
            raise ValueError(
                "n_directions must be >= 3 for product='shared' (the leave-one-out correction "
                f"divides by M - 2), got {self.n_directions}"
            )
        M = self.history * self.points_per_iteration
        if M > self.max_queries:
            raise ValueError(
                f"the history must keep at most {self.max_queries} queries (the Gram matrix of "
                f"the kept queries is M x M on the host), got history * points per iteration "
                f"= {self.history} * {self.points_per_iteration} = {M}"
            )
        self._exact = self.inverse == "exact"
        self._auto_lambda = self.regularization == "auto" and self.control is not None
        if self.regularization == "auto":  # the lambda of the latest step when it adapts
            self.regularization = math.nan if self._auto_lambda else PAPER_REGULARIZATION
        # of the latest direction, in history order (host); used by the step of the same tell
        self._coefficients = None
        if self.directions == "auto":  # the paper's iteration holds N K directions: 16 d
            self.directions = "vectors"
        self.queries = QueryHistory(
            self.space, self.source, self.history, self.points_per_iteration, self.directions
        )
        self._step_sq = None  # |p|^2 of the latest step taken
        self.rejected_steps = 0
        d = self.space.dim
        if not self._exact and d < 2 * M:
            warnings.warn(
                f"ZoVH's diagonal inverse needs d >> history * n_directions, here d={d} and "
                f"{M}: its steps are slowed or point uphill (see ZoVH). For small problems use "
                "inverse='exact', a shorter history, or method='zo-sgd'.",
                OptimizeWarning,
                stacklevel=5,
            )

    # On the CPU a step is formed lazily, in the next ask's pass over the directions
    # (`QueryHistory.step_and_new_block`; with "seeds" storage that pass draws each kept block
    # once instead of twice): `_x` reads the iterate, forming a deferred step first (the same
    # bits), and writing it drops the deferred step.

    @property
    def _x(self) -> Any:
        if self._deferred is not None:
            self._iterate = self.queries.step(*self._take_deferred())
        return self._iterate

    @_x.setter
    def _x(self, value: Any) -> None:
        self._deferred = None
        self._iterate = value

    def _take_deferred(self) -> tuple[np.ndarray, float, Any]:
        """The deferred step's coefficients, scale and base point; none is deferred after."""
        deferred, self._deferred = self._deferred, None
        return deferred

    def __getstate__(self) -> dict[str, Any]:
        self._settle()  # a pickle holds no deferred step
        return super().__getstate__()

    def _prepare(self) -> None:
        if self._deferred is None:
            super()._prepare()
            return
        self._iterate = self.queries.step_and_new_block(*self._take_deferred())

    def _settle(self) -> None:
        """Form a deferred step now (the kept queries it combines are about to go)."""
        self._x  # noqa: B018

    def _set_smoothing(self, smoothing: float) -> None:
        self._settle()
        super()._set_smoothing(smoothing)

    def _discard_all(self) -> None:
        self._settle()
        super()._discard_all()
        self._step_sq, self._coefficients = None, None

    def state(self) -> dict[str, Any]:
        return {**super().state(), "step_sq": self._step_sq, "regularization": self.regularization}

    def load_state(self, state: dict[str, Any]) -> None:
        super().load_state(state)
        step_sq = state["step_sq"]
        self._step_sq = None if step_sq is None else float(step_sq)
        self.regularization = float(state["regularization"])

    @property
    def direction_norm(self) -> float:
        """``sqrt(c^T G c)``: read from the Gram matrix, no pass over ``d``."""
        return 0.0 if self._step_sq is None else self._step_sq**0.5

    @property
    def points_per_iteration(self) -> int:
        return self.n_directions * (2 if self.product == "decoupled" else 1)

    def _tell(self, values: Any, *, direction: bool = True) -> None:
        # the coefficients are O(M^2) host algebra; the O(M d) step waits for `_move`
        self.queries.push(values)
        gram = self.queries.gram()
        c, plain = self._step_coefficients(gram, self.queries.values())
        # |p| / |g / lam| from the Gram matrix: (H + lam I)^-1 never lengthens g / lam when the
        # curvature estimate is positive, so a large ratio means a Woodbury denominator near 0
        step_sq, plain_sq = float(c @ gram @ c), float(plain @ gram @ plain)
        self.amplification = (step_sq / plain_sq) ** 0.5 if plain_sq > 0 else 1.0
        if self.amplification > self.max_amplification:
            self.rejected_steps += 1
            self._step_sq, self._coefficients = None, None
            return
        self._step_sq, self._coefficients = step_sq, c

    def _move(self, learning_rate: float) -> None:
        if self._coefficients is None:
            return
        x = self._x
        if self.queries.fuses_steps:  # formed in the next ask (or when `_x` is read)
            self._deferred = (self._coefficients, -learning_rate, x)
        else:
            self._x = self.queries.step(self._coefficients, -learning_rate, x)

    def _regularization(self, sq_norms: np.ndarray, nu: np.ndarray) -> float:
        """lambda: the option's, or with the step rule "auto" ``POLE_MARGIN`` times the largest
        ``|nu_m| |u_m|^2 / (M - 1)`` (1 where every ``nu_m`` is 0: then there is no step)."""
        if self._auto_lambda:
            largest = float(np.max(np.abs(nu) * sq_norms)) / (nu.shape[0] - 1)
            self.regularization = active().method.POLE_MARGIN * largest if largest > 0 else 1.0
        return self.regularization

    def _step_coefficients(self, gram: np.ndarray, y: np.ndarray) -> tuple[Any, Any]:
        """Coefficients of the step in the kept directions, in history order, and those of the
        plain gradient step ``g / lambda`` from the same values (host float64)."""
        mu = self.smoothing
        if self.product == "shared":
            nu = estimators.centred_values(y, mu)
            sq_norms = gram.diagonal()
            lam = self._regularization(sq_norms, nu)
            c = estimators.newton_coefficients_from_centred(
                gram, nu, mu, lam, exact=self._exact, sq_norms=sq_norms
            )
            return c, nu * (mu / (lam * (y.shape[0] - 1)))
        hess, grad = self._roles()
        order = np.concatenate([hess, grad])
        h = np.ix_(hess, hess)
        lam = self._regularization(gram[h].diagonal(), estimators.centred_values(y[hess], mu))
        c = estimators.decoupled_coefficients(
            gram[np.ix_(order, order)], y[hess], y[grad], mu, lam, exact=self._exact
        )
        plain = np.concatenate([np.zeros(len(hess)), c[len(hess) :]])
        back = np.argsort(order)
        return c[back], plain[back]

    def _roles(self) -> tuple[np.ndarray, np.ndarray]:
        """History positions of the Hessian and of the gradient directions (decoupled)."""
        K, M = self.n_directions, len(self.queries)
        every = np.arange(M)
        if self.product == "shared":
            return every, every
        return every[every % (2 * K) < K], every[every % (2 * K) >= K]

    def estimates(self) -> dict[str, Any]:
        """``jac``: gradient estimate (eq. (35)); ``hess_inv``: the inverse operator.

        Both come from the queries in the history. ``hess_inv`` keeps the block numbers of its
        directions and draws them again when applied, so it stays valid as the run goes on.
        """
        if len(self.queries) == 0:
            return {}
        mu, lam = self.smoothing, self.regularization
        y, gram = self.queries.values(), self.queries.gram()
        hess, grad = self._roles()
        coef = np.zeros(y.shape[0])
        coef[grad] = mu * estimators.centred_values(y[grad], mu) / (len(grad) - 1)
        jac = self.space.to_user(self.queries.combine(coef))
        nu = estimators.centred_values(y[hess], mu)
        C = estimators.inverse_correction(gram[np.ix_(hess, hess)], nu, lam, exact=self._exact)
        K = self.n_directions
        rows = self.queries.snapshot(slice(0, K) if self.product == "decoupled" else slice(None))
        correction = self.space.to_user(self.space.from_host(C))
        return {"jac": jac, "hess_inv": estimators.InverseHessianOperator(rows, correction, lam)}
