"""A flat batch raises the smoothing radius's floor (a prototype that patches
`zovh_opt._step_size.StepSizeControl.observe`).

Switches:

* ``RAISE``: ``True`` a batch whose values are all one number (a spread within rounding of
  the centre's value) raises the radius one level of its grid and keeps it at least there
  (as the noise test does);
* ``WIDENED_ONLY``: only in runs whose ``spread`` was widened (new starts).

Run through ``variant.py``; not a part of zovh_opt.
"""

from zovh_opt import _step_size

RAISE = True
WIDENED_ONLY = True
_observe = _step_size.StepSizeControl.observe


def observe(self, spread, noise_variance=float("nan")):
    if (
        RAISE
        and spread <= 1e-13 * abs(self.reference)
        and not self.noisy
        and (not WIDENED_ONLY or self.spread > _step_size.SPREAD)
    ):
        self._set_level(self.level + 1)
        self.floor = self.level
        return True
    return _observe(self, spread, noise_variance)


def patch():
    _step_size.StepSizeControl.observe = observe
