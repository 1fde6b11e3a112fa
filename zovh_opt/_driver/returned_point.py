"""The end of a run: which point it returns, and the value it reports there.

For a deterministic objective ``x`` is the lowest finite point evaluated and ``fun == f(x)``.
For a noisy one the lowest noisy value is a biased pick: ``x0`` is measured at the start, the
final iterate and the average of the last centres (`zovh_opt._noise.centre_average`) at the end,
the candidate is compared with ``x0`` (after a trust region, with its centre) by means and
medians (rounds of more values where the comparison is close, `significantly_lower`), and
fresh values at ``x`` give an unbiased ``fun``, ``fun_std_error`` and ``noise_std``. The full
rule and the sample sizes: theory page, *The run's parts in detail*, *The returned point*; the
evidence, *The end's samples*.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .._noise.centre_average import CentreAverage
from .._noise.samples import (
    finite_mean,
    finite_median,
    mean,
    sample_std,
    significantly_lower,
)
from ..tuning import active

__all__ = ["ReturnedPoint", "mean"]


class ReturnedPoint:
    """The best point so far, and with ``noisy=True`` the final comparison with ``x0``.

    Parameters
    ----------
    noisy : bool
        Whether the run ends with the comparison and a fresh mean (module docstring).
    final_evaluations : int
        Values per point in each final ask (`become_noisy` may give the returned point
        more).
    start : array or None
        With ``noisy=True``, ``x0`` in the run's coordinates (steps make new arrays: a
        reference).
    xp : namespace
        The user's array namespace.
    """

    def __init__(self, noisy: bool, final_evaluations: int, start: Any, xp: Any) -> None:
        self.noisy = noisy
        self.per_point = final_evaluations
        self.fresh = final_evaluations  # values at the returned point
        self.extension = 0  # values a close comparison with x0 may add, both sides together
        self.ended_at: int | None = None  # the run's evaluations before its end (noisy)
        self.more_candidate: list[float] = []  # those values, at the candidate
        self.more_start: list[float] = []  # and at x0
        self.round = 0  # values a side of the close comparison's next round (`_settle`)
        self.choice: str | None = None  # the candidate it measures, then what it returns
        self.xp = xp
        self.best: tuple[float, Any] | None = None  # lowest finite evaluated value, its point
        self.start = start if noisy else None
        self.start_name: str | None = None  # a point in x0's place (`compare_with`)
        self.start_values: list[float] | None = None  # x0's, measured before the run
        self.average = CentreAverage()  # of a noisy run's centres (`follow`)
        self.compared: list[float] | None = None  # the comparison's values, once in
        self.final_values: list[float] | None = None
        self.cut: int | None = None  # the final values maxtime left room for, where it cut
        self.uncompared = False  # a noisy run's end that maxtime left no time to compare

    def become_noisy(
        self,
        evaluations: int,
        start: Any,
        start_values: list[float] | None,
        fresh: int,
        extension: int,
    ) -> None:
        """The objective is noisy: end with the comparison with ``x0``, whose values are
        ``start_values`` (``None``: measured in the comparison), of ``evaluations`` values a
        point and up to ``extension`` more where it is close, and a fresh mean of ``fresh``
        values."""
        self.noisy, self.per_point, self.fresh = True, evaluations, fresh
        self.extension = extension
        self.start = start
        self.start_values = None if start_values is None else list(start_values)

    def compare_with(self, point: Any, name: str) -> None:
        """The end compares with ``point`` (``name`` in the messages) in place of ``x0``,
        where ``x0``'s values were left for the comparison to measure: a point the run's
        steps reached below ``x0``, from which the method started (a trust region's centre;
        a method that wandered off it would otherwise be answered with ``x0``). It is kept
        only where significantly the lower (`chose_start`)."""
        if self.start is not None and self.start_values is None:
            self.start, self.start_name = point, name

    def follow(self, method: Any) -> None:
        """After an iteration of ``method``: a noisy run averages the step rule's centre (a
        fixed rate has none; a deterministic run reads nothing)."""
        if self.noisy and method.control is not None:
            self.average.add(method.centre)

    @property
    def reserve(self) -> int:
        """Evaluations after the last iteration: ``final_evaluations``; for a noisy objective
        as many at the final iterate, the average of the centres (where the next iteration
        makes one) and ``x0`` where it was not measured at the start, those a close
        comparison may add, and the fresh ones at the returned point."""
        if not self.noisy:
            return self.per_point
        blocks = 1 + (self.average.count > 0) + (self.start_values is None)
        return self.per_point * blocks + self.extension + self.fresh

    @property
    def comparing(self) -> bool:
        """Whether the next final ask compares the final iterate with the start."""
        return self.start is not None and self.compared is None

    def _blocks(self) -> list[str]:
        """The points of the comparison's ask, ``final_evaluations`` values each, in order."""
        blocks = ["iterate"] + (["average"] if self.average.usable else [])
        return blocks + (["start"] if self.start_values is None else [])

    def final_size(self, spent: int, affordable: int | None = None) -> int:
        """The number of points of the next final ask, after ``spent`` evaluations (the
        first records them: the run's before its end, `ended_at`); at most ``affordable``
        (what ``maxtime`` leaves), and at least one: where the ask would take more, a
        comparison with ``x0`` ends as it stands and the returned point gets what is left."""
        n = self._final_size(spent)
        if affordable is None or n <= affordable:
            return n
        if self.comparing or self.confirming:
            self._hurry()
            n = self._final_size(spent)
        self.cut = max(1, min(n, affordable))
        return self.cut

    def _hurry(self) -> None:
        """No time for the comparison with ``x0``: it ends with the values it has (none: the
        final iterate is the answer)."""
        if self.compared is None:
            self.start, self.uncompared = None, self.noisy
            return
        self.round = 0
        self.choice = "start" if self.chose_start() else self.candidate()

    def _final_size(self, spent: int) -> int:
        if self.comparing:
            self.ended_at = spent
            return self.per_point * len(self._blocks())
        if self.confirming:
            return 2 * self.round
        if self.ended_at is None:  # a deterministic run; or a checkpoint from before the share
            return self.fresh
        used = len(self.more_candidate) + len(self.more_start)
        return min(self.fresh, self._share()) + self._extension() - used

    def _share(self) -> int:
        """One `FRESH_SHARE`-th of the run's evaluations (those before its end, `ended_at`,
        and the end's two shares), at least ``final_evaluations``: what the fresh sample at
        the returned point takes, and at most what a close comparison with ``x0`` adds (both
        within what was reserved for them: all of it where ``maxfev`` ended the run, less
        where ``maxiter``, ``maxtime`` or a tolerance ended it earlier)."""
        share = -(
            -self.ended_at // (active().noise.FRESH_SHARE - 2)
        )  # of ended_at and the 2 shares
        return max(self.per_point, share)

    def _extension(self) -> int:
        """The values a close comparison with ``x0`` may add in all: its reserve, within the
        run's share (`_share`); what it leaves goes to the fresh sample."""
        return 0 if self.ended_at is None else min(self.extension, self._share())

    def _values(self, block: str) -> list[float]:
        """The comparison's values at ``block`` (``x0``'s: measured at the start, or there)."""
        if block == "start" and self.start_values is not None:
            return self.start_values
        i = self._blocks().index(block) * self.per_point
        return self.compared[i : i + self.per_point]

    def candidate(self) -> str:
        """The comparison's candidate for ``x``: ``"average"``, unless the final iterate's
        values are significantly the lower or there is no average, ``"iterate"``."""
        if self.compared is None or not self.average.usable:
            return "iterate"
        iterate = self._values("iterate")
        return "iterate" if significantly_lower(iterate, self._values("average")) else "average"

    def _sample(self, block: str) -> list[float]:
        """All the values at ``block`` (the candidate's or ``"start"``) the comparison with
        ``x0`` has: its first and those its rounds added."""
        more = self.more_start if block == "start" else self.more_candidate
        return self._values(block) + more

    def _next_round(self) -> int:
        """The values a side of the next round of the comparison with ``x0``: as many as each
        side has (the sample doubles), within the extension left; 0 where one side's values
        lie significantly below the other's (`significantly_lower`), or neither side varies
        (an exact objective), or the extension is spent."""
        if self.compared is None or self.start is None:
            return 0
        start, candidate = self._sample("start"), self._sample(self.candidate())
        if significantly_lower(candidate, start) or significantly_lower(start, candidate):
            return 0
        if sample_std(start) == 0 and sample_std(candidate) == 0:
            return 0
        left = self._extension() - len(self.more_candidate) - len(self.more_start)
        return min(len(candidate), left // 2)

    def _settle(self) -> None:
        """After the comparison's values or a round's: the size of the next round
        (`_next_round`) and the candidate it measures beside ``x0``, or, with none to come,
        what the comparison returns. Derived from the values, once per ask: every point of
        the next ask reads them."""
        candidate = self.candidate()
        self.round = self._next_round()
        if self.round:
            self.choice = candidate
        else:
            self.choice = "start" if self.chose_start() else candidate

    @property
    def confirming(self) -> bool:
        """Whether the next final ask adds values at the candidate and at ``x0``: the
        comparison is close (`_settle`)."""
        return self.round > 0 and self.final_values is None

    def chose_start(self) -> bool:
        """Whether the comparison keeps the start: the mean or the median of its finite
        values below the candidate's (with the values a close comparison added).

        The run minimises the mean, but ten values of a skewed noise rarely hold the large
        ones that carry it: a point farther from the optimum can show the lower sample mean
        (bbob-noisy's severe multiplicative models, 3 of 60 runs of the noise benchmark
        returned points 1.3-3.4 times farther than ``x0``). The candidate must then also have
        the lower median, which those values' tails do not move. A point in ``x0``'s place
        (`compare_with`) is kept only where its values are significantly the lower
        (`significantly_lower`): it is the lowest of noisy values, the candidate is made from
        every evaluation after it, and where the two are within the noise of each other the
        candidate is the nearer the optimum more often.
        """
        if self.compared is None:
            return False
        start, final = self._sample("start"), self._sample(self.candidate())
        if self.start_name is not None:
            return significantly_lower(start, final)
        if finite_mean(start) < finite_mean(final):
            return True
        return finite_median(start) < finite_median(final)

    def chosen(self) -> str:
        """What the comparison returns: ``"start"``, ``"average"`` or ``"iterate"``."""
        if self.choice is not None and not self.round:  # settled
            return self.choice
        return "start" if self.chose_start() else self.candidate()

    def final_point(self, i: int, iterate: Callable[[], Any], to_user: Callable) -> Any:
        """Point ``i`` of the final ask (a new array): the final iterate (``iterate()``), the
        average of the centres or the start for the comparison, or the point it chose."""
        if self.comparing:
            block = self._blocks()[i // self.per_point]
        elif self.confirming:
            block = self.choice if i < self.round else "start"
        else:
            block = self.chosen()
        if block == "start":
            return to_user(self.start)
        if block == "average":
            return to_user(self.average.mean)
        return iterate()

    def observe(self, values: list[float | None], point: Callable[[int], Any]) -> None:
        """Keep the best finite point among those with a value; ``point(i)`` makes point
        ``i`` again (the arrays handed out may have been modified)."""
        value, i = math.inf, -1
        for k, v in enumerate(values):  # the first of the lowest finite values
            if v is not None and v < value and v != -math.inf:
                value, i = v, k
        if i < 0 or (self.best is not None and value >= self.best[0]):
            return
        xp = self.xp
        row = point(i)
        # a finite sum means finite entries; only an overflowing sum pays for the d-sized mask
        if not math.isfinite(float(xp.sum(row))) and not bool(xp.all(xp.isfinite(row))):
            return
        self.best = (value, row)

    def lowest(self) -> float | None:
        """What ``ftarget`` compares: the lowest value evaluated; ``None`` with ``noisy=True``
        or before a finite value (the iteration's f estimate then)."""
        return None if self.noisy or self.best is None else self.best[0]

    def lowest_evaluated(self) -> float | None:
        """The lowest value evaluated, noisy or not; ``None`` before a finite one."""
        return None if self.best is None else self.best[0]

    def take_final(self, values: list[float]) -> tuple[bool, str]:
        """The values of a final ask: whether the run is done, and what the message adds."""
        if self.comparing or self.confirming:
            if self.comparing:
                self.compared = list(values)
            else:
                half = len(values) // 2
                self.more_candidate += values[:half]
                self.more_start += values[half:]
            self._settle()
            if self.confirming:  # close: more values at both
                return False, ""
            chosen = self.choice  # the next final ask measures it
            if chosen == "start":
                what = "final iterate" if self.candidate() == "iterate" else "centres' average"
                if self.start_name is None:
                    return False, f" The {what}'s mean value was above the start's: x is the start."
                name = self.start_name
                return False, f" x is {name}: the {what}'s values were significantly above its."
            if chosen == "average":
                return False, " x is the average of the last iterations' centres."
            return False, ""
        self.final_values = list(values)
        note = ""
        if self.cut is not None:
            note = f" maxtime left room for {self.cut} final evaluation(s) at the returned point."
        if self.uncompared:
            start = self.start_name or "x0"
            note += f" It left no time to compare the final iterate with {start}: x is the final"
            note += " iterate."
        if self.noisy and not any(math.isfinite(v) for v in values):
            return True, note + (
                " Every final evaluation failed (NaN or inf): x and fun are the lowest "
                "finite value seen, a biased pick among noisy values."
            )
        return True, note

    def answer(self, iterate: Callable[[], Any], to_user: Callable) -> tuple[Any, float, dict]:
        """The returned point, its value and the extra fields (module docstring)."""
        final = [v for v in self.final_values or () if math.isfinite(v)]  # NaN: missing
        value = finite_mean(final)
        if self.noisy and math.isfinite(value):
            std = sample_std(final)  # nan from one value
            extra = {"fun_std_error": std / math.sqrt(len(final)), "noise_std": std}
            return self.final_point(0, iterate, to_user), value, extra
        extra = {"fun_std_error": math.nan, "noise_std": math.nan} if self.noisy else {}
        if self.best is None:
            return iterate(), math.nan, extra
        return self.xp.asarray(self.best[1], copy=True), self.best[0], extra

    def state(self) -> dict[str, Any]:
        return {
            "best": None if self.best is None else list(self.best),
            "final_values": self.final_values,
            "start": self.start,
            "start_values": self.start_values,
            "start_name": self.start_name,
            "compared": self.compared,
            "more_candidate": self.more_candidate,
            "more_start": self.more_start,
            "ended_at": self.ended_at,
            "centre_average": self.average.state(),
            "cut": self.cut,
            "uncompared": self.uncompared,
        }

    def load_state(self, state: dict[str, Any], vector: Callable[[Any], Any]) -> None:
        """Continue from `state`; ``vector`` turns a stored array into one of the run's."""
        best = state["best"]
        self.best = None if best is None else (float(best[0]), vector(best[1]))
        final = state["final_values"]
        self.final_values = None if final is None else [float(v) for v in final]
        start, compared = state.get("start"), state.get("compared")
        self.start = None if start is None else vector(start)
        name = state.get("start_name")
        self.start_name = None if name is None else str(name)
        self.compared = None if compared is None else [float(v) for v in compared]
        # checkpoints before a close comparison could add values have none
        self.more_candidate = [float(v) for v in state.get("more_candidate", [])]
        self.more_start = [float(v) for v in state.get("more_start", [])]
        self.ended_at = state.get("ended_at")
        self.cut = state.get("cut")  # checkpoints before maxtime bounded the end: none
        self.uncompared = bool(state.get("uncompared", False))
        self.average.load_state(state.get("centre_average"), vector)
        start_values = state.get("start_values")
        self.start_values = None if start_values is None else [float(v) for v in start_values]
        if self.compared is not None:
            self._settle()
