"""New starts that spend a budget (`zovh_opt.minimize`'s option ``new_starts``).

A local method returns when it has converged, as SciPy's do; on a multimodal function the
budget left is then unused. With ``new_starts = R`` the run starts again after each run that
converged (status 0) or failed where ``f`` has no finite values (status 3), up to ``R``
times, while ``maxfev`` (and ``maxtime``, counted over all runs) leaves room for an
iteration, from a new point: uniform in the box where both bounds are finite, elsewhere
``x0 + 2**(k-1) l / sqrt(d) * N(0, I)`` for the ``k``-th, with ``l`` the run's length scale
(``|x0|``, or ``sqrt(d)`` at ``x0 = 0``), so that new starts reach further out as they go.
Each keeps the first run's iteration (``curvature`` as ``"auto"`` resolved it: a short
budget left would otherwise take the paper's). The answer is the run with the lowest ``fun``
(with ``noisy=True`` an unbiased estimate); ``nfev`` and ``nit`` count every run, and
``runs`` lists them.

Above ``d = 3`` new starts come in BIPOP's two regimes (Hansen, *Benchmarking a BI-population
CMA-ES on the BBOB-2009 function testbed*, GECCO 2009): each is **widened** where the
widened new starts have spent no more evaluations than the local ones so far, else
**local**. The ``j``-th widened one queries ``min(64, 4**j)`` times as far from its centre,
relative to its steps, as a first run (`AskTellMethod.widen`; with the step rule and
``smoothing="auto"``), a widening that falls to 1 as the eighth root of the run's step
length over its first (`zovh_opt._step_size.WIDENING_DECAY`: it descends at a coarse scale
and converges at a finer one), with the square root of that times the first run's pairs
(`widened_pairs`: 2, 4, 8 times), and runs without the quasi-Newton phase: it descends ``f``
smoothed at a coarser scale and averaged over more queries, which hides ripples finer than
the queries' spread and the steps of a piecewise constant ``f``, as IPOP-CMA-ES (Auger and
Hansen, CEC 2005) smooths with a population it doubles at each restart. A local
one is a run like the first (the phase included), which finds narrow basins that smoothing
averages away (Gallagher's peaks), as BIPOP's small-population runs do: COCO ``bbob``,
``1000 d``, instances 1-5 / 6-10, d = 5 0.649 / 0.655, d = 10 0.595 / 0.621, d = 20 0.523 /
0.520 against 0.628 / 0.625, 0.598 / 0.610, 0.502 / 0.518 with every new start widened
(docs, *Theory*, *New starts in BIPOP's two regimes*), and with the widened starts' pairs
grown (2026-11-27) 0.655 / 0.672, 0.607 / 0.641, 0.558 / 0.523, where IPOP-CMA-ES solved
0.631 / 0.678, 0.595 / 0.593, 0.550 / 0.541 (docs, *Theory*, *Widened new starts with more
pairs*: on the step ellipsoid f7 at d = 20 one widened run reached ``1e-8`` from 0 of 10
starts with the first run's pairs, from 10 of 10 with four times as many); with the
widening falling as the steps shorten (medians over seeds) 0.675 / 0.674, 0.619 / 0.623,
0.555 / 0.536 against 0.655 / 0.665, 0.613 / 0.617, 0.552 / 0.534 before and IPOP-CMA-ES's
0.664 / 0.670, 0.595 / 0.593, 0.550 / 0.559 (d = 5 over ten seeds: 0.661 against 0.663;
docs, *Theory*, *Widened new starts smooth less as they converge*). COCO ``bbob``,
``1000 d``, the fraction of triples solved with and without the widening when it was adopted
(docs, *Theory*, *New starts*): instances 1-5, d = 2 / 5 / 10 / 20: 0.624 / 0.531 / 0.521 /
0.435 against 0.612 / 0.483 / 0.481 / 0.444; instances 6-10, d = 2 / 5 / 10: 0.580 / 0.565 /
0.516 against 0.573 / 0.501 / 0.451. Doubling the pairs per iteration at each new start
instead solved fewer (instances 1-3: 0.582 against 0.617 at d = 2, 0.465 against 0.483 at
d = 5, 0.443 against 0.455 at d = 10).

In a box a widened start's queries stay within ``BOX_REACH = 0.1`` of its narrowest width
per coordinate (``mu <= 0.1 w``, in the run's coordinates; `StepSizeControl.widen`'s
``reach``): the box map repeats ``f`` with a period of about ``2 w`` (`zovh_opt._bounds`),
so ``f`` smoothed at that scale is flat, the step rule's comparisons there are noise and its
steps, which nothing in a periodic box pushes back, grew without end. COCO ``bbob`` with its
box given as bounds, ``1000 d``, medians over five seeds, with the reach against without it:
d = 5 0.648 / 0.631 against 0.568 / 0.577 (instances 1-5 / 6-10), d = 10 0.594 against 0.535
(instances 1-5; docs, *Theory*, *Widened new starts within the box*).

Up to ``d = 3`` (`LOCAL_DIMENSIONS`) every new start is local (the phase,
and at ``d = 2`` its basin hopping): a local run there takes a few hundred evaluations, so
many starts fit the budget, and visiting basins beats smoothing. Local new starts against
widened ones on the code that chose it, instances 1-5 / 6-10: d = 2 0.798 / 0.808 against
0.742 / 0.714, d = 3 0.678 / 0.690 against 0.648 / 0.672, d = 5 0.615 / 0.609 against
0.628 / 0.630.

At ``d = 2`` (`PERTURBED_DIMENSIONS`) some of them are *perturbed*: after the first two runs,
where the perturbed ones have spent at most half the evaluations of those from new points
(`PERTURBED_SHARE`), a new start begins near the best answer so far, at a distance learned
from the answers' spacing (`BasinHops`: monotonic basin hopping), so that on a funnel of
local minima the runs go down it basin by basin instead of each descending it again from a
new point. COCO ``bbob``, ``1000 d``, medians over 11 seeds, instances 1-5 / 6-10: d = 2
0.808 / 0.798 against 0.795 / 0.789 without (docs, *Theory*, *Perturbed new starts at
d = 2*); at d = 3 (five seeds) 0.665 against 0.680, so not there.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.optimize import OptimizeResult

from ._backend import ArraySpace, to_numpy
from ._bounds import host_bounds
from ._optimizer import Optimizer
from ._step_size import length_scale
from ._stopping import FAILED, SUCCESS, BudgetTooSmall

__all__ = ["checked_new_starts", "minimize_with_new_starts"]

SPREAD_GROWTH = 2.0  # the spread of the k-th new start is SPREAD_GROWTH**(k - 1) times l / sqrt(d)
# the j-th widened new start queries min(WIDENING_LIMIT, WIDENING**j) times as far from its centre,
# relative to its steps, as a first run: it descends f smoothed at a coarser scale
WIDENING, WIDENING_LIMIT = 4.0, 64.0
# in a box a widened new start's queries reach at most this fraction of its narrowest width
# from their centre, per coordinate (mu <= BOX_REACH w): the box map repeats f with a period
# of about 2 w, and f smoothed at that scale is flat (COCO bbob with its box given as
# bounds, d = 5: widened starts reading noise as slope wandered the box)
BOX_REACH = 0.1
# up to this d every new start is a run like the first (the quasi-Newton phase), not widened:
# measured at d = 2, 3 (local better) and 5 (widened better) on COCO bbob; above it the two
# regimes alternate by the evaluations each has spent (`_regime`)
LOCAL_DIMENSIONS = 3
# up to PERTURBED_DIMENSIONS a new start after the first PERTURBED_AFTER runs begins near the
# best answer (`BasinHops`) where such starts have spent at most PERTURBED_SHARE times the
# evaluations of the local ones from new points (COCO bbob, 1000 d, medians over seeds: d = 2
# 0.808 with 0.5 against 0.797 with 1, 0.807 with 0.25 and 0.795 without; d = 3 0.665 against
# 0.680 without)
PERTURBED_DIMENSIONS = 2
PERTURBED_SHARE = 0.5
PERTURBED_AFTER = 2


def checked_new_starts(value: Any) -> int:
    """The option ``new_starts``: an integer ``>= 0``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"new_starts must be an integer >= 0, got {value!r}")
    return int(value)


def _seeds(rng: Any, x: Any) -> np.random.Generator:
    """The generator of the new starts' seeds and points: from ``rng`` where NumPy can take it,
    else from the first run's answer ``x`` (deterministic for the same run)."""
    if rng is None or isinstance(rng, (int, np.integer, np.random.Generator)):
        return np.random.default_rng(rng)
    return np.random.default_rng(np.frombuffer(to_numpy(x).tobytes(), dtype=np.uint8))


def _start(
    x0: Any,
    bounds: Any,
    k: int,
    draws: np.random.Generator,
    near: tuple[np.ndarray, float] | None = None,
) -> Any:
    """The ``k``-th new start (module docstring), in the namespace, dtype and device of
    ``x0``; with ``near = (centre, radius)``, ``centre + radius N(0, I) / sqrt(d)`` (within
    the bounds: `BasinHops`)."""
    space = ArraySpace(x0)
    host = _host(x0)
    d = host.shape[0]
    if near is not None:
        centre, radius = near
        start = centre + radius / math.sqrt(d) * draws.standard_normal(d)
    else:
        length = length_scale(float(np.linalg.norm(host)), d)
        spread = SPREAD_GROWTH ** (k - 1) * length / math.sqrt(d)
        start = host + spread * draws.standard_normal(d)
    if bounds is not None:
        lower, upper = host_bounds(bounds, d)
        if near is None:
            box = np.isfinite(lower) & np.isfinite(upper)
            start[box] = draws.uniform(lower[box], upper[box])
        start = np.clip(start, lower, upper)
    return space.to_user(space.from_host(start))


def minimize_with_new_starts(
    x0: Any,
    method: str,
    new_starts: int,
    *,
    bounds: Any,
    options: dict[str, Any],
    tol: float | None,
    rng: Any,
    run: Callable[[Optimizer], OptimizeResult],
) -> OptimizeResult:
    """The best of a first run from ``x0`` and up to ``new_starts`` more (module docstring);
    ``run(optimizer)`` runs one to its end."""
    began = time.perf_counter()
    optimizer = Optimizer(x0, method, bounds=bounds, options=options, tol=tol, rng=rng)
    curvature = optimizer._method_options.get("curvature")  # "auto" as the first run resolved it
    results = [run(optimizer)]
    # the pairs the first run ended with (noise found at x0 takes more); None: no widening
    pairs = optimizer._step.n_directions if optimizer._step.widens else None
    draws = _seeds(rng, results[0].x)
    regimes = ["first"]  # of each run: "first", "local", "perturbed" or "widened"
    hops = BasinHops()
    for k in range(1, new_starts + 1):
        # a run that converged, or failed where f has no finite values, starts again; a
        # budget, ftarget or a callback is the end
        if results[-1].status not in (SUCCESS, FAILED):
            break
        regime = _regime(results, regimes)
        near = hops.start(results) if regime == "perturbed" else None
        if near is None and regime == "perturbed":
            regime = "local"
        more = _options_of(options, regime != "widened", curvature, results, began)
        if more is None:
            break
        widening = widening_of(regimes.count("widened") + 1) if regime == "widened" else None
        optimizer = new_start(x0, method, k, draws, bounds, more, tol, widening, pairs, near)
        if optimizer is None:
            break
        results.append(run(optimizer))
        regimes.append(regime)
        if near is not None:
            hops.ended(results, near[0])
    return _combined(results)


class BasinHops:
    """Where the perturbed new starts begin, up to `PERTURBED_DIMENSIONS` (monotonic basin hopping,
    Leary, *Global optimization on funneling landscapes*, J. Global Optim. 18, 2000): near the
    best answer so far, ``x_best + r N(0, I) / sqrt(d)``, with a radius ``r`` learned from the
    answers: at first half the distance from ``x_best`` to the nearest other answer; after a
    perturbed run that found a lower answer, the distance it moved; after one that did not,
    half the last. On a funnel of local minima each lower answer lies about one basin closer to
    the funnel's bottom, a basin's width from the last, where a start from a new point descends
    the funnel from its rim again: COCO's separable Rastrigin f3 (d = 2, 1000 d: 0.74 to 0.84
    of its targets on instances 1-5) and Griewank-Rosenbrock f19 (0.71 to 0.81; 0.81 to 0.90
    on 6-10). Schaffer's rings gain little (f17 0.42 to 0.44): a perturbed run is a run like
    the first, whose first step scales with ``|x|``, not with ``r``."""

    def __init__(self) -> None:
        self.radius: float | None = None

    def start(self, results: list[OptimizeResult]) -> tuple[np.ndarray, float] | None:
        """The next perturbed start's ``(centre, radius)``: the best of ``results``' answers and
        the radius; ``None`` before two distinct answers."""
        best = _best(results)
        centre = _host(results[best].x)
        if self.radius is None:
            tiny = 1e-8 * (1.0 + float(np.linalg.norm(centre)))
            others = [float(np.linalg.norm(_host(r.x) - centre)) for r in results]
            others = [distance for distance in others if distance > tiny]
            if not others:
                return None
            self.radius = 0.5 * min(others)
        return centre, self.radius

    def ended(self, results: list[OptimizeResult], centre: np.ndarray) -> None:
        """After a perturbed run from near ``centre`` (the last of ``results``)."""
        assert self.radius is not None
        before = results[_best(results[:-1])].fun
        if results[-1].fun < before:
            self.radius = max(float(np.linalg.norm(_host(results[-1].x) - centre)), 1e-12)
        else:
            self.radius *= 0.5


def _host(x: Any) -> np.ndarray:
    """A point (``x0``, a run's answer) on the host, in float64."""
    return np.asarray(to_numpy(x), dtype=np.float64)


def widened_pairs(pairs: int, widening: float) -> int:
    """The pairs per iteration of a new start widened ``widening`` times, from the first
    run's ``pairs``: ``round(pairs * sqrt(widening))``, twice as many at each widened start
    up to 8 times (``WIDENING_LIMIT``), as IPOP-CMA-ES doubles its population."""
    return round(pairs * math.sqrt(widening))


def widening_of(j: int) -> float:
    """The factor of the ``j``-th widened new start's queries, ``min(WIDENING_LIMIT,
    WIDENING**j)``: 4, 16, 64, 64, ..."""
    return min(WIDENING_LIMIT, WIDENING**j)


def new_start(
    x0: Any,
    method: str,
    k: int,
    draws: np.random.Generator,
    bounds: Any,
    options: dict[str, Any],
    tol: float | None,
    widening: float | None = None,
    pairs: int | None = None,
    near: tuple[np.ndarray, float] | None = None,
) -> Optimizer | None:
    """The ``k``-th new start's `Optimizer`, from the point and seed ``draws`` gives next
    (near ``near``'s centre where given: `BasinHops`), its queries ``widening`` times as far
    from their centre (`StepSizeControl.widen`) where given, with `widened_pairs` of
    ``pairs`` (the first run's) where both are given; ``None`` where the ``maxfev`` of
    ``options`` cannot pay an iteration and the answer."""
    start = _start(x0, bounds, k, draws, near)
    seed = int(draws.integers(2**63))
    if widening is not None and pairs is not None:
        options = {**options, "n_directions": widened_pairs(pairs, widening)}
    try:
        optimizer = Optimizer(start, method, bounds=bounds, options=options, tol=tol, rng=seed)
    except BudgetTooSmall:
        return None
    if widening is not None:  # smooths at a coarser scale, within the box
        width = optimizer._coordinates.narrowest_width()
        reach = BOX_REACH * width * math.sqrt(start.shape[0])
        optimizer._step.widen(widening, reach)
    return optimizer


def _options_of(
    options: dict[str, Any],
    local: bool,
    curvature: str | None,
    results: list[OptimizeResult],
    began: float,
) -> dict[str, Any] | None:
    """A new start's options: ``options`` (a widened one's without the quasi-Newton phase),
    the first run's ``curvature``, and ``maxfev`` and ``maxtime`` (those given) less what the
    ``results`` so far spent and the time since ``began`` (`time.perf_counter`); ``None``
    where either is spent."""
    more = dict(options) if local else {**options, "quasi_newton": False}
    if curvature is not None:
        more["curvature"] = curvature
    if options.get("maxfev") is not None:
        more["maxfev"] = options["maxfev"] - sum(r.nfev for r in results)
        if more["maxfev"] < 1:
            return None
    if options.get("maxtime") is not None:
        more["maxtime"] = options["maxtime"] - (time.perf_counter() - began)
        if more["maxtime"] <= 0:
            return None
    return more


def _regime(results: list[OptimizeResult], regimes: list[str]) -> str:
    """The next new start's regime. Up to `PERTURBED_DIMENSIONS`, after `PERTURBED_AFTER`
    runs, ``"perturbed"`` (`BasinHops`) where the perturbed new starts have spent at most
    `PERTURBED_SHARE` times the evaluations of the local ones, else ``"local"``; up to
    `LOCAL_DIMENSIONS` ``"local"``; above, ``"widened"`` where the widened new starts have
    spent no more evaluations than the local ones, else ``"local"`` (BIPOP's budget rule; the
    first run counts for neither)."""
    spent, d = spent_by_regime(results, regimes), results[0].x.shape[0]
    if d <= PERTURBED_DIMENSIONS and len(results) >= PERTURBED_AFTER:
        return "perturbed" if spent["perturbed"] <= PERTURBED_SHARE * spent["local"] else "local"
    if d <= LOCAL_DIMENSIONS:
        return "local"
    return "widened" if spent["widened"] <= spent["local"] else "local"


def spent_by_regime(results: list[OptimizeResult], regimes: list[str]) -> Counter[str]:
    """The evaluations the ``results`` of each regime in ``regimes`` spent (0 for a regime
    with no run)."""
    spent: Counter[str] = Counter()
    for result, regime in zip(results, regimes, strict=True):
        spent[regime] += result.nfev
    return spent


def _best(results: list[OptimizeResult]) -> int:
    """The index of the run with the lowest ``fun`` (the first of equals; runs whose ``fun``
    is not finite last)."""

    def rank(i: int) -> tuple[bool, float]:
        return not math.isfinite(results[i].fun), results[i].fun

    return min(range(len(results)), key=rank)


def _combined(results: list[OptimizeResult]) -> OptimizeResult:
    """The best run's result, with every run's evaluations and iterations counted."""
    best = _best(results)
    out = OptimizeResult(results[best])
    out.nfev = sum(r.nfev for r in results)
    out.nit = sum(r.nit for r in results)
    out.runs = [{"fun": r.fun, "nfev": r.nfev, "nit": r.nit, "status": r.status} for r in results]
    out.best_run = best
    if len(results) > 1:
        out.message = f"best of {len(results)} runs (run {best}): {results[best].message}"
    return out
