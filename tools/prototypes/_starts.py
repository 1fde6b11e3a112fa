"""Helpers of the new-start prototypes (``best_widened``, ``race_starts``, ``plateau_noisy``,
``interleaved_starts``, ``widened_cap``): the package's first run as its loop runs it, and
its next new start in a regime, widened starts with the first run's pairs, as the package
made them when these prototypes were measured (before `zovh_opt._new_starts.widened_pairs`,
2026-11-27). Not a part of zovh_opt."""

import time

from zovh_opt import _new_starts as ns
from zovh_opt._optimizer import Optimizer


def first_run(x0, method, *, bounds, options, tol, rng, run):
    """The first run as the package's loop runs it: ``(began, curvature, results, draws,
    pairs)``, ``began`` its `time.perf_counter`, ``curvature`` as ``"auto"`` resolved it,
    ``results`` the list of its result, ``draws`` the new starts' generator and ``pairs`` what
    the package's widened starts grow (`zovh_opt._new_starts.widened_pairs`; ``None``: no
    widening)."""
    began = time.perf_counter()
    optimizer = Optimizer(x0, method, bounds=bounds, options=options, tol=tol, rng=rng)
    curvature = optimizer._method_options.get("curvature")
    results = [run(optimizer)]
    pairs = optimizer._step.n_directions if optimizer._step.widens else None
    return began, curvature, results, ns._seeds(rng, results[0].x), pairs


def next_start(x0, method, k, draws, bounds, options, tol, regimes, local):
    """The ``k``-th new start as the package's loop makes it: local, or widened as the next
    of the widened ones in ``regimes``; ``None`` where the budget cannot pay for it."""
    widening = None if local else ns.widening_of(regimes.count("widened") + 1)
    return ns.new_start(x0, method, k, draws, bounds, options, tol, widening)


def regime_start(setup, k, draws, regime, widened, left):
    """The ``k``-th new start in ``regime`` with ``left`` evaluations, ``widened`` the widened
    ones before it; ``setup`` is ``(x0, method, bounds, options, tol, curvature, began)``
    (``began`` the `time.perf_counter` of the first run). The optimizer (``None`` where the
    budget cannot pay for it) and the widened ones with it."""
    x0, method, bounds, options, tol, curvature, began = setup
    more = ns._options_of(options, regime == "local", curvature, [], began)
    more["maxfev"] = left
    widened += regime == "widened"
    widening = ns.widening_of(widened) if regime == "widened" else None
    return ns.new_start(x0, method, k, draws, bounds, more, tol, widening), widened
