"""Whether the objective is noisy: repeated evaluations at ``x0`` and at the best point.

A deterministic ``fun`` repeats its value at the same point (within `REPEAT` eps: sums that run
in another order); a noisy one does not. With ``noisy="auto"`` (the default with the step rule)
a run evaluates ``x0`` twice before its first iteration and its best point again after
iterations 4, 8, 16, ...; different values mean noise, and ``x0`` is measured to
``final_evaluations`` values. ``noisy=True`` measures ``x0`` that often at once;
``noisy=False`` and a fixed learning rate measure nothing. Once noise is known
(`NoiseMonitor.act`) the smoothing radius stays above it, the tolerances noise alone would
trigger are off, and the returned point is chosen by means and measured afresh. In full: the
theory page, *The run's parts in detail*.
"""

from __future__ import annotations

import math
from typing import Any

from .._arrays.backend import namespace_of
from ..tuning import active
from .samples import sample_std

__all__ = ["NoiseMonitor", "fresh_evaluations", "measurements", "repeats"]


def repeats(value: float, before: float, eps: float) -> bool:
    """Whether ``value``, measured again, repeats ``before`` (within `REPEAT` ``eps``)."""
    return abs(value - before) <= active().noise.REPEAT * eps * abs(before)


def measurements(nit: int) -> int:
    """The evaluations a deterministic ``"auto"`` run spends on the measurements by
    iteration ``nit`` when its budget allows them: ``x0`` twice, then the best point once
    after iterations 4, 8, 16, ..."""
    return active().noise.PROBE + max(
        0, nit.bit_length() - active().noise.RECHECK_FROM.bit_length() + 1
    )


def fresh_evaluations(maxfev: int) -> int:
    """The values a noisy run takes at its returned point where ``final_evaluations`` is
    left to its default: one `FRESH_SHARE`-th of ``maxfev``, `NOISY_EVALUATIONS` to
    `FRESH_MAX`."""
    return min(
        active().noise.FRESH_MAX,
        max(active().noise.NOISY_EVALUATIONS, -(-maxfev // active().noise.FRESH_SHARE)),
    )


class NoiseMonitor:
    """The measurements that decide whether a run is noisy (module docstring).

    Parameters
    ----------
    mode : bool or "auto"
        The ``noisy`` option.
    adaptive : bool
        Whether the run has the step rule (``"auto"`` measures only then).
    evaluations : int or None
        Values at ``x0`` (and at each point the end compares and at the returned point)
        once the objective is noisy; ``None``: 10, and `fresh_evaluations` at the returned
        point and as many for a close comparison with ``x0``.
    start : array
        ``x0`` in the run's coordinates (steps make new arrays: a reference).
    maxfev : int
        The run's budget.
    """

    def __init__(
        self, mode: Any, adaptive: bool, evaluations: Any, start: Any, maxfev: int
    ) -> None:
        self.mode = mode if mode != "auto" or adaptive else False
        self.eps = float(namespace_of(start).finfo(start.dtype).eps)  # of x, and of f
        self.evaluations = active().noise.NOISY_EVALUATIONS if evaluations is None else evaluations
        # values at the returned point, and those a close comparison with x0 may add
        self.fresh = fresh_evaluations(maxfev) if evaluations is None else evaluations
        self.extension = self.fresh if evaluations is None else 0
        self.values: list[float] = []  # at x0
        self.detected = self.mode is True
        # x0, while a measurement or a late comparison with it may come (not with False)
        self.start = None if self.mode is False else start
        self.recheck: tuple[float, Any] | None = None  # the best value and point, pending
        self.acted = False  # the parts act on the noise once it is measured
        self.deferred = False  # x0's values are measured in the end's comparison instead

    @property
    def auto(self) -> bool:
        return self.mode == "auto"

    @property
    def done(self) -> bool:
        """Whether no measurement is pending."""
        return self.size() == 0

    def size(self) -> int:
        """The number of points of the pending measurement: of the best point again, or of
        ``x0``."""
        if self.recheck is not None:
            return 1
        if self.mode is False or self.start is None or self.deferred:
            return 0
        wanted = self.evaluations if self.detected else active().noise.PROBE
        return max(wanted - len(self.values), 0)

    def point(self, to_user: Any) -> Any:
        """The point of the pending measurement, a new array (``to_user`` maps ``x0``)."""
        if self.recheck is not None:
            row = self.recheck[1]
            return namespace_of(row).asarray(row, copy=True)
        return to_user(self.start)

    def recheck_due(self, nit: int, best: Any, affordable: bool) -> None:
        """After iteration ``nit``: with ``"auto"`` and no noise seen, the best point so far
        (``best``: its value and point) is evaluated again after iterations 4, 8, 16, ...
        (where ``affordable``): a deterministic objective gives its value again. This finds
        noise the values at ``x0`` missed (outliers in a fraction of the calls)."""
        if not (self.auto and not self.detected and best is not None and affordable):
            return
        if nit >= active().noise.RECHECK_FROM and nit & (nit - 1) == 0:
            self.recheck = best

    def take(self, values: list[float], room: int) -> None:
        """The values of the pending measurement. ``room``, the evaluations ``maxfev``
        leaves after one iteration, caps the values at ``x0`` and at the end once noise is
        found (`found`)."""
        if self.recheck is not None:
            before, self.recheck = self.recheck[0], None
            if math.isfinite(values[0]) and not repeats(values[0], before, self.eps):
                self.found(room, elsewhere=True)
            return
        self.values.extend(values)
        finite = self.finite_values()
        if not self.detected and any(not repeats(v, finite[0], self.eps) for v in finite):
            self.found(room)

    def found(self, room: int, *, elsewhere: bool = False) -> None:
        """Noise is known: ``x0`` is measured until it has ``evaluations`` values (``room``:
        `take`'s). Found ``elsewhere`` (a repeat of the best point, or of the quasi-Newton
        phase's centre, `zovh_opt._driver.quasi_newton`), x0's two values are dropped where the
        budget pays for fresh ones: they were kept for agreeing, a sample without the outliers
        that noise in a fraction of the calls has (a start measured too low would be returned
        over every better point)."""
        if elsewhere and room // 3 >= active().noise.PROBE:  # (where fresh values can be paid for)
            self.values = []
        self.detected = True
        # x0's values, the final iterate's and the returned point's (at least as many) in room
        measured = len(self.values)
        self.evaluations = max(measured, min(self.evaluations, (room + measured) // 3))
        self.fresh = max(self.evaluations, min(self.fresh, room + measured - 2 * self.evaluations))
        left = room + measured - 2 * self.evaluations - self.fresh
        self.extension = max(0, min(self.extension, left))

    def defer(self) -> None:
        """Measure ``x0`` no further now: the end's comparison measures it beside the final
        iterate (a trust region at small d learns from the budget those values would take)."""
        self.deferred = True

    def tell_start(self, method: Any, nit: int, f_unit: float) -> None:
        """At the first iteration (its batch is around ``x0``), give the ``method`` the value
        of ``f(x0)`` in the run's unit of ``f``, where it was measured and the objective looks
        deterministic (the values there agree): a curvature model takes the longest first
        step from a flat start (`zovh_opt._methods.curvature_model`)."""
        if nit != 1 or self.detected or not self.values or not math.isfinite(self.values[0]):
            return
        method.value_at_centre(self.values[0] / f_unit)

    def budgeted(self, nit: int) -> int:
        """The evaluations the measurements still take in a run of ``nit`` iterations."""
        if self.mode is False:
            return 0
        if self.detected:
            return self.size()
        return measurements(nit) - len(self.values)

    def std(self) -> float:
        """The sample standard deviation of the values at ``x0`` (0 for a deterministic
        objective, ``nan`` before two values)."""
        return sample_std(self.values)

    def finite_values(self) -> list[float]:
        """The finite values measured at ``x0``."""
        return [v for v in self.values if math.isfinite(v)]

    def start_scale(self) -> float:
        """The scale of ``f`` at ``x0``: the larger of its values' mean magnitude and their
        standard deviation (0 before a finite value)."""
        finite = self.finite_values()
        if not finite:
            return 0.0
        spread = sample_std(finite) if len(finite) > 1 else 0.0
        return max(abs(sum(finite) / len(finite)), spread)

    def fields(self) -> dict[str, float]:
        """The result's ``noise_std`` where ``x0`` was measured (the returned point's own,
        measured at the end of a noisy run, takes its place)."""
        return {} if self.mode is False else {"noise_std": self.std()}

    def act(self, returned: Any, stopping: Any, method: Any, f_unit: float) -> None:
        """Where noise is known (at the end of the measurement of ``x0``; with
        ``noisy=True`` the returned point also from the start): the returned point is
        chosen by means and medians (``x0``'s values are its side of the comparison), the
        tolerances that noise triggers go (``stopping``), and the method reads its batches
        robustly and keeps its radius above the noise, whose variance it is given in the
        run's unit of ``f``, ``f_unit`` (1 until the first finite batch fixes it; the method
        converts then, `StepSizeControl.noise_in_unit`); each part may be ``None`` (not yet
        built)."""
        if not self.detected or self.acted or not self.done:
            return
        self.acted = True
        self.ends_noisy(returned)
        if stopping is not None:
            stopping.noisy()
        if method is not None:
            method.noise_found((self.std() / f_unit) ** 2)

    def ends_noisy(self, returned: Any) -> None:
        """The ``returned`` point ends the run as a noisy one does: compared with ``x0``
        (its values so far), and measured afresh."""
        values = None if self.deferred else self.values
        returned.become_noisy(self.evaluations, self.start, values, self.fresh, self.extension)

    def note(self, compared: bool = True) -> str:
        """What the message adds once ``"auto"`` found noise; ``compared``: whether the
        returned point was chosen by comparing values (not where ``maxtime`` cut the end)."""
        if not (self.auto and self.detected):
            return ""
        chosen = "x was chosen by the mean and median of values, " if compared else ""
        return (
            f" Noise detected (a point's values differed on repeats): {chosen}fun is the mean "
            "of fresh values at x (fun_std_error, noise_std), and the tolerances left 'auto' "
            "were off."
        )

    def state(self) -> dict[str, Any]:
        return {
            "noise_values": list(self.values),
            "noise_detected": self.detected,
            "noise_evaluations": self.evaluations,
            "noise_fresh": self.fresh,
            "noise_extension": self.extension,
            "noise_start": self.start,
            "noise_recheck": None if self.recheck is None else list(self.recheck),
            "noise_acted": self.acted,
            "noise_deferred": self.deferred,
        }

    def load_state(self, state: dict[str, Any], vector: Any) -> None:
        """Continue from `state` (``vector`` turns a stored array into one of the run's);
        checkpoints written before the measurement of ``x0`` continue without one (their
        ``noisy=True`` compares with ``x0`` at the end)."""
        if "noise_values" not in state:
            self.values, self.start = [], None
            return
        self.values = [float(v) for v in state["noise_values"]]
        self.detected = bool(state["noise_detected"])
        self.evaluations = int(state["noise_evaluations"])
        # checkpoints before the returned point had its own sample size: as many as x0's
        self.fresh = int(state.get("noise_fresh", self.evaluations))
        self.extension = int(state.get("noise_extension", 0))
        self.start = vector(state["noise_start"])
        self.deferred = bool(state.get("noise_deferred", False))
        recheck = state["noise_recheck"]
        self.recheck = None if recheck is None else (float(recheck[0]), vector(recheck[1]))
        self.acted = bool(state["noise_acted"])
