"""The cap on the step rule's running noise variance: an upper confidence bound on the
variance at ``x0`` rather than its sample value (a prototype of
`zovh_opt._step_size.StepSizeControl.noise_found`).

The running estimate is a mean of the batches' residual bounds (noise plus twice the model's
misfit) capped by ``x0``'s sample variance, ``final_evaluations`` = 10 values, 9 degrees of
freedom: one run in ten caps at less than 0.46 times the true variance. On the noisy sphere
(``tools/noise_checks.py sphere``, d = 1000) the two worst of ten seeds (final f 7.8 and 12.6,
the median 2.7) had caps 0.46 and 0.48 while the bounds averaged 1.0: the floor saw a signal
twice as large as it was and let the radius follow the steps down. ``FACTOR``: the cap is
``FACTOR`` times the sample variance (1: as the package does). Run through ``variant.py``;
not a part of zovh_opt.
"""

from zovh_opt import _step_size

FACTOR = 2.0
_original = _step_size.StepSizeControl.noise_found


def noise_found(self, variance):
    _original(self, variance)
    if variance > 0:
        self.start_noise = FACTOR * variance


def patch():
    _step_size.StepSizeControl.noise_found = noise_found
