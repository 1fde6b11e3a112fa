"""The running noise variance of the step rule's noise floor, robust to one batch (a
prototype of `zovh_opt._step_size.StepSizeControl._noise_floor`).

``CAP``: each batch's bound on the noise variance is taken as at most ``CAP`` times the
running estimate before it enters (``None``: as the package takes it). Under COCO's Cauchy
outliers a single batch moved the estimate 100-fold, the radius rose 5-6 levels and the steps
20-fold, and the run drifted back up from 1e-6 to 1e-3.5 of its start's gap. Run through
``variant.py``; not a part of zovh_opt.
"""

import math

from zovh_opt import _step_size

CAP = 10.0
_original = _step_size.StepSizeControl._noise_floor


def _noise_floor(self, spread, bound):
    if CAP is not None and math.isfinite(bound) and self.noise_variance > 0:
        bound = min(bound, CAP * self.noise_variance)
    return _original(self, spread, bound)


def patch():
    _step_size.StepSizeControl._noise_floor = _noise_floor
