"""Whether the objective is noisy: repeated evaluations at ``x0`` before the first iteration.

A deterministic ``fun`` gives the same value at the same point, bit for bit; a noisy one does
not. So a run measures ``x0`` before it iterates:

- ``noisy="auto"`` (the default, with the step rule): ``x0`` twice. Equal values (or values
  that failed) mean a deterministic objective, and the run ends as ``noisy=False`` does.
  Different values mean noise: ``x0`` is measured until it has ``final_evaluations`` values
  (10 by default, fewer where ``maxfev`` cannot pay for them), and the run goes on as with
  ``noisy=True``;
- ``noisy=True``: ``x0`` ``final_evaluations`` times;
- ``noisy=False``, and ``"auto"`` with a fixed learning rate (the paper's Algorithm 1, which
  must run as published): no measurement.

When noise is known the run acts on it (`NoiseMonitor.act`): the step rule keeps the
smoothing radius above the noise (`zovh_opt._step_size`), the tolerances that noise alone
would trigger (``ftol``, ``xtol`` left ``"auto"``) are off, and the returned point is chosen
by mean values and measured afresh (`zovh_opt._returned_point`); the values at ``x0`` serve as
its side of that comparison.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["NoiseMonitor", "PROBE"]

PROBE = 2  # values at x0 that tell a deterministic objective from a noisy one
NOISY_EVALUATIONS = 10  # final_evaluations' default once the objective is noisy


def sample_std(values: list[float]) -> float:
    """The sample standard deviation of the finite ``values`` (``nan`` below two)."""
    finite = [v for v in values if math.isfinite(v)]
    n = len(finite)
    if n < 2:
        return math.nan
    mean = sum(finite) / n
    return math.sqrt(sum((v - mean) * (v - mean) for v in finite) / (n - 1))


class NoiseMonitor:
    """The measurement of ``x0`` that decides whether a run is noisy (module docstring).

    Parameters
    ----------
    mode : bool or "auto"
        The ``noisy`` option.
    adaptive : bool
        Whether the run has the step rule (``"auto"`` measures only then).
    evaluations : int or None
        Values at ``x0`` (and at the returned point) once the objective is noisy; ``None``:
        10.
    start : array
        ``x0`` in the run's coordinates (steps make new arrays: a reference).
    """

    def __init__(self, mode: Any, adaptive: bool, evaluations: int, start: Any) -> None:
        self.mode = mode if mode != "auto" or adaptive else False
        self.evaluations = NOISY_EVALUATIONS if evaluations is None else evaluations
        self.values: list[float] = []  # at x0
        self.detected = self.mode is True
        self.done = self.mode is False  # the measurement of x0 is over
        self.start = None if self.done else start  # no copy of x0 held without a use

    @property
    def auto(self) -> bool:
        return self.mode == "auto"

    def size(self) -> int:
        """The number of points of the next measurement of ``x0``."""
        wanted = self.evaluations if self.detected else PROBE
        return max(wanted - len(self.values), 0)

    def take(self, values: list[float], room: int) -> None:
        """The values of a measurement of ``x0``. ``room``, the evaluations ``maxfev``
        leaves after one iteration, caps the values at ``x0`` and at the end
        (``3 final_evaluations`` in all)."""
        self.values.extend(values)
        finite = [v for v in self.values if math.isfinite(v)]
        if not self.detected and any(v != finite[0] for v in finite):
            self.detected = True
            affordable = (room + len(self.values)) // 3
            self.evaluations = max(len(self.values), min(self.evaluations, affordable))
        self.done = self.size() == 0
        if self.done and not self.detected:
            self.start = None  # a deterministic run keeps no copy of x0

    def std(self) -> float:
        """The sample standard deviation of the values at ``x0`` (0 for a deterministic
        objective, ``nan`` before two values)."""
        return sample_std(self.values)

    def fields(self) -> dict[str, float]:
        """The result's ``noise_std`` where ``x0`` was measured (the returned point's own,
        measured at the end of a noisy run, takes its place)."""
        return {} if self.mode is False else {"noise_std": self.std()}

    def act(self, returned: Any, stopping: Any, control: Any) -> None:
        """Where noise is known (at the end of the measurement of ``x0``; with
        ``noisy=True`` the returned point also from the start): the returned point is
        chosen by means (``x0``'s values are its side of the comparison), the tolerances that
        noise triggers go (``stopping``), and the step rule (``control``) keeps its radius
        above the noise; each part may be ``None`` (not yet built)."""
        if not self.detected:
            return
        returned.become_noisy(self.evaluations, self.start, self.values)
        if stopping is not None:
            stopping.noisy()
        if control is not None:
            control.noise_found(self.std() ** 2)

    def note(self) -> str:
        """What the message adds once ``"auto"`` found noise."""
        if not (self.auto and self.detected):
            return ""
        return (
            f" Noise detected (values at x0 differed on repeats, sd {self.std():.3g}): x was "
            "chosen by mean values and fun is the mean of fresh values there (as with "
            "noisy=True); the tolerances left 'auto' were off."
        )

    def state(self) -> dict[str, Any]:
        return {
            "noise_values": list(self.values),
            "noise_detected": self.detected,
            "noise_done": self.done,
            "noise_evaluations": self.evaluations,
            "noise_start": None if self.done else self.start,
        }

    def load_state(self, state: dict[str, Any], vector: Any) -> None:
        """Continue from `state` (``vector`` turns a stored array into one of the run's);
        checkpoints written before the measurement of ``x0`` continue without one (their
        ``noisy=True`` compares with ``x0`` at the end)."""
        if "noise_values" not in state:
            self.values, self.done = [], True
            return
        self.values = [float(v) for v in state["noise_values"]]
        self.detected = bool(state["noise_detected"])
        self.done = bool(state["noise_done"])
        self.evaluations = int(state["noise_evaluations"])
        if not self.done:
            self.start = vector(state["noise_start"])
