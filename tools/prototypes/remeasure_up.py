"""Under noise, a trial whose step moved the smoothing radius up is not judged: the centre is
measured again at the new radius first (a prototype; `AskTellMethod._trial`).

A trial's f estimate subtracts the model's smoothing bias ``mu^2 c |u|^2 / 2``, and the
model's error in ``c`` makes estimates at two radii differ by an amount that grows as
``mu^2``; a radius going up makes that error four times larger a level. ``UP_ONLY``: only
where the radius went up (``False``: at any change, as measured before and not kept). Run
through ``variant.py``; not a part of zovh_opt.
"""

import math

from zovh_opt._methods import _base
from zovh_opt._step_size import MEASURE

UP_ONLY = True


def _trial(self):
    norm = self.direction_norm
    if not (math.isfinite(norm) and norm > 0):
        return
    control = self.control
    rate = control.rate_for(norm)
    level = control.level
    self._move(rate)
    self._step_length = rate * norm
    if control.stepped(self._step_length) and self._adapt_smoothing:
        self._set_smoothing(control.smoothing)
        if self.robust and (control.level > level or not UP_ONLY):
            self._x = self._centre  # the next batch measures the centre at the new radius
            control.phase = MEASURE


def patch():
    _base.AskTellMethod._trial = _trial
