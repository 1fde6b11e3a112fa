"""Prototype: a widened new start's widening decays as its steps shrink.

The ``j``-th widened new start (`zovh_opt._new_starts`) queries ``W = min(64, 4**j)`` times
as far from its centre, relative to its steps, as a first run, for the whole run. The coarse
scale is what the step ellipsoid f7 needs early (its plateaus are of a fixed size), while a
funnel of ripples (Schaffer's f18, Weierstrass f16) and Rosenbrock's curved valley f8 (COCO,
d = 5, instance 5: a 4x widened run crawls along it for 4 490 evaluations) converge faster at
a finer one (`widening_rate.py`: 2x gains f16 and f18, loses f7). Here the widening is
``max(1, W (s / s0)**ALPHA)``, with ``s`` the running step length and ``s0`` the first: it
falls to 1 as the run converges (``FLOOR``: to that instead). Measured on 2026-11-27 (COCO
``bbob``, d = 5, instances 1-5, ``1000 d``, seeds 0-4, median / mean; f7, f8, f16, f17, f18
means): ``ALPHA = 0.5`` 0.636 / 0.647 (0.84, 0.96, 0.17, 0.67, 0.59); 0.25 0.658 / 0.665
(0.89, 0.87, 0.25, 0.80, 0.73); 0.25 with ``FLOOR = 2`` 0.657 / 0.664 (0.85, 0.87, 0.25,
0.86, 0.68); **0.125** 0.675 / 0.671 (1.00, 0.85, 0.16, 0.87, 0.76); the package 0.655 /
0.654 (0.97, 0.84, 0.18, 0.84, 0.40), IPOP-CMA-ES 0.664 / 0.658 (1.00, 1.00, 0.48, 0.72,
0.52). With 0.125 on the other sets (medians): d = 5 instances 6-10 0.674 (the package
0.665, IPOP-CMA-ES 0.670), d = 10 0.619 / 0.623 on instances 1-5 / 6-10 (0.613 / 0.617;
0.595 / 0.593), d = 20 instances 1-5 0.555 (0.552; 0.550). Adopted as
``zovh_opt._step_size.WIDENING_DECAY``. Run through ``variant.py``; not a part of zovh_opt.
"""

import math

from zovh_opt import _step_size

ALPHA = 0.25
FLOOR = 1.0  # the widening falls no lower than this
_widen = _step_size.StepSizeControl.widen
_level = _step_size.StepSizeControl._step_level


def widen(self, factor):
    _widen(self, factor)
    self.decay_from = (self.spread, self.step_length)


def step_level(self):
    start = self.__dict__.get("decay_from")
    if start is None:
        return _level(self)
    spread, first = start
    spread = max(FLOOR * _step_size.SPREAD, spread * (self.step_length / first) ** ALPHA)
    step_level = spread * self.step_length / math.sqrt(self.dim)
    return math.log2(step_level / self.base_smoothing)


def patch():
    _step_size.StepSizeControl.widen = widen
    _step_size.StepSizeControl._step_level = step_level
