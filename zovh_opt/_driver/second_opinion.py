"""The quasi-Newton phase's second opinion on a gradient its line search contradicts.

A smooth ``f``'s miss of the slope's prediction, ``(f(x + alpha p) - f(x)) / alpha - g'p``,
shrinks with ``alpha``; a miss that stays while the trials halve is a slope the values do not
have, such as one forward difference that read an outlier (bbob-noisy's Cauchy model leaves
95 % of its values exact, so ``x0``'s two values repeat and the run takes the phase). Then the
centre and the difference that contributes most to ``g'p`` are measured again: a value that
does not repeat ends the phase on noise; a deterministic ``f`` pays two evaluations. Theory
page, *Mild noise at small d*, *The second opinion*.
"""

from __future__ import annotations

import math
from typing import Any

from .._noise.monitor import repeats
from ..tuning import active

__all__ = ["SecondOpinion"]


class SecondOpinion:
    """The second opinion's test, ask and values, mixed into `QuasiNewtonPhase`, whose state
    they read and write: ``x``, ``fx``, ``g``, ``p``, ``slope``, ``alpha``, ``recheck``,
    ``miss``, ``contradicted``, ``opinion``, ``opinions`` and the phase's end (``ended``,
    ``noisy``, ``noise_values``); the gradient's recheck of its centre ends the phase through
    `_found_noise` too."""

    def _contradicted(self, value: float) -> bool:
        """Whether a second opinion on the gradient is due after the failed trial's
        ``value``: `CONTRADICTED_TRIALS` failed trials in a row whose miss of the slope's
        prediction, ``(value - f(x)) / alpha - g'p``, shrank by less than
        `CONTRADICTED_SHRINK` (a quadratic's miss shrinks with ``alpha``, which each failed
        trial cuts to half or less: a miss that stays is a slope the values do not have, such
        as one difference that read an outlier), where noise is not ruled out, once a line
        search."""
        rules = active().quasi_newton
        miss = (value - self.fx) / self.alpha - self.slope
        stays = math.isfinite(miss) and miss >= rules.CONTRADICTED_SHRINK * self.miss
        self.contradicted = self.contradicted + 1 if stays else 0
        self.miss = miss
        due = self.contradicted >= rules.CONTRADICTED_TRIALS > 0
        return due and self.recheck and self.opinions == 0

    def _dominant(self) -> int:
        """The coordinate whose difference contributes most to the slope ``g'p``."""
        return int(self.xp.argmax(self.xp.abs(self.g * self.p)))

    def _second_opinion(self, values: list[float]) -> None:
        """The centre's and the dominant difference's values again: where one does not
        repeat, ``f`` is noisy and the phase ends (`_found_noise`); else the line search
        goes on."""
        j, self.opinion = self.opinion, None
        self.opinions += 1
        centre, forward = values
        step = self._steps(j, j + 1)
        before = self.fx + float(self.g[j] * step[0])  # the difference's first value
        if not repeats(centre, self.fx, self.eps):
            self._found_noise(self.fx, centre, at_centre=True)
        elif not repeats(forward, before, self.eps):
            self._found_noise(before, forward, at_centre=False)

    def _found_noise(self, old: float, new: float, at_centre: bool) -> None:
        """A value that did not repeat (``old``, then ``new``, in the phase's unit) ends the
        phase on noise; where it was the centre's and both values are above ``f(x0)`` (a
        step accepted on an outlier), the phase's point is ``x0`` again."""
        self.noisy, self.ended = True, "noise"
        self.noise_values = [old * self.f_unit, new * self.f_unit]
        if at_centre and self.previous is not None and max(old, new) >= self.f_start:
            self.x = self.start

    def _opinion(self, i: int) -> Any:
        """The second opinion's point ``i`` (a new array): the centre, then ``x + h_j e_j``."""
        row = self.xp.asarray(self.x, copy=True)
        if i == 1:
            j = self.opinion
            row[j : j + 1] = self.x[j : j + 1] + self._steps(j, j + 1)
        return row
