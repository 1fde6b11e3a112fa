"""The safeguard: failed evaluations, diverging iterates, overreach and stalls, and the restarts
they cause.

A NaN or infinite value is missing data (the iteration is dropped; `FAILED_IN_A_ROW` in a row
restart the run from the step rule's centre with steps cut by `BACKOFF`, and after
``max_restarts`` restarts end it with status 3). A noisy batch far above the run's others is
dropped and its steps shrink (`overreached`). With a fixed rate an f estimate `GROWTH` times
its scale above the lowest restarts the run (divergence). With the step rule the first
`STALL_RESCALES` ``ftol`` stalls go on at a scale `STALL_FACTOR` times as long. Each restart
is a record of ``result().restarts``. The full rules: theory page, *The run's parts in
detail*, *The safeguard*.
"""

from __future__ import annotations

import math
import sys
from typing import Any

from .._noise.robust import far_above
from ..tuning import active
from .stopping import FAILED, Stop

__all__ = ["Safeguard"]


class Safeguard:
    """The failure counts, the scale of ``f``, the restart point and the restarts of a run.

    Parameters
    ----------
    max_restarts : int
        Restarts after failed evaluations before the next failure ends the run.
    start : array or None
        With a fixed rate, the method's iterate: where a restart goes until an iteration
        gives a finite f estimate (the step rule restarts from its centre: no iterate is held,
        which would be ``d`` floats more).
    """

    def __init__(self, max_restarts: int, start: Any) -> None:
        self.max_restarts = max_restarts
        self.restarts: list[dict[str, Any]] = []
        self.failed_evaluations = 0
        self.failed_in_a_row = 0
        # fixed rate: the lowest f estimate and its iterate, where a restart starts
        self.anchor: tuple[float, Any] = (math.inf, start)
        self.scale: float | None = None  # of f: the first finite batch's (divergence, ftol)
        self.first = math.nan  # f estimate of the first finite iteration

    def count_failures(self, values: list[float]) -> int:
        """Count the values that are NaN or +-inf (missing data); return their number."""
        if math.isfinite(sum(values)):  # inf and nan carry into the sum: all finite
            return 0
        bad = sum(not math.isfinite(v) for v in values)
        self.failed_evaluations += bad
        return bad

    def missing(self, bad: int, n: int) -> str | None:
        """An iteration with ``bad`` of its ``n`` values missing: the failure, once
        `FAILED_IN_A_ROW` such iterations came in a row, else ``None``."""
        self.failed_in_a_row += 1
        if self.failed_in_a_row < active().safeguard.FAILED_IN_A_ROW:
            return None
        self.failed_in_a_row = 0
        return (
            f"function values were not finite in {active().safeguard.FAILED_IN_A_ROW} iterations "
            f"in a row ({bad} of {n} in the last)"
        )

    def finite(self, f_estimate: float, values: list[float]) -> bool:
        """An iteration whose values are all finite; ``True`` if it is the first, whose
        values set the scale of ``f``."""
        self.failed_in_a_row = 0
        if self.scale is not None:
            return False
        # (a tiny floor only for f = 0 everywhere: an absolute one such as ulp(1) would be a
        # stopping rule for f ~ 1e-31 that f ~ 1 does not have)
        spread = max(values) - min(values)
        self.scale = max(abs(f_estimate), spread, sys.float_info.min)
        self.first = f_estimate
        return True

    def overreached(self, step: Any, values: list[float], returned: Any, noise: Any) -> bool:
        """Whether a noisy run's batch (finite ``values``) holds a value far above the run's
        others (`zovh_opt._noise.robust.far_above`: the lowest value from ``returned``, the scale of
        ``f`` at ``x0`` from ``noise``); then the batch teaches nothing (no model update,
        no scale of ``f``) and the steps and radius of ``step``, which overreached, shrink by
        `FAR_ABOVE_SHRINK`."""
        lowest = returned.lowest_evaluated()
        if not step.robust or step.control is None or lowest is None:
            return False  # noise found and the step rule only
        if not far_above(values, lowest, noise.start_scale):
            return False
        step.discard()
        step.shorten(active().noise.FAR_ABOVE_SHRINK)
        return True

    def divergence(self, f_estimate: float) -> str | None:
        """Why this iteration's f estimate shows diverging iterates (fixed rate), or None."""
        lowest = min(self.anchor[0], f_estimate)  # the anchor holds the lowest estimate
        scale = max(self.scale, abs(lowest), self.first - lowest)
        if f_estimate - lowest > active().safeguard.GROWTH * scale:
            return (
                f"f estimate {f_estimate:.6g} rose far above its lowest value "
                f"{lowest:.6g} (diverging iterates)"
            )
        return None

    def progressed(self, f_estimate: float, x: Any) -> None:
        """A fixed-rate iteration's f estimate at the iterate ``x``: the restart point if it
        is the lowest so far (steps make new arrays: ``x`` is kept as it is)."""
        if f_estimate < self.anchor[0]:
            self.anchor = (f_estimate, x)

    def restart(
        self, method: Any, reason: str, *, diverged: bool, nit: int, nfev: int, stopping: Any
    ) -> Stop | None:
        """Start again with shorter steps (module docstring), the ``stopping`` rules' windows
        forgotten; the `Stop` of a failure after ``max_restarts`` restarts, else ``None``."""
        cause = "divergence" if diverged else "non-finite values"
        unusable = sum(r["cause"] == "non-finite values" for r in self.restarts)
        if not diverged and unusable >= self.max_restarts:
            return Stop(
                FAILED,
                f"The objective cannot be evaluated near x: {reason}, and again after "
                f"{unusable} restarts with shorter steps. Check fun there; where it is "
                f"undefined, a large finite value lets the run step around it.",
            )
        if method.control is None:
            rate = method.learning_rate * active().safeguard.BACKOFF
            method.restart(self.anchor[1], rate)
        else:
            method.shorten(active().safeguard.BACKOFF)
            rate = method.learning_rate
        self.record(nit, nfev, reason, cause, rate)
        stopping.forget_windows()
        return None

    def rescale(self, method: Any, *, nit: int, nfev: int) -> bool:
        """An ``ftol`` stall: go on from the step rule's centre at a finer scale (``True``),
        or not (a fixed rate, or the rescales are spent: the run has converged)."""
        stalls = sum(r["cause"] == "stall" for r in self.restarts)
        if method.control is None or stalls >= active().safeguard.STALL_RESCALES:
            return False
        factor = active().safeguard.STALL_FACTOR
        method.shorten(factor, stalled=True)
        reason = f"the f estimates stalled (ftol); steps {factor:g} times as long"
        self.record(nit, nfev, reason, "stall", method.learning_rate)
        return True

    def record(self, nit: int, nfev: int, reason: str, cause: str, rate: float) -> None:
        """One more entry of ``restarts`` (a return from a drift is one,
        `zovh_opt._noise.drift`)."""
        self.restarts.append(
            {"nit": nit, "nfev": nfev, "reason": reason, "cause": cause, "learning_rate": rate}
        )

    def state(self) -> dict[str, Any]:
        return {
            "restarts": self.restarts,
            "anchor": list(self.anchor),
            "scale": self.scale,
            "first": self.first,
            "failed_evaluations": self.failed_evaluations,
            "failed_in_a_row": self.failed_in_a_row,
        }

    def load_state(self, state: dict[str, Any], vector: Any) -> None:
        """Continue from `state`; ``vector`` turns a stored array into one of the run's."""
        self.restarts = [dict(r) for r in state["restarts"]]
        value, x = state["anchor"]
        self.anchor = (float(value), None if x is None else vector(x))
        self.scale = None if state["scale"] is None else float(state["scale"])
        self.first = float(state["first"])
        self.failed_evaluations = int(state["failed_evaluations"])
        self.failed_in_a_row = int(state["failed_in_a_row"])
