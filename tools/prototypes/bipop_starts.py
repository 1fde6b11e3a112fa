"""New starts in BIPOP's two regimes above ``LOCAL_DIMENSIONS`` (a prototype of
`zovh_opt._new_starts.minimize_with_new_starts`).

The package's new starts above d = 3 are all widened (the ``k``-th queries ``4^k`` times as
far, without the quasi-Newton phase: IPOP's growing population); up to d = 3 all local (runs
like the first). BIPOP-CMA-ES (Hansen, GECCO 2009) alternates a regime of growing
populations with one of small local runs, each new start in the regime that has spent fewer
evaluations so far. Here, above ``LOCAL_DIMENSIONS``: a new start is local (the first run's
options, the phase included, no widening) where the local new starts have spent fewer
evaluations than the widened ones, else widened, its widening ``4^j`` counting the widened
starts only. ``MODE``: ``"bipop"`` as above; ``"ipop"`` the package's rule.
``LOCAL_SPREAD``: the local starts' spread in units of ``l / sqrt(d)`` (``None``: the
package's growing spread, counted over all new starts). ``LOCAL_UP_TO``: every new start
local up to this d (the package's `LOCAL_DIMENSIONS`, 3). ``WIDENED_CAP``: a widened run's
``maxfev`` at most this times the evaluations spent before it (``None``: the budget left),
so that one that does not stall leaves room for local ones.

Run through ``variant.py``; not a part of zovh_opt.
"""

import math
import time

from zovh_opt import _minimize, _new_starts
from zovh_opt._new_starts import (
    FAILED,
    LOCAL_DIMENSIONS,
    SUCCESS,
    WIDENING,
    WIDENING_LIMIT,
    Optimizer,
    _combined,
    _seeds,
    _start,
)

MODE = "bipop"
LOCAL_SPREAD = None
LOCAL_UP_TO = LOCAL_DIMENSIONS  # every new start local up to this d
WIDENED_CAP = None  # a widened run's maxfev at most this times the evaluations spent before it


def minimize_with_new_starts(x0, method, new_starts, *, bounds, options, tol, rng, run):
    began = time.perf_counter()
    optimizer = Optimizer(x0, method, bounds=bounds, options=options, tol=tol, rng=rng)
    curvature = optimizer._method_options.get("curvature")
    results = [run(optimizer)]
    kinds = ["first"]
    maxfev, maxtime = options.get("maxfev"), options.get("maxtime")
    draws = _seeds(rng, results[0].x)
    small_d = results[0].x.shape[0] <= LOCAL_UP_TO
    widened = 0
    capped = False
    for k in range(1, new_starts + 1):
        if results[-1].status not in (SUCCESS, FAILED) and not capped:
            break
        spent = {
            kind: sum(r.nfev for r, w in zip(results, kinds, strict=True) if w == kind)
            for kind in ("local", "widened")
        }
        if small_d:
            local = True
        elif MODE == "bipop":
            local = spent["local"] < spent["widened"]
        else:
            local = False
        more = dict(options) if local else {**options, "quasi_newton": False}
        if curvature is not None:
            more["curvature"] = curvature
        if maxfev is not None:
            more["maxfev"] = maxfev - sum(r.nfev for r in results)
            if more["maxfev"] < 1:
                break
        if maxtime is not None:
            more["maxtime"] = maxtime - (time.perf_counter() - began)
            if more["maxtime"] <= 0:
                break
        capped = False
        if not local and WIDENED_CAP is not None and maxfev is not None:
            cap = int(WIDENED_CAP * sum(r.nfev for r in results))
            if cap < more["maxfev"]:
                more["maxfev"], capped = cap, True
        if local and LOCAL_SPREAD is not None and not small_d:
            spread_k = 1 + math.log2(LOCAL_SPREAD)
            start = _start(x0, bounds, spread_k, draws)
        else:
            start = _start(x0, bounds, k, draws)
        seed = int(draws.integers(2**63))
        try:
            optimizer = Optimizer(start, method, bounds=bounds, options=more, tol=tol, rng=seed)
        except ValueError as error:
            if "maxfev must allow" in str(error):
                break
            raise
        if not local:
            widened += 1
            optimizer._step.widen(min(WIDENING_LIMIT, WIDENING**widened))
        results.append(run(optimizer))
        kinds.append("local" if local else "widened")
    return _combined(results)


def patch():
    _new_starts.minimize_with_new_starts = minimize_with_new_starts
    _minimize.minimize_with_new_starts = minimize_with_new_starts
