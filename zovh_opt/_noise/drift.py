"""A noisy run's centre measured against the best point measured so far: the way back from a
drift.

Where noise decides the step rule's comparisons, accepted trials are a random walk that in
``d`` dimensions goes uphill. Once noise is known, every `CHECK_EVERY` iterations the
centre is measured against the best point (at first ``x0``) by
`zovh_opt._noise.samples.significantly_lower`; where the best point is significantly the
lower on fresh values too, the run goes back there with steps `RETURN_FACTOR` times as long.
The rule in full: theory page, *The run's parts in detail*, *The way back from a drift*; the
evidence, *Noise*, *The way back from a drift*.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._arrays.backend import namespace_of
from ..tuning import active
from .samples import significantly_lower

__all__ = ["CHECK", "DriftCheck"]

CHECK = "check"  # the driver's phase that measures the centre


class DriftCheck:
    """The measurements of a noisy run's centre and the returns to its best point (module
    docstring). Points are in the run's coordinates; values as the objective gave them."""

    def __init__(self) -> None:
        self.iterations = 0  # since the objective was known to be noisy
        self.best: tuple[Any, list[float]] | None = None  # the best point measured, its values
        self.pending: Any = None  # the point being measured
        self.centre: tuple[Any, list[float]] | None = None  # the centre's, while the best's
        # values are measured afresh
        self.size = 0  # its values
        self.returns = 0

    def due(self, method: Any, returned: Any, room: int) -> bool:
        """After an iteration of ``method``: whether the centre is measured now (a noisy run
        with the step rule, every `CHECK_EVERY` iterations, where the ``room`` that the
        budget leaves beside the end's evaluations pays for it)."""
        if not (returned.noisy and method.control is not None and returned.start_values):
            return False
        self.iterations += 1
        size = method.points_per_iteration
        if self.iterations % active().noise.CHECK_EVERY or room < size:
            return False
        if self.best is None:
            self.best = (returned.start, list(returned.start_values))
        centre = method.centre
        self.pending, self.size = namespace_of(centre).asarray(centre, copy=True), size
        return True

    def point(self) -> Any:
        """The point of the pending measurement, a new array."""
        return namespace_of(self.pending).asarray(self.pending, copy=True)

    def take(self, values: list[float], method: Any, returned: Any, room: int) -> str | None:
        """The values of the pending measurement: of the centre, then where the best point's
        kept values are significantly the lower (and the ``room`` the budget leaves beside
        the next iteration and the end pays for it), of the best point afresh (kept values won
        a comparison, and a winner's values are biased low). Returns the reason of a return to
        the best point, for the record of restarts, or ``None``."""
        point, self.pending = self.pending, None
        best, best_values = self.best
        if self.centre is None:  # the centre's values
            if room >= self.size and significantly_lower(best_values, values):
                self.centre = (point, list(values))
                self.pending = best  # measured afresh before the run goes back
            elif significantly_lower(values, best_values):
                self.best = (point, list(values))
            return None
        (centre, centre_values), self.centre = self.centre, None
        self.best = (best, list(values))
        if significantly_lower(values, centre_values):
            factor = active().noise.RETURN_FACTOR
            method.return_to(best, factor)
            returned.average.forget()
            self.returns += 1
            return (
                "the centre's values were significantly above the best measured point's "
                f"(noise-driven drift): back there, steps {factor:g} times as long"
            )
        if significantly_lower(centre_values, values):
            self.best = (centre, centre_values)
        return None

    def state(self) -> dict[str, Any]:
        best = self.best
        return {
            "drift_iterations": self.iterations,
            "drift_best": None if best is None else [best[0], list(best[1])],
            "drift_pending": self.pending,
            "drift_centre": None if self.centre is None else [self.centre[0], self.centre[1]],
            "drift_size": self.size,
            "drift_returns": self.returns,
        }

    def load_state(self, state: dict[str, Any], vector: Callable[[Any], Any]) -> None:
        """Continue from `state` (checkpoints written before the checks: none yet, counted
        from their next iteration)."""
        self.iterations = int(state.get("drift_iterations", 0))
        best = state.get("drift_best")
        self.best = None if best is None else (vector(best[0]), [float(v) for v in best[1]])
        self.pending = vector(state.get("drift_pending"))
        centre = state.get("drift_centre")
        self.centre = None if centre is None else (vector(centre[0]), [float(v) for v in centre[1]])
        self.size = int(state.get("drift_size", 0))
        self.returns = int(state.get("drift_returns", 0))
