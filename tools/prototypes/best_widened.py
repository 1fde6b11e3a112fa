"""Prototype: some new starts begin at the best run's answer, widened (`zovh_opt._new_starts`).

Up to ``d = UP_TO`` every ``EVERY``-th new start begins at the ``x`` of the run with the lowest
``fun`` so far instead of a new point and queries ``FACTOR`` times as far from its centre,
relative to its steps, as a first run (``FACTOR = None``: ``min(64, 4**j)`` for the ``j``-th
such start), with the quasi-Newton phase where ``QN``; the other new starts are the package's.
The idea: on Schaffer's f17 and f18 and Weierstrass's f16 the local runs end in rings or
ripples near the best answer, which a coarser smoothing from there might step over. Measured
on COCO ``bbob`` d = 2 and 3 (theory page, *New starts: measured 2026-11-27, not kept*). Run
through ``variant.py``; not a part of zovh_opt.
"""

import math

from _starts import first_run

from zovh_opt import _new_starts as ns

EVERY = 3
FACTOR = 4.0
UP_TO = 3
QN = True


def loop(x0, method, new_starts, *, bounds, options, tol, rng, run):
    """`zovh_opt._new_starts.minimize_with_new_starts` with the starts from the best answer."""
    began, curvature, results, draws, _ = first_run(
        x0, method, bounds=bounds, options=options, tol=tol, rng=rng, run=run
    )
    regimes = ["first"]
    d = results[0].x.shape[0]
    for k in range(1, new_starts + 1):
        if results[-1].status not in (ns.SUCCESS, ns.FAILED):
            break
        from_best = d <= UP_TO and k % EVERY == 0
        local = QN if from_best else ns._regime(results, regimes) == "local"
        more = ns._options_of(options, local, curvature, results, began)
        if more is None:
            break
        if from_best:
            j = regimes.count("best") + 1
            widening, regime = FACTOR or ns.widening_of(j), "best"
        elif not local:
            widening, regime = ns.widening_of(regimes.count("widened") + 1), "widened"
        else:
            widening, regime = None, "local"
        if from_best:  # the package's new start, its point the best answer
            best = min(results, key=lambda r: (not math.isfinite(r.fun), r.fun)).x
            package_start = ns._start
            # the stream moves on as for a new point outside a box
            ns._start = lambda x0, bounds, k, draws, best=best: (draws.standard_normal(d), best)[1]
            try:
                optimizer = ns.new_start(x0, method, k, draws, bounds, more, tol, widening)
            finally:
                ns._start = package_start
        else:
            optimizer = ns.new_start(x0, method, k, draws, bounds, more, tol, widening)
        if optimizer is None:
            break
        regimes.append(regime)
        results.append(run(optimizer))
    return ns._combined(results)


def patch():
    import zovh_opt._minimize as m

    m.minimize_with_new_starts = loop
