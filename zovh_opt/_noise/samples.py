"""Statistics of repeated values of one point (a noisy run's start, centre, final iterate):
means and medians that a non-finite value cannot wreck, and the test of one sample lying
significantly below another (theory page, *The end's samples*)."""

from __future__ import annotations

import math
import statistics
from collections import Counter

from ..tuning import active
from .robust import scale as robust_scale

__all__ = ["finite_mean", "finite_median", "mean", "sample_std", "significantly_lower"]

MEDIAN_ERROR = 1.2533  # a normal sample median's standard error over the mean's, sqrt(pi / 2)


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


def median_error(values: list[float]) -> float:
    """The standard error of the median of ``values`` (finite, at least one), from their
    robust scale (`zovh_opt._noise.robust.scale`): 0 where more than half are one number (exact
    values with a few outliers)."""
    return MEDIAN_ERROR * robust_scale(values) / math.sqrt(len(values))


def significantly_lower(values: list[float], other: list[float]) -> bool:
    """Whether the finite ``values`` lie below the ``other`` by `SIGNIFICANCE` standard
    deviations of the Mann-Whitney rank statistic or of the medians' difference.

    ``U``, the pairs ``(v, w)`` with ``v < w`` (ties count half), against its mean under equal
    distributions (the normal approximation with the ties' correction): ranks see neither an
    outlier's size nor a skewed tail. The medians, with standard errors from the median
    absolute deviations, decide where most values are exact and a few are outliers (COCO's
    Cauchy model, four calls in five exact), which three outliers among ten values hide from
    the ranks. A side without two finite values is never significantly lower; against one,
    always."""
    a = [v for v in values if math.isfinite(v)]
    b = [v for v in other if math.isfinite(v)]
    n, m = len(a), len(b)
    if n < 2 or m < 2:
        return n >= 2
    u = sum(1.0 if v < w else 0.5 if v == w else 0.0 for v in a for w in b)
    ties = sum(t * t * t - t for t in Counter(a + b).values())
    variance = n * m / 12 * (n + m + 1 - ties / ((n + m) * (n + m - 1)))
    if variance > 0 and u - n * m / 2 > active().noise.SIGNIFICANCE * math.sqrt(variance):
        return True
    error = math.hypot(median_error(a), median_error(b))
    return statistics.median(a) < statistics.median(b) - active().noise.SIGNIFICANCE * error


def sample_std(values: list[float]) -> float:
    """The sample standard deviation of the finite ``values`` (``nan`` below two)."""
    finite = [v for v in values if math.isfinite(v)]
    n = len(finite)
    if n < 2:
        return math.nan
    mean = sum(finite) / n
    return math.sqrt(sum((v - mean) * (v - mean) for v in finite) / (n - 1))
