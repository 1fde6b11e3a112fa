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

The MAD holds while fewer than half the pairs are hit. With outliers in a fifth of the calls
a pair is hit with probability 0.36, and half of 24 pairs in one batch in nine; the MAD is
then the outliers' own size and finds none of them, the batch's outliers enter the
difference and the noise floor's variance (bbob-noisy's Cauchy f1, d = 20, ``noisy=True``:
the variance up 2e4-fold in one batch, the radius up three levels in four iterations, the gap
from 1e-4 of the start's back to 3e-2). Such a batch shows in its lower quartile of
deviations, which holds while three pairs in four are hit: where it lies `OUTLIER` times
below what the MAD makes it (`quartile_scale`), the MAD is an outlier's and the quartile's
scale finds them. In batches of `QUARTILE_PAIRS` pairs or more, normal values do that in
under 1e-4 of the batches (2e-3 in batches of 12, where a cluster of a few close pairs
made the quartile's scale flag 8 of 12 pairs and cost a Monte-Carlo newsvendor's runs).
"""

from __future__ import annotations

from typing import Any

import numpy as np

CLIP = 3.0  # robust scales from the median beyond which a value is clipped
OUTLIER = 8.0  # and beyond which a pair's residual marks the pair as hit by an outlier
NORMAL_MAD = 1.4826  # the standard deviation of normal values over their MAD
NORMAL_QUARTILE = 0.3186394  # the lower quartile of |N(0, 1)|: Phi^-1(5/8)
QUARTILE_PAIRS = 20  # batches of this many pairs or more may take the quartile's scale
# a noisy batch with a value this many times the run's scale of f above its lowest value is no
# sample of f near the centre but of a place the queries' radius overreached (an exponential
# fit's first batch: 1e163 where f(x0) = 0.88; issue #70): it is dropped, the radius shrinks
FAR_ABOVE = 1e6
FAR_ABOVE_SHRINK = 0.1  # the steps and radius after such a batch, relative to before


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


def quartile_scale(residuals: np.ndarray) -> float:
    """The scale that finds outliers among the pairs' ``residuals`` (host floats): `scale`
    (the MAD's), or from `QUARTILE_PAIRS` pairs on the lower quartile of the absolute
    deviations from the median over `NORMAL_QUARTILE` where that is `OUTLIER` times smaller
    and not 0 (more than half the pairs hit: the module docstring; a quarter of the pairs on
    the median itself, a flat ``f``, keep the MAD's)."""
    if residuals.shape[0] < QUARTILE_PAIRS:
        return scale(residuals)
    with np.errstate(over="ignore", invalid="ignore"):
        deviations = np.abs(residuals - np.median(residuals))
        spread = NORMAL_MAD * float(np.median(deviations))  # `scale`, from the same deviations
        if not spread > 0:
            return spread
        lower = float(np.quantile(deviations, 0.25)) / NORMAL_QUARTILE
    return lower if 0 < lower < spread / OUTLIER else spread


def outliers(residuals: np.ndarray) -> np.ndarray:
    """Which of the pairs' ``residuals`` (host floats) lie beyond ``OUTLIER`` robust scales
    (`quartile_scale`) from their median: the pairs an outlier hit. None where that scale is
    0."""
    centre, spread = float(np.median(residuals)), quartile_scale(residuals)
    if not spread > 0:
        return np.zeros(residuals.shape, dtype=bool)
    return np.abs(residuals - centre) > OUTLIER * spread


def far_above(values: list[float], lowest: float, noise_std: float) -> bool:
    """Whether a batch's ``values`` (finite host floats) hold one more than `FAR_ABOVE` times
    the run's scale of ``f``, ``max(|lowest|, noise_std)``, above ``lowest`` (the lowest
    value evaluated): a value many orders above the batch's others and the noise."""
    reach = FAR_ABOVE * max(abs(lowest), noise_std)
    return max(values) - lowest > reach
