"""Pairs an outlier hit found against a scale that survives more than half of them hit (a
prototype of `zovh_opt._robust.outliers`; the package took ``FALLBACK`` from 20 pairs on,
`zovh_opt._robust.quartile_scale`; theory page, *Batches with more than half their pairs
hit*).

``QUANTILE``: the scale of the residuals is their ``QUANTILE``-th absolute deviation from the
median, over that quantile of ``|N(0, 1)|`` (a normal sample's standard deviation); ``0.5`` is
the package's rule before, ``1.4826 MAD``, which breaks down once half the pairs are hit:
under COCO's Cauchy model (a fifth of the calls) a pair is hit with probability 0.36, and 12
of 24 in about one batch in nine; the scale then is the outliers', none is found, and the
running noise variance jumps (theory page, *The Cauchy runs' relapses*). ``FALLBACK``: the
MAD's scale as before unless the ``QUANTILE``'s is below it by ``OUTLIER`` (the MAD is then an
outlier's own size), at any batch size. ``SKIP_NOISE``: the MAD's flags, and a batch whose
lower quartile lies that far below gives the noise floor no variance sample. With
``QUANTILE = 0.5`` and neither switch: the package's rule before, to its last bit. Run through
``variant.py``; not a part of zovh_opt.
"""

import numpy as np
from scipy.stats import norm

from zovh_opt import _robust

QUANTILE = 0.25
FALLBACK = False  # the MAD's scale, unless the QUANTILE's is OUTLIER times smaller


def outliers(residuals):
    centre = float(np.median(residuals))
    deviations = np.abs(residuals - centre)
    lower = float(np.quantile(deviations, QUANTILE)) / norm.ppf(0.5 + QUANTILE / 2)
    if QUANTILE == 0.5 or FALLBACK:  # the package's rule before, to its last bit
        spread = _robust.scale(residuals)
        if FALLBACK and lower < spread / _robust.OUTLIER:
            spread = lower
    else:
        spread = lower
    if not spread > 0:
        return np.zeros(residuals.shape, dtype=bool)
    return deviations > _robust.OUTLIER * spread


def patch():
    _robust.outliers = outliers
    if SKIP_NOISE:
        patch_skip()


SKIP_NOISE = False  # a batch whose MAD broke down gives the noise floor no variance sample


class _Proxy:
    """`zovh_opt._robust` as the curvature model sees it, with ``SKIP_NOISE``: the scale of
    the cleaned residuals (the noise floor's sample) is NaN after a broken-down batch."""

    broken = False

    def __getattr__(self, name):
        return getattr(_robust, name)

    def outliers(self, residuals):
        centre = float(np.median(residuals))
        deviations = np.abs(residuals - centre)
        lower = float(np.quantile(deviations, 0.25)) / norm.ppf(0.625)
        _Proxy.broken = lower < _robust.scale(residuals) / _robust.OUTLIER
        return outliers(residuals)

    def scale(self, values):
        if _Proxy.broken:
            _Proxy.broken = False
            return float("nan")
        return _robust.scale(values)


def patch_skip():
    from zovh_opt._methods import curvature_model

    curvature_model._robust = _Proxy()
