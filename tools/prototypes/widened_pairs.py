"""Prototype: widened new starts with more pairs, as IPOP-CMA-ES's restarts grow the population.

The ``j``-th widened new start (`zovh_opt._new_starts`) queries ``min(64, 4**j)`` times as
far from its centre as a first run; here it takes ``round(P * GROWTH**j)`` pairs per
iteration, ``P`` the first run's (``j`` read from the widening, so at most 3). On COCO's step
ellipsoid f7 at d = 20 one widened run (`tools/prototypes/run_modes.py`) reached ``1e-8``
from 0 of 10 starts with the 6 pairs of ``"auto"``, 6 with 12 and 10 with 24. ``GROWTH = 2``
is the package's rule since 2026-11-27 (`zovh_opt._new_starts.widened_pairs`); the theory
page, *Widened new starts with more pairs*, has the figures of 1.5 and 4. Run through
``variant.py``; not a part of zovh_opt.
"""

import math

from zovh_opt import _new_starts as ns

GROWTH = 2.0


def widened_pairs(pairs, widening):
    """``round(pairs * GROWTH**j)`` for the ``j``-th widened start."""
    j = round(math.log(widening) / math.log(ns.WIDENING))
    return round(pairs * GROWTH**j)


def patch():
    ns.widened_pairs = widened_pairs
