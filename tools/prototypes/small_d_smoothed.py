"""Prototype: at small d, new starts in two regimes: local runs and *smoothed* ones.

Up to ``d = 3`` (`zovh_opt._new_starts.LOCAL_DIMENSIONS`) every new start of the package is
local (the quasi-Newton phase, and at d = 2 its basin hopping). Single runs at d = 2 of the
method alone (`run_modes.py 2 F phase=0 pairs=P`, 30 runs of ``1000 d``) reach ``1e-8`` on
Weierstrass f16 from 12/30 starts with 6 pairs, 16/30 with 12, on Schaffer's f17 from 11/30
with 6, where the default run (the phase, 3 pairs) reaches it from 4/30 and 0/30, and the
widened runs the package uses above d = 3 (4 or 16 times as far, no phase) from 0-3/30.

Here, up to ``DIMENSIONS``, new starts alternate by BIPOP's budget rule (`_regime`) between
the package's local runs and smoothed ones: no phase, queries ``WIDEN**j`` times as far as a
first run's, ``round(P * GROWTH**j)`` pairs (``P`` the first run's), ``j`` counting the
smoothed starts from 1. Measured on 2026-11-27 with the defaults below (COCO ``bbob``, d = 2,
instances 1-5, ``1000 d``, seeds 0-5): median 0.732 against 0.786 (f17 0.42 -> 0.65, but f3
0.74 -> 0.47, f15 0.76 -> 0.60, f19-f22 lost): a smoothed run does not end where it is stuck
(f16, instance 1: 600 evaluations while its radius shrinks from 4e-4 to 5e-11) and takes the
budget the local runs had used. Not kept. Run through ``variant.py``; not a part of zovh_opt.
"""

import math

from zovh_opt import _new_starts as ns

DIMENSIONS = 3
WIDEN = 1.0
GROWTH = 2.0
FIRST_SMOOTHED = False  # the first new start smoothed (else local first, as BIPOP's rule gives)

_package_regime = ns._regime
_package_start = ns.new_start


def regime(results, regimes):
    d = results[0].x.shape[0]
    if d > DIMENSIONS:
        return _package_regime(results, regimes)
    spent = ns.spent_by_regime(results, regimes)
    if FIRST_SMOOTHED:
        return "widened" if spent["widened"] <= spent["local"] else "local"
    return "widened" if spent["widened"] < spent["local"] else "local"


def new_start(x0, method, k, draws, bounds, options, tol, widening=None, pairs=None):
    d = len(x0)
    if d > DIMENSIONS or widening is None:
        return _package_start(x0, method, k, draws, bounds, options, tol, widening, pairs)
    j = round(math.log(widening) / math.log(ns.WIDENING))
    if pairs is not None:
        options = {**options, "n_directions": round(pairs * GROWTH**j)}
    return _package_start(x0, method, k, draws, bounds, options, tol, WIDEN**j, None)


def patch():
    ns._regime = regime
    ns.new_start = new_start
