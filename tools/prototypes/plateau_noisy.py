"""Prototype: after a run that ended on a plateau, new starts treat f's steps as noise.

A run that ends by the plateau rule (`zovh_opt._stopping`: every value of ``flat_iterations``
iterations one number) has met an ``f`` that is piecewise constant at the queries' scale, as
COCO's step ellipsoid f7. Its rounding acts on the comparisons as noise does, and the noise
machinery's radius floor (``noisy=True``, `zovh_opt._step_size`) keeps the queries wider than
f's steps where the deterministic rule shrinks them below. From such a run on, every new start
(above ``d = AFTER_DIMENSIONS``) is widened (``WIDENED``) and runs with ``noisy=NOISY``, its
pairs the first run's, as the package's widened starts before
`zovh_opt._new_starts.widened_pairs` (and noise's own pairs). Measured on COCO ``bbob``
f7 at d = 10 and 20 (theory page, *Widened new starts with more pairs*); not kept. Run
through ``variant.py``; not a part of zovh_opt.
"""

from _starts import first_run

from zovh_opt import _new_starts as ns

AFTER_DIMENSIONS = 3
WIDENED = True
NOISY = True


def on_plateau(result):
    """Whether a run ended by the plateau rule."""
    return result.status == ns.SUCCESS and result.message.startswith("f took the value")


def loop(x0, method, new_starts, *, bounds, options, tol, rng, run):
    """`zovh_opt._new_starts.minimize_with_new_starts`, noisy after a plateau."""
    began, curvature, results, draws, _ = first_run(
        x0, method, bounds=bounds, options=options, tol=tol, rng=rng, run=run
    )
    regimes = ["first"]
    d = results[0].x.shape[0]
    stepped = False
    for k in range(1, new_starts + 1):
        if results[-1].status not in (ns.SUCCESS, ns.FAILED):
            break
        stepped = stepped or (d > AFTER_DIMENSIONS and on_plateau(results[-1]))
        local = ns._regime(results, regimes) == "local" and not (stepped and WIDENED)
        more = ns._options_of(options, local, curvature, results, began)
        if more is None:
            break
        if stepped:
            more["noisy"] = NOISY
        widening = None if local else ns.widening_of(regimes.count("widened") + 1)
        optimizer = ns.new_start(x0, method, k, draws, bounds, more, tol, widening)
        if optimizer is None:
            break
        results.append(run(optimizer))
        regimes.append("local" if local else "widened")
    return ns._combined(results)


def patch():
    import zovh_opt._minimize as m

    m.minimize_with_new_starts = loop
