"""Robust statistics of one batch's values, for runs whose objective is known to be noisy.

Noise with heavy tails (outliers, as bbob-noisy's Cauchy model makes in a fifth of the calls)
ruins means: one outlier in a batch moves its mean, its spread, and the difference of its
pair, by as much as the outlier. Once the run knows the objective is noisy the curvature model
takes its numbers through these instead: the scale of a batch by its median absolute
deviation (``1.4826 MAD``, the standard deviation for normal values), and the pairs'
differences and residuals clipped at ``CLIP`` such scales from their median. For normal noise
clipping at three scales changes 0.3 % of the values, and those only in their excess.
"""

from __future__ import annotations

import numpy as np

CLIP = 3.0  # robust scales from the median beyond which a value is clipped
NORMAL_MAD = 1.4826  # the standard deviation of normal values over their MAD


def scale(values: np.ndarray) -> float:
    """``1.4826`` times the median absolute deviation of ``values`` (host floats)."""
    with np.errstate(over="ignore", invalid="ignore"):  # huge values: an inf or nan scale
        return NORMAL_MAD * float(np.median(np.abs(values - np.median(values))))


def clipped(values: np.ndarray) -> np.ndarray:
    """``values`` (host floats) clipped at ``CLIP`` robust scales from their median; as they
    are where that scale is 0."""
    centre, spread = float(np.median(values)), scale(values)
    if not spread > 0:
        return values
    return np.clip(values, centre - CLIP * spread, centre + CLIP * spread)
