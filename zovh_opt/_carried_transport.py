r"""The kept pairs' transport to the next iterate, formed a step ahead.

The diagonal model moves a kept pair of block ``b`` to the iterate with
:math:`\delta_{bm} + u_{bm}^T (s_b \circ h \circ (x - x_b))` (`zovh_opt.estimators.
transported_differences`). Formed when it is needed, those inner products are a pass over
the kept rows of their own before the step's pass, which needs them as coefficients: where
the rows are drawn again rather than held, that pass alone draws ``(N - 1) P`` of the
iteration's ``2 N P`` rows. They can instead be formed in the step's pass of the iteration
before, which draws the same rows: there, the next iterate is
:math:`x_{t+1} = a - \eta\, p_t` (``a`` the current iterate, or the step rule's centre where
the trial is undone; :math:`\eta` the rate, known only after the pass) and the next model is
:math:`h_{t+1} = \kappa\, h_t \circ e^{\beta \rho_t}` (`zovh_opt._curvature`: ``rho`` is
local to each coordinate, the scalar :math:`\kappa` known only after the update), so

.. math:: u_{bm}^T (s_b \circ h_{t+1} \circ (x_{t+1} - x_b))
          = \kappa\, (A_{bm} - \eta\, B_{bm}), \quad
          A_b = U_b (s_b\, h_t e^{\beta\rho_t} (a - x_b)), \;
          B_b = U_b (s_b\, h_t e^{\beta\rho_t} p_t),

two products per row formed span by span beside the step's sums. `CarriedTransport` keeps
``A`` and ``B`` with what they assume (the next iterate, as an object, and the factor); an
iteration whose iterate is not that one (a move the record did not see, a restart, a
checkpoint of another run) forms the products again from the rows.
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
        self.target = start  # the next iterate the products are for (compared as an object)
        self.rate = 0.0
        self.factor = math.nan  # kappa; nan until the model's update gives it
        self.products = products

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

    def state(self, x: Any) -> dict[str, Any] | None:
        """For a checkpoint taken at the iterate ``x`` (None: nothing it could use)."""
        if x is not self.target or not math.isfinite(self.factor):
            return None
        blocks = sorted(self.products)
        return {
            "blocks": blocks,
            "rate": self.rate,
            "factor": self.factor,
            "A": [self.products[b][0] for b in blocks],
            "B": [self.products[b][1] for b in blocks],
        }

    @classmethod
    def from_state(cls, state: dict[str, Any] | None, x: Any) -> CarriedTransport | None:
        """The record of a checkpoint's `state`, for its iterate ``x``."""
        if state is None:
            return None
        products = {}
        for b, A, B in zip(state["blocks"], state["A"], state["B"], strict=True):
            products[int(b)] = (
                np.asarray(A, dtype=np.float64),
                None if B is None else np.asarray(B, dtype=np.float64),
            )
        record = cls(x, products)
        record.rate, record.factor = float(state["rate"]), float(state["factor"])
        return record
