"""Single runs of one COCO ``bbob`` function in a chosen mode: how often one run reaches the
last target (``1e-8``) and what it costs.

    python tools/prototypes/run_modes.py DIM FUNCTION [widening=W] [pairs=P] [phase=0]
        [noisy=1] [stops=0] [window=W] [power=Q] [--starts N] [--cma POPULATION]

Each of instances 1-5 runs ``N`` times (default 6) from points uniform in ``[-4, 4]^d`` (the
``k``-th from ``numpy.random.default_rng(100 + instance)``), one `zovh_opt.Optimizer` each,
``maxfev = 1000 d``: ``widening`` as a widened new start's (`AskTellMethod.widen`),
``pairs`` as ``n_directions``, ``phase=0`` without the quasi-Newton phase, ``noisy=1`` as
``noisy=True``, ``stops=0`` without the tolerances (``ftol``, ``xtol``,
``flat_iterations``), ``window=W`` as ``ftol_window``, ``power=Q`` telling the run
``(f - f*)**Q`` instead of ``f`` (an oracle's monotone transform, to which a rank-based
search such as CMA-ES is invariant; the targets are still on ``f``). ``--cma POPULATION``
runs pycma's CMA-ES from the same points instead (``sigma0 = 2``, that population, seeded by
the same draws). It prints the runs that
reached ``f* + 1e-8``, the median evaluations they took to get there, the median evaluations
of all runs and the median final gap, and how the runs ended. Used for the theory page's
*Widened new starts with more pairs*. Not a part of zovh_opt.
"""

import argparse
import collections
import math
import re
import warnings

import cocoex
import numpy as np

from zovh_opt import Optimizer
from zovh_opt.benchmarks.coco import optimal_value


def problem(dim, function, instance):
    """COCO's problem and its ``f*``."""
    chosen = f"dimensions:{dim} function_indices:{function} instance_indices:{instance}"
    first, second = cocoex.Suite("bbob", "", chosen), cocoex.Suite("bbob", "", chosen)
    return next(iter(first)), optimal_value(next(iter(second)))


def one_run(fun, f_star, x0, seed, dim, switches):
    """One run: (final gap, evaluations, evaluations to ``1e-8`` or ``None``, message)."""
    options = {"maxfev": 1000 * dim}
    if "pairs" in switches:
        options["n_directions"] = int(switches["pairs"])
    if switches.get("phase") == "0":
        options["quasi_newton"] = False
    if switches.get("noisy") == "1":
        options["noisy"] = True
    if "window" in switches:
        options["ftol_window"] = int(switches["window"])
    if switches.get("stops") == "0":
        options.update(ftol=None, xtol=None, flat_iterations=None)
    optimizer = Optimizer(x0, options=options, rng=seed)
    if "widening" in switches:
        optimizer._step.widen(float(switches["widening"]))
    power = float(switches["power"]) if "power" in switches else None
    lowest, spent, reached = math.inf, 0, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        while not optimizer.done:
            points = np.asarray(optimizer.ask())
            values = np.array([fun(x) for x in points])
            spent += len(values)
            lowest = min(lowest, float(values.min()))
            optimizer.tell(values if power is None else np.maximum(values - f_star, 0) ** power)
            if reached is None and lowest - f_star <= 1e-8:
                reached = spent
    return lowest - f_star, spent, reached, optimizer.result().message


def cma_run(fun, f_star, x0, seed, dim, population):
    """One CMA-ES run as `one_run` reports it."""
    import cma

    options = {"verbose": -9, "seed": seed, "maxfevals": 1000 * dim, "popsize": population}
    strategy = cma.CMAEvolutionStrategy(x0, 2.0, options)
    lowest, spent, reached = math.inf, 0, None
    while not strategy.stop():
        points = strategy.ask()
        values = [float(fun(x)) for x in points]
        strategy.tell(points, values)
        spent += len(values)
        lowest = min(lowest, *values)
        if reached is None and lowest - f_star <= 1e-8:
            reached = spent
    return lowest - f_star, spent, reached, "cma: " + ", ".join(strategy.stop())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dim", type=int)
    parser.add_argument("function", type=int)
    parser.add_argument("switches", nargs="*", help="name=value")
    parser.add_argument("--starts", type=int, default=6)
    parser.add_argument("--cma", type=int, default=None, metavar="POPULATION")
    args = parser.parse_args()
    switches = dict(s.split("=", 1) for s in args.switches)
    runs = []
    for instance in range(1, 6):
        fun, f_star = problem(args.dim, args.function, instance)
        draws = np.random.default_rng(100 + instance)
        for _ in range(args.starts):
            x0 = draws.uniform(-4, 4, args.dim)
            seed = int(draws.integers(2**31))
            if args.cma is None:
                runs.append(one_run(fun, f_star, x0, seed, args.dim, switches))
            else:
                runs.append(cma_run(fun, f_star, x0, seed, args.dim, args.cma))
    reached = [r[2] for r in runs if r[2] is not None]
    median = np.median(reached) if reached else math.nan
    print(
        f"d = {args.dim}, f{args.function}, "
        f"{f'CMA-ES {args.cma}' if args.cma else ' '.join(args.switches) or 'defaults'}: "
        f"{len(reached)}/{len(runs)} runs to 1e-8 (median {median:.0f} "
        f"evaluations); all runs: median {np.median([r[1] for r in runs]):.0f} evaluations, "
        f"median final gap {np.median([r[0] for r in runs]):.2g}"
    )
    ends = collections.Counter(re.sub(r"-?[\d.]+(e[-+]?\d+)?", "#", r[3])[:60] for r in runs)
    print("ends:", "; ".join(f"{n} x {m}" for m, n in ends.most_common()))


if __name__ == "__main__":
    main()
