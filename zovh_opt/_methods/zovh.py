"""ZoVH's common part: its options, the choice of its iteration, and the budget rule.

`ZoVH` is the method the registry names. Its iterations subclass it and register under the
value of ``curvature`` they run: `PaperZoVH` (``zovh_paper``, ``"off"``), Algorithm 1 of the
paper; `FullCurvatureZoVH` (``zovh_full``, ``"full"``) and `PreconditionedZoVH`
(``zovh_preconditioned``, ``"diagonal"``), which accumulate the paper's Hessian estimates into
a full or a diagonal curvature model. `iteration_for` is the choice, a plain function of the
options and the dimension (the budget rule, `curvature_for_budget`, has set
``curvature="off"`` for a short budget first); this module imports no iteration: they import
it."""

from __future__ import annotations

import math
from typing import Any, ClassVar

from ..tuning import active
from ._base import MAX_DIRECTIONS, MAX_HISTORY, AskTellMethod
from .history import STORAGES
from .option_specs import Option, integer_or_auto, one_of, positive_or_auto

# the options that only the paper's iteration has
PAPER_ONLY = ("product", "inverse", "regularization")


class ZoVH(AskTellMethod):
    r"""ZoVH: zeroth-order steps that use curvature (`zovh_opt.minimize`'s default method).

    ``ZoVH(x0, ...)`` builds one of three iterations, by the option ``curvature``:

    - ``"full"`` (`FullCurvatureZoVH`): a symmetric positive definite ``d x d`` model of the
      Hessian, learned across iterations from the paper's Hessian estimator (eq. (9)) on
      antithetic pairs, whitens the sampling and turns the gradient estimate into a Newton
      step. ``n_directions`` is the number of pairs ``P`` (``2 P`` evaluations per
      iteration); the model costs :math:`O(P d^2)` per iteration.
    - ``"diagonal"`` (`PreconditionedZoVH`): the same with a diagonal model, :math:`O(P d)`.
    - ``"off"`` (`PaperZoVH`): the paper's Algorithm 1, ``x <- x - learning_rate * p`` with the
      Woodbury product ``p`` of eq. (16) (eq. (122) with query reuse).

    ``"auto"`` (the default) is ``"full"`` up to ``d = FULL_MODEL_MAX_DIMENSION`` and
    ``"diagonal"`` above, with the step rule ``learning_rate="auto"``, and ``"off"`` with a
    float learning rate: a float rate runs the paper's algorithm exactly.
    `zovh_opt.minimize` and `zovh_opt.Optimizer`, which know the budget, also take ``"off"``
    for ``"auto"`` when ``maxfev`` is below ``30 d`` (`options_for_budget`).
    All are instances of this class. ``history`` is the number of iterations whose queries
    a step reuses (``"auto"``: 4). The options ``regularization``, ``product`` and
    ``inverse`` belong to the paper's iteration; with a curvature model they raise
    ``ValueError``.

    Examples
    --------
    >>> import numpy as np
    >>> from zovh_opt import ZoVH
    >>> h = np.logspace(0, 3, 200)                      # an ill-conditioned diagonal quadratic
    >>> f = lambda X: 0.5 * (X * X) @ h
    >>> opt = ZoVH(np.ones(200), rng=0)                 # d = 200: the diagonal model
    >>> type(opt).__name__, opt.points_per_iteration    # P = 9 antithetic pairs
    ('PreconditionedZoVH', 18)
    >>> for _ in range(2000):
    ...     opt.tell(f(opt.ask()))
    >>> learned = opt.estimates()["hess_inv"].diagonal()  # the model's diag(1 / h)
    >>> bool(np.corrcoef(np.log(learned), -np.log(h))[0, 1] > 0.9)
    True
    """

    name = "zovh"
    options = {
        **AskTellMethod.options,
        "curvature": Option("auto", one_of("auto", "full", "diagonal", "off")),
        "n_directions": Option("auto", integer_or_auto(2, MAX_DIRECTIONS)),
        "history": Option("auto", integer_or_auto(1, MAX_HISTORY)),
        "regularization": Option("auto", positive_or_auto),
        "product": Option("shared", one_of("shared", "decoupled")),
        "inverse": Option("diagonal", one_of("diagonal", "exact")),
        "directions": Option("auto", one_of("auto", *STORAGES)),
    }

    # the iterations, by the value of ``curvature`` they run (filled by their subclassing)
    iterations: ClassVar[dict[str, type[ZoVH]]] = {}

    def __init_subclass__(cls, curvature: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if curvature is not None:
            ZoVH.iterations[curvature] = cls

    def __new__(cls, *args: Any, **options: Any) -> ZoVH:
        # ``ZoVH(x0, ...)``, the public constructor, builds the iteration the options ask for
        # (`iteration_for`); the driver calls that function itself and builds the class
        if cls is ZoVH:
            cls = iteration_for(options, _dimension(args[0] if args else options.get("x0")))
        return super().__new__(cls)

    @classmethod
    def options_for_budget(
        cls, options: dict[str, Any], dim: int, maxfev: int | None
    ) -> dict[str, Any]:
        """``curvature="auto"`` resolved for a run of ``maxfev`` evaluations in ``dim``
        dimensions: ``"off"`` below ``30 d`` evaluations (`curvature_for_budget`), else the
        iteration `iteration_for` chooses, so that a checkpoint names it."""
        options = curvature_for_budget(options, dim, maxfev)
        curvature = options.get("curvature", "auto")
        if isinstance(curvature, str) and curvature == "auto":
            options = {**options, "curvature": _curvature_of(options, dim)}
        return options

    @classmethod
    def options_for_noise(
        cls, options: dict[str, Any], dim: int, maxfev: int | None
    ) -> dict[str, Any]:
        """``n_directions="auto"`` of a curvature model with noise known before the first
        iteration: `NOISY_PAIRS` times the noise-free number of pairs, but no more than leave
        `NOISY_MIN_ITERATIONS` iterations in ``maxfev`` (`noisy_pairs`)."""
        if options.get("curvature", "auto") not in ("full", "diagonal"):
            return options
        if not isinstance(options.get("n_directions", "auto"), str):
            return options
        return {**options, "n_directions": noisy_pairs(dim, maxfev)}

    @classmethod
    def options_from_checkpoint(cls, options: dict[str, Any]) -> dict[str, Any]:
        """A checkpoint's options: one written before ``"auto"`` was resolved when a run
        starts (before the full model) holds ``"auto"``, which then was the diagonal model
        (the paper's iteration with a float learning rate)."""
        curvature = options.get("curvature", "auto")
        if isinstance(curvature, str) and curvature == "auto":
            # "auto" was the diagonal model in any d
            wide = active().dimensions.FULL_MODEL_MAX_DIMENSION + 1
            return {**options, "curvature": _curvature_of(options, wide)}
        return options

    @classmethod
    def iteration_class(cls, options: dict[str, Any], dim: int) -> type[ZoVH]:
        """The class that runs ``options`` in ``dim`` dimensions (`iteration_for`)."""
        return iteration_for(options, dim)


def default_pairs(dim: int) -> int:
    """``n_directions="auto"`` of a curvature model: ``P = (4 + floor(3 ln d)) // 2`` pairs,
    so that ``2 P`` is CMA-ES's default population size (at least 2 pairs)."""
    return max(2, (4 + int(3 * math.log(dim))) // 2) if dim > 1 else 2


def noisy_pairs(dim: int, maxfev: int | None) -> int:
    """The pairs of a noisy run's curvature model: ``NOISY_PAIRS`` times `default_pairs`,
    at most ``maxfev / (2 NOISY_MIN_ITERATIONS)`` (and never fewer than the default); the
    driver passes its resolved budget (``None``: no cap)."""
    plain = default_pairs(dim)
    pairs = active().method.NOISY_PAIRS * plain
    if maxfev is not None:
        pairs = min(pairs, maxfev // (2 * active().method.NOISY_MIN_ITERATIONS))
    return min(MAX_DIRECTIONS, max(plain, pairs))


def curvature_for_budget(options: dict[str, Any], dim: int, maxfev: int | None) -> dict[str, Any]:
    """``options`` with ``curvature="off"`` where ``"auto"`` would choose the curvature model
    for a run of fewer than `MODEL_MIN_EVALUATIONS_PER_DIMENSION` ``* dim`` evaluations."""
    curvature = options.get("curvature", "auto")
    if (
        maxfev is None
        or maxfev >= active().method.MODEL_MIN_EVALUATIONS_PER_DIMENSION * dim
        or not (isinstance(curvature, str) and curvature == "auto")
        or _curvature_of(options, dim) == "off"
        or any(name in options for name in PAPER_ONLY)  # left to the model's own error
    ):
        return options
    return {**options, "curvature": "off"}


def model_for_dimension(dim: int) -> str:
    """``curvature="auto"``'s model: ``"full"`` up to `FULL_MODEL_MAX_DIMENSION`,
    ``"diagonal"`` above."""
    return "full" if dim <= active().dimensions.FULL_MODEL_MAX_DIMENSION else "diagonal"


def _curvature_of(options: dict[str, Any], dim: int) -> str:
    """The iteration the options ask for in ``dim`` dimensions: ``"full"``, ``"diagonal"``
    or ``"off"`` (invalid values are left to the option check of the class they reach)."""
    curvature = options.get("curvature", "auto")
    if isinstance(curvature, str) and curvature == "auto":
        rate = options.get("learning_rate", "auto")
        auto = isinstance(rate, str) and rate == "auto"
        return model_for_dimension(dim) if auto else "off"
    if isinstance(curvature, str) and curvature in ("full", "diagonal"):
        return curvature
    return "off"


def iteration_for(options: dict[str, Any], dim: int) -> type[ZoVH]:
    """The ZoVH iteration that ``options`` ask for in ``dim`` dimensions: `PaperZoVH` for
    ``curvature="off"`` (or ``"auto"`` with a float learning rate), `FullCurvatureZoVH` for
    ``"full"`` (``"auto"`` up to `FULL_MODEL_MAX_DIMENSION`), `PreconditionedZoVH` for
    ``"diagonal"`` (``"auto"`` above it)."""
    return ZoVH.iterations[_curvature_of(options, dim)]


def _dimension(x0: Any) -> int:
    """``d`` of a starting point given to ``ZoVH(x0, ...)`` (its own checks come later)."""
    shape = getattr(x0, "shape", None)
    if shape is None:
        return len(x0) if hasattr(x0, "__len__") else 1
    return int(shape[0]) if len(shape) else 1
