"""The stopping rules: the budgets asked before each iteration, the tolerances after it.

`StoppingRules` holds the options that end a run and the state of the ``ftol`` windows. The
driver asks `budget_spent` before an iteration's ask (``maxiter``, ``maxfev`` with the
iteration and the final evaluations reserved, ``maxtime`` over the whole call) and
`after_iteration` after its tell (``ftarget``, ``flat_iterations``, ``ftol``, ``xtol``, and
after a converged quasi-Newton phase the method's first iterations); each answers ``None`` or
a `Stop` with SciPy's status codes where it has them. An ``ftol`` stall is `STALLED`: the
driver decides whether the phase resumes, the safeguard rescales or the run stops. The
tolerances left ``"auto"`` go once the objective is known to be noisy. Each rule in full:
theory page, *The run's parts in detail*, *The stopping rules*.
"""

from __future__ import annotations

import math
import statistics
from typing import Any, NamedTuple

from ..tuning import active

__all__ = ["STALLED", "BudgetTooSmall", "StoppingRules", "Stop"]

# Status codes; 0-2 and 99 mean what they mean in scipy.optimize.
SUCCESS, MAXFEV, MAXITER, FAILED, FTARGET, MAXTIME, INTERRUPTED, CALLBACK = 0, 1, 2, 3, 4, 5, 6, 99
RUNNING = -1


def default_maxfev(dim: int) -> int:
    """``maxfev``'s default, ``MAXFEV_PER_DIMENSION * d`` (at least one iteration and the
    final evaluations: `StoppingRules`)."""
    return active().stopping.MAXFEV_PER_DIMENSION * dim


class Stop(NamedTuple):
    """Why a run ends: its status and message."""

    status: int
    message: str


STALLED = Stop(SUCCESS, "stalled")  # ftol fired: stop, or go on at a finer scale (safeguard)

FLAT_MESSAGE = (
    "Every query of the last {count} iterations had the value {value:.17g}: the run is on a "
    "plateau of f (flat at the queries' spread); x is the lowest point evaluated."
)
FLAT_START_MESSAGE = (
    "f took the value {value:.17g} at every point the run evaluated ({count} iterations): x0 "
    "lies on a plateau of f wider than the queries' spread (f may be constant). If it is not, "
    "start elsewhere, or give larger x_scale."
)

FTOL_MESSAGE = (
    "The median f estimate of the last {window} iterations was lower than that of the "
    "iterations before by at most ftol (relative)."
)
PHASE_MESSAGE = (
    "The quasi-Newton phase converged (f = {value:.17g} at its last point), and the method's "
    "first {window} iterations found no lower value; x is the lowest point evaluated."
)
RUGGED_MESSAGE = (
    "The trust region's steps failed down to its last radius (f = {value:.17g} at its "
    "centre: f is rugged at a finer scale, a solver's tolerance), and the method's first "
    "{window} iterations found no lower value; x is the lowest point evaluated."
)


class BudgetTooSmall(ValueError):
    """``maxfev`` cannot pay one iteration and the final evaluation (new starts and the
    benchmarks catch it to end where the budget is spent)."""


class StoppingRules:
    """The rules of one run and the state of its ``ftol`` windows.

    Parameters
    ----------
    options : dict
        The driver's options; ``"auto"`` and ``None`` defaults of ``ftol``, ``ftol_window``,
        ``xtol`` and ``maxfev`` are resolved here, in place.
    method : str
        The method's name, for the error of a ``maxfev`` too small for one iteration.
    adaptive : bool
        Whether the method runs the step rule (the tolerances' ``"auto"`` stop only it).
    dim, points_per_iteration, final_evaluations : int
        ``d``, the evaluations of one iteration and those after the last.
    eps : float
        The precision of ``x0``'s dtype.
    x0_scale : float
        The length scale of ``x0`` that ``xtol`` multiplies with a fixed rate.
    """

    def __init__(
        self,
        options: dict[str, Any],
        *,
        method: str,
        adaptive: bool,
        dim: int,
        points_per_iteration: int,
        final_evaluations: int,
        eps: float,
        x0_scale: float,
    ) -> None:
        # the tolerances left "auto": off once the objective is known to be noisy
        names = ("ftol", "xtol", "flat_iterations")
        self.automatic = [name for name in names if options[name] == "auto"]
        if options["flat_iterations"] == "auto":
            options["flat_iterations"] = active().stopping.FLAT_ITERATIONS if adaptive else None
        if options["ftol"] == "auto":
            options["ftol"] = active().stopping.FTOL if adaptive else None
        if options["ftol_window"] is None:
            options["ftol_window"] = max(
                active().stopping.FTOL_WINDOW, math.ceil(2 * dim / points_per_iteration)
            )
        if options["xtol"] == "auto":
            options["xtol"] = (
                active().stopping.XTOL_PER_SQRT_EPS * math.sqrt(eps) if adaptive else None
            )
        least = points_per_iteration + final_evaluations
        if options["maxfev"] is None:
            options["maxfev"] = max(default_maxfev(dim), least)
        if options["maxfev"] < least:
            raise BudgetTooSmall(
                f"maxfev must allow one iteration and the final evaluation "
                f"(>= {least} for method {method!r}), got {options['maxfev']}"
            )
        self.options = options
        self.dim = dim
        self.eps = eps
        # x0's length scale for xtol with a fixed rate; the step rule keeps its own
        self.x0_scale = x0_scale if not adaptive and options["xtol"] is not None else None
        self.recent: list[float] = []  # f estimates of the current ftol window
        self.previous_median = math.nan  # of the window before
        self.flat = 0  # iterations in a row whose values were all one number
        self.flat_value = math.nan  # that number
        self.varied = False  # whether the run has seen two different values
        # f where a quasi-Newton phase converged (or a rugged f's trust region ended), until
        # the method's first CONVERGED_WINDOW iterations have been compared with it
        self.converged_value = None
        # ... and where a rugged f's trust region set it, the spread of its last values above
        # it: a value lower by no more is the roughness's, not f's
        self.roughness: float | None = None
        self.lower_found = False  # this iteration ended those iterations with a lower value

    def iteration_budget(self, points_per_iteration: int, final_evaluations: int) -> int:
        """The iterations the run can take: ``maxiter``, or as many as ``maxfev`` pays for
        after the final evaluations (for the ``disp`` table and the progress bar)."""
        maxiter = self.options["maxiter"]
        paid = max(1, (self.options["maxfev"] - final_evaluations) // points_per_iteration)
        return paid if maxiter is None else min(maxiter, paid)

    def budget_spent(
        self, nit: int, nfev: int, reserve: int, elapsed: float, timed: int = 1
    ) -> Stop | None:
        """Before an iteration: whether ``maxiter``, ``maxfev`` (with ``reserve`` evaluations
        still to pay: the iteration and the final ones) or ``maxtime`` is spent (with time
        for ``timed`` evaluations still to pay, at the run's time per evaluation so far: the
        iteration and one at the returned point)."""
        opts = self.options
        if opts["maxiter"] is not None and nit >= opts["maxiter"]:
            return Stop(
                MAXITER,
                "Maximum number of iterations has been exceeded. No tolerance was met within "
                f"maxiter={opts['maxiter']}; raise it to go on.",
            )
        if nfev + reserve > opts["maxfev"]:
            return Stop(
                MAXFEV,
                "Maximum number of function evaluations has been exceeded. No tolerance was "
                f"met within maxfev={opts['maxfev']}; raise it to go on.",
            )
        if opts["maxtime"] is not None:
            each = elapsed / nfev if nfev else 0.0
            if elapsed + timed * each >= opts["maxtime"]:
                return Stop(
                    MAXTIME,
                    f"Maximum time of {opts['maxtime']:g} s has been reached: the next "
                    "iteration would have exceeded it.",
                )
        return None

    def affordable(self, nfev: int, elapsed: float) -> int | None:
        """The evaluations the time left by ``maxtime`` pays for, at the run's time per
        evaluation so far (at least one); ``None`` without ``maxtime`` or evaluations."""
        maxtime = self.options["maxtime"]
        if maxtime is None or not nfev or elapsed <= 0:
            return None
        return max(1, int((maxtime - elapsed) / (elapsed / nfev)))

    def after_iteration(
        self,
        f_estimate: float,
        lowest: float | None,
        step_length: float,
        length_scale: float,
        f_scale: float,
        values: Any,
    ) -> Stop | None:
        """After an iteration whose f estimate is ``f_estimate`` and whose (finite) values
        are ``values`` (host floats, the user's unit): ``ftarget`` (against ``lowest``, the
        lowest value evaluated, where given), then ``flat_iterations``, then ``ftol``
        (`STALLED`), then ``xtol`` (the step length against ``xtol`` times
        ``length_scale``)."""
        opts = self.options
        self.lower_found = False
        reached = self.target_reached(f_estimate if lowest is None else lowest)
        if reached is not None:
            return reached
        plateau = self._plateau(values)
        if plateau is not None:
            return plateau
        self.recent.append(f_estimate)
        deciding = self._converged_window()
        if opts["ftol"] is not None and deciding is not None and len(self.recent) >= deciding:
            converged = self._after_convergence(lowest, f_scale, deciding)
            if converged is not None:
                return converged
        if opts["ftol"] is not None and len(self.recent) == opts["ftol_window"]:
            before, after = self.previous_median, statistics.median(self.recent)
            self.recent, self.previous_median = [], after
            # relative to the estimates, as SciPy's ftol; below the precision of f at x0 no
            # decrease is real (0.1.0 took ftol of that scale too, which stopped a run at
            # f - f* = 1e-12 |f(x0)|, far above COCO's targets for |f(x0)| ~ 1e7)
            if self._no_decrease(before, after, f_scale):  # (False before a first window)
                return STALLED
        if opts["xtol"] is not None and step_length <= opts["xtol"] * length_scale:
            return Stop(SUCCESS, "The steps became shorter than xtol times the length scale of x0.")
        return None

    def _converged_window(self) -> int | None:
        """The iterations of the method that decide after a converged quasi-Newton phase (or
        a rugged ``f``'s trust region: no hops follow it); ``None`` where none converged (or
        they have decided)."""
        if self.converged_value is None:
            return None
        hops = self.roughness is None and self.dim <= active().dimensions.HOP_DIMENSIONS
        window = active().stopping.HOP_WINDOW if hops else active().stopping.CONVERGED_WINDOW
        return min(window, self.options["ftol_window"])

    def _after_convergence(self, lowest: float | None, f_scale: float, window: int) -> Stop | None:
        """After the method's first ``window`` iterations that follow a converged quasi-Newton
        phase, or a rugged ``f``'s trust region that ran its radius out: the stop where no
        value below the phase's was found (within ``ftol`` or the precision of f), or none
        below the region's centre's by more than its ``roughness``; the value is forgotten
        either way."""
        value, self.converged_value = self.converged_value, None
        roughness, self.roughness = self.roughness, None
        if lowest is None:
            return None
        if roughness is not None:
            if value - lowest > roughness:
                return None
            return Stop(SUCCESS, RUGGED_MESSAGE.format(value=value, window=window))
        if not self._no_decrease(value, lowest, f_scale):
            self.lower_found = True  # read once by the driver (`zovh_opt._driver.quasi_newton.hop`)
            return None
        return Stop(SUCCESS, PHASE_MESSAGE.format(value=value, window=window))

    def _no_decrease(self, before: float, after: float, f_scale: float) -> bool:
        """Whether ``after`` is below ``before`` by at most ``ftol`` times the larger of
        their magnitudes, or by at most the precision of f at ``x0`` (``eps`` times its scale
        ``f_scale``); False where ``before`` is ``nan``."""
        tolerance = max(self.options["ftol"] * max(abs(before), abs(after)), self.eps * f_scale)
        return before - after <= tolerance

    def target_reached(self, value: float | None) -> Stop | None:
        """The stop of ``ftarget`` where ``value`` (the lowest value evaluated, or an f
        estimate) is at most the target."""
        target = self.options["ftarget"]
        if target is None or value is None or not value <= target:
            return None
        return Stop(FTARGET, f"ftarget reached: f = {value:.6g} <= {target:.6g}.")

    def _plateau(self, values: Any) -> Stop | None:
        """The stop of ``flat_iterations`` flat iterations in a row, else ``None``."""
        count = self.options["flat_iterations"]
        if count is None:
            return None
        least, largest = float(min(values)), float(max(values))
        if least != largest:
            self.flat, self.varied = 0, True
            return None
        same = least == self.flat_value
        self.varied = self.varied or not (same or math.isnan(self.flat_value))
        self.flat = self.flat + 1 if same else 1
        self.flat_value = least
        if self.flat < count:
            return None
        if not self.varied:
            return Stop(SUCCESS, FLAT_START_MESSAGE.format(value=least, count=self.flat))
        return Stop(SUCCESS, FLAT_MESSAGE.format(value=least, count=self.flat))

    def noisy(self) -> None:
        """The objective is noisy: the tolerances left ``"auto"`` go. A noisy run stops
        by its budgets (``maxfev``, ``maxiter``, ``maxtime``), ``ftarget`` or the
        tolerances the user set: the step rule's steps shorten and the f estimates level
        off where noise hides the slope, which more evaluations still resolve."""
        for name in self.automatic:
            self.options[name] = None

    def length_scale(self, control: Any) -> float:
        """The length scale ``xtol`` multiplies: ``x0``'s, or the step rule's (``control``)."""
        return self.x0_scale if control is None else control.scale

    def converged_by_ftol(self) -> Stop:
        """The stop of an ``ftol`` stall that the safeguard does not rescale."""
        return Stop(SUCCESS, FTOL_MESSAGE.format(window=self.options["ftol_window"]))

    def values_varied(self) -> None:
        """The run's values varied before the method's batches (a phase's or a region's
        steps): a plateau the method meets is not ``x0``'s."""
        self.varied = True

    def forget_windows(self) -> None:
        """After a restart: no window to compare with."""
        self.recent, self.previous_median = [], math.nan

    def state(self) -> dict[str, Any]:
        return {
            "automatic_tolerances": list(self.automatic),
            "x0_scale": self.x0_scale,
            "recent": list(self.recent),
            "previous_median": self.previous_median,
            "flat": self.flat,
            "flat_value": self.flat_value,
            "varied": self.varied,
            "converged_value": self.converged_value,
            "roughness": self.roughness,
        }

    def load_state(self, state: dict[str, Any]) -> None:
        self.automatic = [str(name) for name in state.get("automatic_tolerances", [])]
        self.x0_scale = None if state["x0_scale"] is None else float(state["x0_scale"])
        self.recent = [float(v) for v in state["recent"]]
        self.previous_median = float(state["previous_median"])
        if "flat" not in state:  # a checkpoint from before the plateau rule: runs without it
            self.options["flat_iterations"] = None
        self.flat = int(state.get("flat", 0))
        self.flat_value = float(state.get("flat_value", math.nan))
        self.varied = bool(state.get("varied", False))
        value = state.get("converged_value")
        self.converged_value = None if value is None else float(value)
        roughness = state.get("roughness")  # (none before the rugged region's end)
        self.roughness = None if roughness is None else float(roughness)
