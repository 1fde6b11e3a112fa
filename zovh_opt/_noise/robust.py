"""Robust statistics of one batch's values, for runs whose objective is known to be noisy.

One outlier moves a batch's mean, spread and pair differences by its whole size; once noise is
known the curvature model takes its numbers through these instead: a batch's scale by its
median absolute deviation (``1.4826 MAD``), differences and residuals clipped at `CLIP`
scales, and the pairs whose residual (mean less the model's prediction) lies beyond `OUTLIER`
scales left out of the batch (`outliers`). Where more than half the pairs are hit the MAD is
an outlier's, and from `QUARTILE_PAIRS` pairs the lower quartile's scale finds them
(`quartile_scale`). A batch with a value far above the run's others is no sample of ``f``
near the centre at all (`far_above`). Evidence: theory page, *Noise*: *Pairs an outlier hit
leave the batch*, *Batches with more than half their pairs hit*, *A batch far above the run's
others*.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..tuning import active

NORMAL_MAD = 1.4826  # the standard deviation of normal values over their MAD
NORMAL_QUARTILE = 0.3186394  # the lower quartile of |N(0, 1)|: Phi^-1(5/8)


def scale(values: Any) -> float:
    """``1.4826`` times the median absolute deviation of ``values`` (host floats: an array or
    a sequence)."""
    values = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):  # huge values: an inf or nan scale
        return NORMAL_MAD * float(np.median(np.abs(values - np.median(values))))


def clipped(values: np.ndarray) -> np.ndarray:
    """``values`` (host floats) clipped at ``CLIP`` robust scales from their median; as they
    are where that scale is 0."""
    centre, spread = float(np.median(values)), scale(values)
    if not spread > 0:
        return values
    return np.clip(
        values, centre - active().noise.CLIP * spread, centre + active().noise.CLIP * spread
    )


def quartile_scale(residuals: np.ndarray) -> float:
    """The scale that finds outliers among the pairs' ``residuals`` (host floats): `scale`
    (the MAD's), or from `QUARTILE_PAIRS` pairs on the lower quartile of the absolute
    deviations from the median over `NORMAL_QUARTILE` where that is `OUTLIER` times smaller
    and not 0 (more than half the pairs hit: the module docstring; a quarter of the pairs on
    the median itself, a flat ``f``, keep the MAD's)."""
    if residuals.shape[0] < active().noise.QUARTILE_PAIRS:
        return scale(residuals)
    with np.errstate(over="ignore", invalid="ignore"):
        deviations = np.abs(residuals - np.median(residuals))
        spread = NORMAL_MAD * float(np.median(deviations))  # `scale`, from the same deviations
        if not spread > 0:
            return spread
        lower = float(np.quantile(deviations, 0.25)) / NORMAL_QUARTILE
    return lower if 0 < lower < spread / active().noise.OUTLIER else spread


def outliers(residuals: np.ndarray) -> np.ndarray:
    """Which of the pairs' ``residuals`` (host floats) lie beyond ``OUTLIER`` robust scales
    (`quartile_scale`) from their median: the pairs an outlier hit. None where that scale is
    0."""
    centre, spread = float(np.median(residuals)), quartile_scale(residuals)
    if not spread > 0:
        return np.zeros(residuals.shape, dtype=bool)
    return np.abs(residuals - centre) > active().noise.OUTLIER * spread


def far_above(values: list[float], lowest: float, scale: Callable[[], float]) -> bool:
    """Whether a batch's ``values`` (finite host floats) hold one more than `FAR_ABOVE` times
    the run's scale of ``f`` above ``lowest`` (the lowest value evaluated): ``scale()`` is
    ``f``'s at ``x0`` (its values' mean magnitude and spread), or ``|lowest|`` if larger. Not
    relative to ``lowest`` alone: near a minimum of 0 a sound batch is many times above it.
    ``scale`` is called only where the batch is that far above ``|lowest|`` (it reads every
    value at ``x0``, up to a thousand, which an iteration need not pay)."""
    excess = max(values) - lowest
    if not excess > active().noise.FAR_ABOVE * abs(lowest):
        return False
    reach = active().noise.FAR_ABOVE * max(abs(lowest), scale())
    return reach > 0 and excess > reach
