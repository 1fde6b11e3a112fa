"""The optimizers, one ask/tell object per method; the registry ``minimize`` reads, and
`build`, the factory the driver calls."""

from __future__ import annotations

from typing import Any

from ..tuning import active
from ._base import AskTellMethod, GradientStepMethod
from .hizoo import HiZOO
from .mezo import MeZO
from .zo_sgd import ZOSGD
from .zoar import ZOAR
from .zovh import ZoVH
from .zovh_full import FullCurvatureZoVH
from .zovh_paper import PaperZoVH
from .zovh_preconditioned import PreconditionedZoVH

METHODS: dict[str, type[AskTellMethod]] = {
    cls.name: cls for cls in (ZoVH, ZOSGD, ZOAR, HiZOO, MeZO)
}


def build(
    name: str,
    x0: Any,
    *,
    rng: Any,
    scale: float | None,
    maxfev: int | None,
    options: dict[str, Any],
    noisy: bool = False,
    first_step: float | None = None,
) -> tuple[AskTellMethod, dict[str, Any]]:
    """The method object of a run, and the options it runs with.

    The method ``name`` first adjusts its ``"auto"`` options to the budget ``maxfev``
    (``options_for_budget``; ``"zovh"`` takes the paper's iteration below ``30 d``) and, for
    an objective known to be noisy, to the noise (``options_for_noise``; ``"zovh"`` takes
    more pairs), then names the class that runs them (``iteration_class``), which is built at
    ``x0`` with the length scale ``scale``, the step rule's ``first_step`` over it (``None``:
    the iteration's own) and the direction source ``rng``.
    """
    method = METHODS[name]
    options = method.options_for_budget(options, x0.shape[0], maxfev)
    if noisy:
        options = method.options_for_noise(options, x0.shape[0], maxfev)
    iteration = method.iteration_class(options, x0.shape[0])
    return iteration(x0, rng=rng, scale=scale, first_step=first_step, **options), options


def rebuilt_for_noise(
    name: str, step: AskTellMethod, options: dict[str, Any], maxfev: int
) -> tuple[AskTellMethod, dict[str, Any]]:
    """The method of a run whose ``noisy="auto"`` found noise at ``x0``, before its first
    iteration, as `build` makes it for ``noisy=True`` (``options_for_noise``: ``"zovh"``'s
    curvature model takes more pairs); ``step`` and ``options`` themselves where the noise
    changes nothing. The new method starts at ``step``'s point with its length scale and
    direction source, and its widened queries (`AskTellMethod.widen`)."""
    noisy = METHODS[name].options_for_noise(options, step.space.dim, maxfev)
    if noisy == options:
        return step, options
    first = None if step.control is None else step.control.first_step
    rebuilt, options = build(
        name, step.x, rng=step.source, scale=step.scale, maxfev=maxfev, options=noisy,
        first_step=first,
    )  # fmt: skip
    if step.control is not None and step.control.widened:
        rebuilt.widen(step.control.spread / active().step_rule.SPREAD, step.control.widening_reach)
    return rebuilt, options


__all__ = [
    "METHODS",
    "AskTellMethod",
    "FullCurvatureZoVH",
    "GradientStepMethod",
    "HiZOO",
    "MeZO",
    "PaperZoVH",
    "PreconditionedZoVH",
    "ZOAR",
    "ZOSGD",
    "ZoVH",
    "build",
    "rebuilt_for_noise",
]
