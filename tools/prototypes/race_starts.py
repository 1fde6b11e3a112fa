"""Prototype: variants of how `zovh_opt._new_starts` shares the budget between its runs.

Switches (module constants, set through ``variant.py``):

* **A race** (``FROM_RUN``): after each iteration of run ``k >= FROM_RUN`` (the first run is
  0) the run's pace is the decrease of its lowest f estimate over its last ``WINDOW`` share
  of evaluations (from ``MIN_ITERATIONS`` iterations on); where its lowest f estimate less
  ``HOPE`` times that pace times the evaluations ``maxfev`` has left is above the lowest
  ``fun`` of the runs before, the run ends (status 0, so that the next one starts).
  ``FROM_RUN = 10**9`` turns it off.
* **A stall** (``STALL``, from ``d = STALL_FROM`` and ``STALL_MIN * d`` evaluations of a run
  on, every run): the run ends where its window's decrease is below ``STALL`` times the
  run's whole decrease and the window's second half decreased at least ``GEOM`` times as
  much as its first (not a geometric convergence).
* **A widened first run** (``FIRST_WIDEN``, from ``d = FIRST_FROM``): the first run queries
  ``FIRST_WIDEN`` times as far from its centre, without the quasi-Newton phase (with it where
  ``FIRST_QN``), and counts as a widened run in BIPOP's budget rule.
* **A paused first run** (``PAUSE``, from ``d = PAUSE_FROM``): the first run stops after
  ``PAUSE`` times ``maxfev`` evaluations (an interrupt: `Optimizer.run` continues it), the
  first new start (widened) runs, then the first run goes on to its end with the budget left,
  then the new starts as the package's (with ``RESUME_IF_BEST`` the first run goes on only
  where its value is still the lowest).
* ``WIDE_QN``: widened new starts keep the quasi-Newton phase; ``LOCAL_DIMENSIONS``: the
  package's threshold of local-only new starts, replaced.

Measured on COCO ``bbob`` at d = 2 and 20 (theory page, *New starts: measured 2026-11-27,
not kept*). Not a part of zovh_opt.
"""

import math

from _starts import next_start

from zovh_opt import _new_starts as ns
from zovh_opt import _run_loop
from zovh_opt._optimizer import Optimizer

FROM_RUN = 1
WINDOW = 0.25
MIN_ITERATIONS = 20
HOPE = 1.0
STALL = None
STALL_FROM = 4
STALL_MIN = 50
GEOM = 0.3
FIRST_WIDEN = None
FIRST_FROM = 4
FIRST_QN = False
WIDE_QN = False
LOCAL_DIMENSIONS = None
PAUSE = None
PAUSE_FROM = 4
RESUME_IF_BEST = False
_state = {"active": False}
_caller = _run_loop.callback_caller


def _racer(optimizer):
    s = _state
    if not s["active"]:
        return False
    f = optimizer.f_estimate
    if not math.isfinite(f):
        return False
    hist = s["hist"]
    low = min(f, hist[-1][1]) if hist else f
    hist.append((optimizer.nfev, low))
    if optimizer.nit < MIN_ITERATIONS or len(hist) < MIN_ITERATIONS:
        return False
    e_now = optimizer.nfev
    e_then = e_now - WINDOW * e_now
    then = next((v for e, v in reversed(hist) if e <= e_then), hist[0][1])
    pace = (then - low) / max(1.0, e_now - e_then)
    left = s["left"] - e_now
    if s["k"] >= FROM_RUN and s["incumbent"] is not None:
        if low - HOPE * pace * left > s["incumbent"]:
            s["ended"] = True
            return True
    d = len(optimizer.x)
    if STALL is not None and hist[0][1] > low and d >= STALL_FROM and e_now >= STALL_MIN * d:
        e_mid = e_now - WINDOW * e_now / 2
        mid = next((v for e, v in reversed(hist) if e <= e_mid), hist[0][1])
        first_half, second_half = then - mid, mid - low
        if then - low < STALL * (hist[0][1] - low) and second_half >= GEOM * first_half:
            s["ended"] = True
            return True
    return False


def caller(callback):
    user = _caller(callback)

    def notify(optimizer):
        cap = _state.get("cap")
        if _state["active"] and cap is not None and optimizer.nfev >= cap:
            _state["paused"] = True
            raise KeyboardInterrupt
        if _racer(optimizer):
            return True
        return user(optimizer) if user is not None else False

    return notify


def loop(x0, method, new_starts, *, bounds, options, tol, rng, run):
    import time

    began = time.perf_counter()
    total = options.get("maxfev")

    def go(optimizer, k, results, cap=None):
        fin = [r.fun for r in results if math.isfinite(r.fun)]
        _state.update(
            cap=cap,
            paused=False,
            active=True,
            hist=[],
            k=k,
            ended=False,
            incumbent=min(fin) if fin else None,
            left=(total - sum(r.nfev for r in results)) if total else 10**12,
        )
        res = run(optimizer)
        if _state["ended"] and res.status == 99:
            res.status = ns.SUCCESS
        _state["active"] = False
        return res

    d = len(x0)
    first = FIRST_WIDEN is not None and d >= FIRST_FROM
    first_options = {**options, "quasi_newton": False} if first and not FIRST_QN else options
    optimizer = Optimizer(x0, method, bounds=bounds, options=first_options, tol=tol, rng=rng)
    if first:
        optimizer._step.widen(FIRST_WIDEN)
    curvature = optimizer._method_options.get("curvature")
    pause = PAUSE is not None and d >= PAUSE_FROM and total is not None
    results = [go(optimizer, 0, [], cap=int(PAUSE * total) if pause else None)]
    paused = optimizer if _state["paused"] else None
    if paused is not None:
        results[0].status = ns.SUCCESS  # for the loop: the next starts
    draws = ns._seeds(rng, results[0].x)
    regimes = ["widened" if first else "first"]
    for k in range(1, new_starts + 1):
        if results[-1].status not in (ns.SUCCESS, ns.FAILED):
            break
        local = ns._regime(results, regimes) == "local"
        more = ns._options_of(options, local or WIDE_QN, curvature, results, began)
        if more is None:
            break
        optimizer = next_start(x0, method, k, draws, bounds, more, tol, regimes, local)
        if optimizer is None:
            break
        results.append(go(optimizer, k, results))
        if (
            paused is not None
            and RESUME_IF_BEST
            and results[0].fun > min(r.fun for r in results[1:])
        ):
            paused = None  # a new start found a lower value: the first run stays where it is
        if paused is not None:  # the first run goes on with the budget the others left
            paused.options["maxfev"] = total - sum(r.nfev for r in results[1:])
            results[0] = go(paused, 0, results[1:])
            paused = None
            if results[0].status not in (ns.SUCCESS, ns.FAILED):
                break
        regimes.append("local" if local else "widened")
    return ns._combined(results)


def patch():
    import zovh_opt._minimize as m

    _run_loop.callback_caller = caller
    if LOCAL_DIMENSIONS is not None:
        ns.LOCAL_DIMENSIONS = LOCAL_DIMENSIONS
    m.minimize_with_new_starts = loop
