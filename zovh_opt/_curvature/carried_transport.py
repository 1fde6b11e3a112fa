"""The kept pairs' transport to the next iterate, formed a step ahead.

The diagonal model moves a kept pair to the iterate by inner products with its rows
(`zovh_opt.estimators.transported_differences`). Formed when needed, they are a pass over the
kept rows of their own; where rows are drawn again rather than held, that pass alone draws
``(N - 1) P`` of the iteration's ``2 N P`` rows. `CarriedTransport` forms them in the step's
pass of the iteration before, as two products per row whose combination waits for the rate
and the model's scale; an iteration whose iterate is not the one assumed forms them again,
and an undone trial takes the record before's with this update's scale (`adopt`). The
algebra: theory page, *The run's parts in detail*, *The kept pairs' transport*.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


class CarriedTransport:
    """The products ``A_b``, ``B_b`` (module docstring) of the blocks a step's pass formed
    them for, and what they assume.

    Parameters
    ----------
    start : array
        The iterate ``a`` the next one is measured from (``x_{t+1} = a`` until `moved`).
    products : dict
        Block number -> ``(A_b, B_b)``, host float64 arrays of ``P`` (``B_b`` None where
        the pass formed no step: then ``x_{t+1} = a``).
    """

    def __init__(self, start: Any, products: dict[int, tuple[np.ndarray, np.ndarray | None]]):
        self.start = start  # a: where the next iterate is measured from
        self.target = start  # the next iterate the products are for (compared as an object)
        self.rate = 0.0
        self.factor = math.nan  # kappa; nan until the model's update gives it
        self.products = products

    def adopt(self, previous: CarriedTransport, blocks: list[int]) -> None:
        """After an undone trial (this record's ``a`` is the step rule's centre): the
        ``blocks`` it has no products of, from the ``previous`` record where that one was
        measured from the same centre, as ``kappa_{t-1} A_b`` (the module docstring)."""
        if previous.start is not self.start or not math.isfinite(previous.factor):
            return
        for b in blocks:
            if b in previous.products and b not in self.products:
                self.products[b] = (previous.factor * previous.products[b][0], None)

    def moved(self, before: Any, after: Any, rate: float) -> None:
        """The iterate moved from ``before`` to ``after = before - rate p``."""
        if self.target is before and self.rate == 0.0:
            self.target, self.rate = after, float(rate)
        else:
            self.target = None

    def deltas(self, block: int, x: Any) -> np.ndarray | None:
        """``kappa (A_b - eta B_b)`` of ``block`` for the iterate ``x`` (None where the record
        has none for it)."""
        if x is not self.target or not math.isfinite(self.factor) or block not in self.products:
            return None
        A, B = self.products[block]
        if self.rate != 0.0:
            if B is None:
                return None
            A = A - self.rate * B
        return self.factor * A

    def state(self, x: Any, centre: Any) -> dict[str, Any] | None:
        """For a checkpoint taken at the iterate ``x`` with the step rule's ``centre`` (None:
        nothing it could use)."""
        if x is not self.target or not math.isfinite(self.factor):
            return None
        blocks = sorted(self.products)
        return {
            "from_centre": self.start is centre,
            "blocks": blocks,
            "rate": self.rate,
            "factor": self.factor,
            "A": [self.products[b][0] for b in blocks],
            "B": [self.products[b][1] for b in blocks],
        }

    @classmethod
    def from_state(
        cls, state: dict[str, Any] | None, x: Any, centre: Any
    ) -> CarriedTransport | None:
        """The record of a checkpoint's `state`, for its iterate ``x`` and ``centre``."""
        if state is None:
            return None
        products = {}
        for b, A, B in zip(state["blocks"], state["A"], state["B"], strict=True):
            products[int(b)] = (
                np.asarray(A, dtype=np.float64),
                None if B is None else np.asarray(B, dtype=np.float64),
            )
        record = cls(x, products)
        record.start = centre if state["from_centre"] else None
        record.rate, record.factor = float(state["rate"]), float(state["factor"])
        return record
