"""Prototype: the new starts' two regimes as two live runs that take turns
(`zovh_opt._new_starts`, above ``LOCAL_DIMENSIONS``).

The package runs each run to its end before the next starts, so a first run that creeps
(COCO's Schaffer f17 and f18 at d = 20: 11 000 evaluations from 22 to 21) leaves the widened
runs what is left. A run is paused by an interrupt from the callback once it has spent its
share (`Optimizer.run` continues it). Modes (``MODE``):

* ``"turns"``: the first run counts as local, and one local and one widened run are live at a
  time: the regime that has spent fewer evaluations (BIPOP's rule, the widened one on a tie
  after the first slice) continues its run for a slice of ``SLICE * maxfev`` evaluations; a
  run that ends (converged) is followed by the next new start of its regime.
* ``"paused_widened"`` (from ``d = FROM_D``): the first run to its end, counted as local;
  then BIPOP's rule, local new starts to their end, the widened run paused once the widened
  regime has spent more than the local one, and continued at its next turn.
* ``"duel"``: the first run pauses after ``SLICE * maxfev`` evaluations, the first (widened)
  new start pauses after as many; the lower of the two (``DUEL_ORDER = "lower"``) or the first
  run (``"first"``) goes on to its end, then the other; then the new starts as the package's.

Measured on COCO ``bbob`` d = 20 and 40 (theory page, *New starts: measured 2026-11-27, not
kept*). Run through ``variant.py``; not a part of zovh_opt.
"""

import time

from _starts import next_start, regime_start

from zovh_opt import _new_starts as ns
from zovh_opt import _run_loop
from zovh_opt._optimizer import Optimizer
from zovh_opt._stopping import INTERRUPTED

MODE = "turns"  # or "duel"
SLICE = 0.25
FROM_D = 4  # the package's loop below this d
DUEL_ORDER = "lower"  # "duel": which paused run goes on first, the lower one or the "first"
FIRST_SLICE = None  # the first run's slice (share of maxfev), None: SLICE
_state = {"cap": None, "paused": False}
_caller = _run_loop.callback_caller
_package_loop = ns.minimize_with_new_starts


def caller(callback):
    user = _caller(callback)

    def notify(optimizer):
        cap = _state["cap"]
        if cap is not None and optimizer.nfev >= cap:
            _state["paused"] = True
            raise KeyboardInterrupt
        return user(optimizer) if user is not None else False

    return notify


def loop(x0, method, new_starts, *, bounds, options, tol, rng, run):
    d = len(x0)
    total = options.get("maxfev")
    if d < FROM_D or total is None:
        return _package_loop(
            x0, method, new_starts, bounds=bounds, options=options, tol=tol, rng=rng, run=run
        )
    if MODE == "paused_widened":
        return paused_widened(
            x0, method, new_starts, bounds=bounds, options=options, tol=tol, rng=rng, run=run
        )
    if MODE == "duel":
        return duel(
            x0, method, new_starts, bounds=bounds, options=options, tol=tol, rng=rng, run=run
        )
    began = time.perf_counter()
    first = Optimizer(x0, method, bounds=bounds, options=options, tol=tol, rng=rng)
    curvature = first._method_options.get("curvature")
    setup = (x0, method, bounds, options, tol, curvature, began)
    live = {"local": first, "widened": None}
    spent = {"local": 0, "widened": 0}
    latest = {}  # id(optimizer) -> its latest result, in start order
    draws, k, widened = None, 0, 0
    slice_of = {"local": FIRST_SLICE or SLICE}
    while True:
        used = sum(r.nfev for r in latest.values())
        if used >= total:
            break
        regime = "widened" if latest and spent["widened"] <= spent["local"] else "local"
        optimizer = live[regime]
        if optimizer is None:
            if k >= new_starts:
                break
            k += 1
            if draws is None:
                draws = ns._seeds(rng, next(iter(latest.values())).x)
            optimizer, widened = regime_start(setup, k, draws, regime, widened, total - used)
            if optimizer is None:
                break
            live[regime] = optimizer
        before = optimizer.nfev
        optimizer.options["maxfev"] = before + (total - used)
        _state.update(cap=before + max(1, int(slice_of.get(regime, SLICE) * total)), paused=False)
        try:
            result = run(optimizer)
        finally:
            _state["cap"] = None
        slice_of[regime] = SLICE
        spent[regime] += result.nfev - before
        latest[id(optimizer)] = result
        if _state["paused"] and result.status == INTERRUPTED:
            continue
        live[regime] = None
        if result.status not in (ns.SUCCESS, ns.FAILED):
            break
    results = list(latest.values())
    for r in results:
        if r.status == INTERRUPTED:  # a run paused when the budget ran out
            r.status = 1  # maxfev
    return ns._combined(results)


def _go(run, optimizer, total, used, cap=None):
    """Continue ``optimizer`` with the budget ``total - used`` left, paused at ``cap``."""
    optimizer.options["maxfev"] = optimizer.nfev + (total - used)
    _state.update(cap=cap, paused=False)
    try:
        return run(optimizer)
    finally:
        _state["cap"] = None


def duel(x0, method, new_starts, *, bounds, options, tol, rng, run):
    """``MODE = "duel"``: the first run pauses after ``SLICE * maxfev``; the first (widened)
    new start gets as many; the lower of the two goes on to its end, then the other; then the
    new starts as the package's."""
    began = time.perf_counter()
    total = options["maxfev"]
    first = Optimizer(x0, method, bounds=bounds, options=options, tol=tol, rng=rng)
    curvature = first._method_options.get("curvature")
    r1 = _go(run, first, total, 0, cap=int(SLICE * total))
    results, regimes, live = [r1], ["first"], [first]
    draws = ns._seeds(rng, r1.x)
    k = 0
    if r1.status == INTERRUPTED and _state["paused"]:
        k = 1
        more = ns._options_of(options, False, curvature, results, began)
        second = ns.new_start(x0, method, 1, draws, bounds, more, tol, ns.widening_of(1))
        if second is None:  # as COCO's harness takes it: the budget left is spent
            raise ValueError("maxfev must allow the duel's new start an iteration")
        r2 = _go(run, second, total, r1.nfev, cap=r1.nfev)
        results.append(r2)
        regimes.append("widened")
        live.append(second)
        order = [1, 0] if DUEL_ORDER == "lower" and r2.fun < r1.fun else [0, 1]
        for i in order:
            if results[i].status == INTERRUPTED:
                used = sum(r.nfev for r in results)
                if used >= total:
                    break
                results[i] = _go(run, live[i], total, used)
                if results[i].status not in (ns.SUCCESS, ns.FAILED, INTERRUPTED):
                    break
    for r in results:
        if r.status == INTERRUPTED:
            r.status = 1
    while (
        k < new_starts
        and results[-1].status in (ns.SUCCESS, ns.FAILED)
        and all(r.status in (ns.SUCCESS, ns.FAILED) for r in results)
    ):
        k += 1
        local = ns._regime(results, regimes) == "local"
        more = ns._options_of(options, local, curvature, results, began)
        if more is None:
            break
        optimizer = next_start(x0, method, k, draws, bounds, more, tol, regimes, local)
        if optimizer is None:
            break
        results.append(run(optimizer))
        regimes.append("local" if local else "widened")
    return ns._combined(results)


def paused_widened(x0, method, new_starts, *, bounds, options, tol, rng, run):
    """``MODE = "paused_widened"``: the first run to its end (it counts as local), then BIPOP's
    rule, local new starts run to their end, the widened run is paused once the widened
    regime has spent more than the local one and goes on at its next turn."""
    began = time.perf_counter()
    total = options["maxfev"]
    first = Optimizer(x0, method, bounds=bounds, options=options, tol=tol, rng=rng)
    curvature = first._method_options.get("curvature")
    setup = (x0, method, bounds, options, tol, curvature, began)
    latest = {id(first): _go(run, first, total, 0)}
    spent = {"local": first.nfev, "widened": 0}
    draws = ns._seeds(rng, latest[id(first)].x)
    live, k, widened = None, 0, 0
    while latest and all(r.status in (ns.SUCCESS, ns.FAILED, INTERRUPTED) for r in latest.values()):
        used = sum(r.nfev for r in latest.values())
        if used >= total:
            break
        regime = "widened" if spent["widened"] <= spent["local"] else "local"
        optimizer = live if regime == "widened" else None
        if optimizer is None:
            if k >= new_starts:
                break
            k += 1
            optimizer, widened = regime_start(setup, k, draws, regime, widened, total - used)
            if optimizer is None:
                break
            if regime == "widened":
                live = optimizer
        before = optimizer.nfev
        cap = before + spent["local"] - spent["widened"] + 1 if regime == "widened" else None
        result = _go(run, optimizer, total, used, cap=cap)
        spent[regime] += result.nfev - before
        latest[id(optimizer)] = result
        if regime == "widened" and not (_state["paused"] and result.status == INTERRUPTED):
            live = None
    results = list(latest.values())
    for r in results:
        if r.status == INTERRUPTED:
            r.status = 1  # maxfev
    return ns._combined(results)


def patch():
    import zovh_opt._minimize as m

    _run_loop.callback_caller = caller
    m.minimize_with_new_starts = loop
