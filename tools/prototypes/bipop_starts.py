"""Variants of the regimes of `zovh_opt._new_starts` (a prototype that patches its
`_regime` and `_start`).

BIPOP-CMA-ES (Hansen, GECCO 2009) alternates a regime of growing populations with one of
small local runs, each restart in the regime that has spent fewer evaluations so far; the
package does the same above ``LOCAL_DIMENSIONS`` (widened new starts and local ones), and up
to it every new start is local. Switches:

* ``MODE``: ``"bipop"`` the package's rule; ``"ipop"`` the rule before it (every new start
  above ``LOCAL_UP_TO`` widened);
* ``LOCAL_UP_TO``: every new start local up to this d (the package's `LOCAL_DIMENSIONS`, 3);
* ``WIDENING``: the base of the widened starts' factor (the package's 4);
* ``LOCAL_SPREAD``: the local new starts' spread in units of ``l / sqrt(d)`` (``None``: the
  package's growing spread ``2**(k-1)``, ``k`` counted over all new starts).

The first version of this prototype (commit 523001d) copied the package's loop and also
capped each widened run's ``maxfev`` (``WIDENED_CAP``; theory page, *New starts in BIPOP's
two regimes*). Run through ``variant.py``; not a part of zovh_opt.
"""

import math

from zovh_opt import _new_starts

MODE = "bipop"
LOCAL_UP_TO = _new_starts.LOCAL_DIMENSIONS
LOCAL_SPREAD = None
WIDENING = _new_starts.WIDENING  # the j-th widened start's factor is min(64, WIDENING**j)
_regime, _start = _new_starts._regime, _new_starts._start
_last = []  # the regime the last call of `regime` chose


def regime(results, regimes):
    if results[0].x.shape[0] <= LOCAL_UP_TO:
        chosen = "local"
    elif MODE == "ipop":
        chosen = "widened"
    else:
        spent = {"local": 0, "widened": 0, "first": 0}
        for result, kind in zip(results, regimes, strict=True):
            spent[kind] += result.nfev
        chosen = "widened" if spent["widened"] <= spent["local"] else "local"
    _last[:] = [chosen]
    return chosen


def start(x0, bounds, k, draws):
    if LOCAL_SPREAD is not None and _last == ["local"] and x0.shape[0] > LOCAL_UP_TO:
        k = 1 + math.log2(LOCAL_SPREAD)  # a fixed spread: 2**(k-1) = LOCAL_SPREAD
    return _start(x0, bounds, k, draws)


def patch():
    _new_starts.WIDENING = WIDENING
    _new_starts._regime = regime
    _new_starts._start = start
