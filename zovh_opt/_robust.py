"""Robust statistics of one batch's values, for runs whose objective is known to be noisy.

Noise with heavy tails (outliers, as bbob-noisy's Cauchy model makes in a fifth of the calls)
ruins means: one outlier in a batch moves its mean, its spread, and the difference of its
pair, by as much as the outlier. Once the run knows the objective is noisy the curvature model
takes its numbers through these instead: the scale of a batch by its median absolute
deviation (``1.4826 MAD``, the standard deviation for normal values), and the pairs'
differences and residuals clipped at ``CLIP`` such scales from their median. For normal noise
clipping at three scales changes 0.3 % of the values, and those only in their excess.

A pair an outlier hit is found by its *residual* (its mean less the model's prediction),
which without outliers spreads only by the noise and the model's misfit, not by the slope:
beyond ``OUTLIER`` robust scales from the residuals' median (`outliers`) the pair leaves the
batch, its difference and its residual (clipping left the outlier's size at three scales in
both, and on a curvature model that learns from the residuals that was enough to stop a
run: bbob-noisy's Cauchy sphere at d = 20 ended at 4e-5 to 1e-4 of its start's gap,
with the rule at 1e-10 to 4e-10 of it). With normal noise it almost never acts: in batches
of 24 pairs (the noisy model's at d = 20) 1 pair in 10^5 lies that far, from the noise of
the sample's MAD itself (in batches of 12, 3 in 10^4).
"""

from __future__ import annotations

from typing import Any

import numpy as np

CLIP = 3.0  # robust scales from the median beyond which a value is clipped
OUTLIER = 8.0  # and beyond which a pair's residual marks the pair as hit by an outlier
NORMAL_MAD = 1.4826  # the standard deviation of normal values over their MAD


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
    return np.clip(values, centre - CLIP * spread, centre + CLIP * spread)


def outliers(residuals: np.ndarray) -> np.ndarray:
    """Which of the pairs' ``residuals`` (host floats) lie beyond ``OUTLIER`` robust scales
    from their median: the pairs an outlier hit. None where that scale is 0."""
    centre, spread = float(np.median(residuals)), scale(residuals)
    if not spread > 0:
        return np.zeros(residuals.shape, dtype=bool)
    return np.abs(residuals - centre) > OUTLIER * spread
