"""Prototype: the drift check's measurement of the centre in two parts (`zovh_opt._drift`).

The check takes ``FIRST_SHARE`` of an iteration's values at the centre first; where they are
already significantly below the best measured point's, the centre is the best point and the
check ends (a run that descends pays a share of the check); otherwise the rest is taken and
the check decides as the package's. Run through ``variant.py`` or ``patch()`` before a run;
not a part of zovh_opt.
"""

import math

from zovh_opt import _drift
from zovh_opt._returned_point import significantly_lower

FIRST_SHARE = 0.25
_due, _take = _drift.DriftCheck.due, _drift.DriftCheck.take


def due(self, method, returned, room):
    if not _due(self, method, returned, room):
        return False
    self.full, self.part = self.size, None
    self.size = max(1, math.ceil(FIRST_SHARE * self.size))
    return True


def take(self, values, method, returned, room):
    if self.centre is not None or getattr(self, "full", None) is None:
        return _take(self, values, method, returned, room)
    values = (self.part or []) + list(values)
    if len(values) < self.full:
        if significantly_lower(values, self.best[1]):
            self.best, self.pending, self.part, self.full = (self.pending, values), None, None, None
            return None
        if room >= self.full - len(values):
            self.part, self.size = values, self.full - len(values)
            return None  # the rest, at the same point
    self.size, self.part, self.full = self.full, None, None
    return _take(self, values, method, returned, room)


def patch():
    _drift.DriftCheck.due = due
    _drift.DriftCheck.take = take
