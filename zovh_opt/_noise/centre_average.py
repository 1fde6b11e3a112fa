"""The average of a noisy run's recent centres: the second candidate for its answer.

Where noise decides part of each step, the final centre sits where the last steps' noise put
it; averaging a stochastic method's iterates removes that noise (Polyak and Juditsky, 1992),
and polynomially decaying weights forget the early ones (Shamir and Zhang, 2013)::

    xbar_k = (1 - w_k) xbar_{k-1} + w_k c_k,   w_k = (DECAY + 1) / (k + DECAY)

over the centres since the noise was known. It lags a run that still descends fast, so the
run's end measures both and keeps the final iterate only where it is significantly the lower
(`zovh_opt._driver.returned_point`). One ``d``-vector, kept by noisy runs with the step rule
only. Evidence: the theory page, *The run's parts in detail*.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..tuning import active

__all__ = ["CentreAverage"]


class CentreAverage:
    """The polynomial-decay average of the centres it is given (module docstring)."""

    def __init__(self) -> None:
        self.mean: Any = None  # the average, an array of the run's (None before a centre)
        self.count = 0  # centres in it

    def add(self, centre: Any) -> None:
        """One more iteration's centre (an array of the run's; not kept, not written)."""
        self.count += 1
        if self.mean is None:
            self.mean = centre + 0  # a copy in the centre's namespace, dtype and device
            return
        weight = (active().noise.DECAY + 1) / (self.count + active().noise.DECAY)
        self.mean *= 1.0 - weight  # in place: one temporary a centre (its own array)
        self.mean += weight * centre

    def forget(self) -> None:
        """The run left its neighbourhood (the phase starts again elsewhere): start anew."""
        self.mean, self.count = None, 0

    @property
    def usable(self) -> bool:
        """Whether the average holds more than one centre (one is the iterate itself)."""
        return self.count > 1

    def state(self) -> dict[str, Any]:
        return {"mean": self.mean, "count": self.count}

    def load_state(self, state: dict[str, Any] | None, vector: Callable[[Any], Any]) -> None:
        """Continue from `state` (``None``: a checkpoint written before the average)."""
        if state is None or state["mean"] is None:
            self.forget()
            return
        self.mean, self.count = vector(state["mean"]), int(state["count"])
