"""More values at ``x0`` for the noise estimate that caps the step rule's floor (a prototype
of `zovh_opt._noise.NoiseMonitor`).

The running noise variance is capped by the sample variance of ``x0``'s values, 10 by
default (9 degrees of freedom: one run in ten caps below 0.46 of the truth; the noisy
sphere's two worst seeds of ten had 0.46 and 0.48). ``X0_VALUES``: ``x0`` is measured this
many times once the noise is known (the returned point's comparison then uses them all; the
final candidate's values stay ``final_evaluations``). Run through ``variant.py``; not a part
of zovh_opt.
"""

from zovh_opt import _noise

X0_VALUES = 30
_monitor = _noise.NoiseMonitor
_found, _act, _init = _monitor.found, _monitor.act, _monitor.__init__


def __init__(self, mode, adaptive, evaluations, start):
    _init(self, mode, adaptive, evaluations, start)
    self.final = self.evaluations
    if self.detected:
        self.evaluations = max(self.evaluations, X0_VALUES)


def found(self, room, *, elsewhere=False):
    _found(self, room, elsewhere=elsewhere)
    self.final = self.evaluations
    affordable = (room + len(self.values)) // 3
    self.evaluations = max(self.evaluations, min(X0_VALUES, affordable - 2 * self.final))


def act(self, returned, stopping, method):
    measured, self.evaluations = self.evaluations, self.final
    try:
        _act(self, returned, stopping, method)
    finally:
        self.evaluations = measured


def patch():
    _noise.NoiseMonitor.__init__ = __init__
    _noise.NoiseMonitor.found = found
    _noise.NoiseMonitor.act = act
