"""The end of a run: which point it returns, and the value it reports there.

- **By default**, for a deterministic objective, ``x`` is the point with the lowest value
  among all evaluated points (the queries, ``x0`` and the final iterate) whose value is
  finite, and ``fun`` is that value: ``fun == f(x)``, whatever failed on the way.
- **For a noisy objective** (``noisy=True``, or noise found by ``noisy="auto"``,
  `zovh_opt._noise`) the minimum of noisy values is a biased pick (it favours points whose
  noise was negative). ``x0`` is measured ``final_evaluations`` times before the first
  iteration; the run ends with ``final_evaluations`` fresh values at the final iterate, and
  ``x`` is the final iterate where both the mean and the median of its values are the lower,
  else ``x0`` (where the noise buried the slope the step rule accepts trials by chance and the
  iterate can drift uphill; a skewed noise's sample mean can favour the worse point); then
  ``final_evaluations`` values at ``x``, which the choice never saw, give ``fun``, unbiased,
  its standard error ``fun_std_error`` and the noise's standard deviation there,
  ``noise_std``. NaN and inf values are missing data in both: left out of the means, and a
  side with no finite value loses. (Checkpoints written before ``x0`` was measured at the
  start measure it at the end, beside the final iterate.)
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from typing import Any

__all__ = ["ReturnedPoint", "finite_mean", "mean", "sample_std"]


def mean(values: list[float]) -> float:
    """Plain mean: overflows to inf and gives nan for inf - inf, where ``math.fsum`` raises."""
    return sum(values) / len(values)


def finite_mean(values: list[float]) -> float:
    """The mean of the finite ``values``; ``inf`` when there is none (such a side loses)."""
    finite = [v for v in values if math.isfinite(v)]
    return mean(finite) if finite else math.inf


def finite_median(values: list[float]) -> float:
    """The median of the finite ``values``; ``inf`` when there is none (such a side loses)."""
    finite = [v for v in values if math.isfinite(v)]
    return statistics.median(finite) if finite else math.inf


def sample_std(values: list[float]) -> float:
    """The sample standard deviation of the finite ``values`` (``nan`` below two)."""
    finite = [v for v in values if math.isfinite(v)]
    n = len(finite)
    if n < 2:
        return math.nan
    mean = sum(finite) / n
    return math.sqrt(sum((v - mean) * (v - mean) for v in finite) / (n - 1))


class ReturnedPoint:
    """The best point so far, and with ``noisy=True`` the final comparison with ``x0``.

    Parameters
    ----------
    noisy : bool
        Whether the run ends with the comparison and a fresh mean (module docstring).
    final_evaluations : int
        Values per point in each final ask.
    start : array or None
        With ``noisy=True``, ``x0`` in the run's coordinates (steps make new arrays: a
        reference).
    xp : namespace
        The user's array namespace.
    """

    def __init__(self, noisy: bool, final_evaluations: int, start: Any, xp: Any) -> None:
        self.noisy = noisy
        self.per_point = final_evaluations
        self.xp = xp
        self.best: tuple[float, Any] | None = None  # lowest finite evaluated value, its point
        self.start = start if noisy else None
        self.start_values: list[float] | None = None  # x0's, measured before the run
        self.compared: list[float] | None = None  # the comparison's values, once in
        self.final_values: list[float] | None = None

    def become_noisy(self, evaluations: int, start: Any, start_values: list[float]) -> None:
        """The objective is noisy: end with the comparison with ``x0``, whose values are
        ``start_values``, and a fresh mean, each of ``evaluations`` values."""
        self.noisy, self.per_point = True, evaluations
        self.start, self.start_values = start, list(start_values)

    @property
    def reserve(self) -> int:
        """Evaluations after the last iteration: ``final_evaluations``; twice as many for a
        noisy objective (the final iterate, then the returned point), three times where
        ``x0`` was not measured at the start."""
        if not self.noisy:
            return self.per_point
        return self.per_point * (2 if self.start_values is not None else 3)

    @property
    def comparing(self) -> bool:
        """Whether the next final ask compares the final iterate with the start."""
        return self.start is not None and self.compared is None

    def final_size(self) -> int:
        """The number of points of the next final ask."""
        both = self.comparing and self.start_values is None
        return self.per_point * (2 if both else 1)

    def chose_start(self) -> bool:
        """Whether the comparison keeps the start: the mean or the median of its finite
        values below the final iterate's.

        The run minimises the mean, but ten values of a skewed noise rarely hold the large
        ones that carry it: a point farther from the optimum can show the lower sample mean
        (bbob-noisy's severe multiplicative models, 3 of 60 runs of the noise benchmark
        returned points 1.3-3.4 times farther than ``x0``). The final iterate must then also
        have the lower median, which those values' tails do not move.
        """
        if self.compared is None:
            return False
        n = self.per_point
        start = self.compared[n:] if self.start_values is None else self.start_values
        final = self.compared[:n]
        if finite_mean(start) < finite_mean(final):
            return True
        return finite_median(start) < finite_median(final)

    def final_point(self, i: int, iterate: Callable[[], Any], to_user: Callable) -> Any:
        """Point ``i`` of the final ask (a new array): the final iterate (``iterate()``), the
        start for the second half of a comparison, or the point the comparison chose."""
        if self.comparing:
            if self.start_values is None and i >= self.per_point:
                return to_user(self.start)
            return iterate()
        if self.chose_start():
            return to_user(self.start)
        return iterate()

    def observe(self, values: list[float | None], point: Callable[[int], Any]) -> None:
        """Keep the best finite point among those with a value; ``point(i)`` makes point
        ``i`` again (the arrays handed out may have been modified)."""
        finite = [(v, i) for i, v in enumerate(values) if v is not None and math.isfinite(v)]
        if not finite:
            return
        value, i = min(finite)
        if self.best is not None and value >= self.best[0]:
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

    def take_final(self, values: list[float]) -> tuple[bool, str]:
        """The values of a final ask: whether the run is done, and what the message adds."""
        if self.comparing:
            self.compared = list(values)  # the next final ask measures the choice
            if self.chose_start():
                return False, (
                    " The final iterate's mean value was above the start's: x is the start."
                )
            return False, ""
        self.final_values = list(values)
        if self.noisy and not any(math.isfinite(v) for v in values):
            return True, (
                " Every final evaluation failed (NaN or inf): x and fun are the lowest "
                "finite value seen, a biased pick among noisy values."
            )
        return True, ""

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
            "compared": self.compared,
        }

    def load_state(self, state: dict[str, Any], vector: Callable[[Any], Any]) -> None:
        """Continue from `state`; ``vector`` turns a stored array into one of the run's."""
        best = state["best"]
        self.best = None if best is None else (float(best[0]), vector(best[1]))
        final = state["final_values"]
        self.final_values = None if final is None else [float(v) for v in final]
        start, compared = state.get("start"), state.get("compared")
        self.start = None if start is None else vector(start)
        self.compared = None if compared is None else [float(v) for v in compared]
        start_values = state.get("start_values")
        self.start_values = None if start_values is None else [float(v) for v in start_values]
