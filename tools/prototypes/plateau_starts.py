"""Continue a run that ended on a plateau from its answer at a finer scale (a prototype that
replaces `zovh_opt._new_starts.minimize_with_new_starts`).

Switches:

* ``CONTINUE``: ``False`` the package's loop; ``True`` after a run that ended on a plateau
  (`zovh_opt._stopping.FLAT_MESSAGE`) and lowered the best ``fun``, the next new start
  begins at its answer, without the phase, in the same regime and widening, its first step
  ``FACTOR`` times the plateau run's last running step length;
* ``FACTOR``: that ratio;
* ``WIDENED_ONLY``: continue only widened runs (and their continuations).

Run through ``variant.py``; not a part of zovh_opt.
"""

import math
import time

from zovh_opt import _minimize, _new_starts
from zovh_opt._new_starts import (
    FAILED,
    SUCCESS,
    WIDENING,
    WIDENING_LIMIT,
    Optimizer,
    _combined,
    _options_of,
    _seeds,
    _start,
)

CONTINUE = True
FACTOR = 8.0
WIDENED_ONLY = False  # continue only runs that were widened (or continued a widened one)
LOG = False


def minimize_with_new_starts(x0, method, new_starts, *, bounds, options, tol, rng, run):
    began = time.perf_counter()
    optimizer = Optimizer(x0, method, bounds=bounds, options=options, tol=tol, rng=rng)
    curvature = optimizer._method_options.get("curvature")
    results = [run(optimizer)]
    ends = [_end(optimizer)]
    draws = _seeds(rng, results[0].x)
    regimes = ["first"]
    factors = [1.0]
    k = 0
    while k < new_starts:
        k += 1
        if results[-1].status not in (SUCCESS, FAILED):
            break
        best_before = min((r.fun for r in results[:-1]), default=math.inf)
        cont = (
            CONTINUE
            and results[-1].message.startswith("f took the value")
            and "plateau of f (flat" in results[-1].message
            and results[-1].fun < best_before
            and (not WIDENED_ONLY or regimes[-1] == "widened")
        )
        if cont:
            local = regimes[-1] != "widened"
        else:
            local = _new_starts._regime(results, regimes) == "local"
        more = _options_of(options, local and not cont, curvature, results, began)
        if more is None:
            break
        start = results[-1].x if cont else _start(x0, bounds, k, draws)
        seed = int(draws.integers(2**63))
        try:
            optimizer = Optimizer(start, method, bounds=bounds, options=more, tol=tol, rng=seed)
        except ValueError as error:
            if "maxfev must allow" in str(error):
                break
            raise
        if cont:
            factor = factors[-1]
        elif local:
            factor = 1.0
        else:
            j = regimes.count("widened") + 1
            factor = min(WIDENING_LIMIT, WIDENING**j)
        if factor != 1.0:
            optimizer._step.widen(factor)
        if cont:
            control = optimizer._step.control
            ratio = FACTOR * ends[-1] / control.step_length
            if ratio < 1:
                control.shorten(ratio)
                optimizer._step._set_smoothing(control.smoothing)
        results.append(run(optimizer))
        ends.append(_end(optimizer))
        factors.append(factor)
        regimes.append("local" if local else "widened")
        if LOG:
            print(k, "cont" if cont else regimes[-1], factor, results[-1].nfev, results[-1].fun)
    return _combined(results)


def _end(optimizer):
    control = getattr(optimizer._step, "control", None)
    return math.nan if control is None else control.step_length


def patch():
    _minimize.minimize_with_new_starts = minimize_with_new_starts
