"""New starts that spend a budget (`zovh_opt.minimize`'s option ``new_starts``).

A local method returns when it has converged; on a multimodal function the budget left is
then unused. With ``new_starts = R`` the run starts again after each run that converged (or
found no finite values), up to ``R`` times while the budget leaves room, from a new point:
uniform in a finite box, elsewhere ever farther from ``x0``. The answer is the run with the
lowest ``fun``; ``runs`` lists them all. Above d = 3 new starts come in BIPOP's two regimes:
*widened* ones smooth ``f`` at a coarser scale with more pairs (within a tenth of the box in
a box), *local* ones repeat the first run; up to d = 3 all are local, and at d = 2 some are
*perturbed* near the best answer (`BasinHops`). The rules in full and their COCO records:
theory page, *The run's parts in detail*, *New starts*, and *New starts* (the full curvature
model's sections).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.optimize import OptimizeResult

from .._arrays.backend import ArraySpace, to_numpy
from .._methods.step_size import length_scale
from ..tuning import active
from .bounds import host_bounds
from .optimizer import Optimizer
from .stopping import FAILED, SUCCESS, BudgetTooSmall

__all__ = ["checked_new_starts", "minimize_with_new_starts"]


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
        spread = active().new_starts.SPREAD_GROWTH ** (k - 1) * length / math.sqrt(d)
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
    parts = optimizer._parts
    curvature = parts.method_options.get("curvature")  # "auto" as the first run resolved it
    results = [run(optimizer)]
    # the pairs the first run ended with (noise found at x0 takes more); None: no widening
    pairs = parts.method.n_directions if parts.method.widens else None
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
    tuning = active().new_starts
    return min(tuning.WIDENING_LIMIT, tuning.WIDENING**j)


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
        optimizer = Optimizer._new_start(
            start, method, bounds=bounds, options=options, tol=tol, rng=seed
        )
    except BudgetTooSmall:
        return None
    if widening is not None:  # smooths at a coarser scale, within the box
        width = optimizer._parts.coordinates.narrowest_width()
        reach = active().new_starts.BOX_REACH * width * math.sqrt(start.shape[0])
        optimizer._parts.method.widen(widening, reach)
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
    if (
        d <= active().dimensions.PERTURBED_DIMENSIONS
        and len(results) >= active().new_starts.PERTURBED_AFTER
    ):
        return (
            "perturbed"
            if spent["perturbed"] <= active().new_starts.PERTURBED_SHARE * spent["local"]
            else "local"
        )
    if d <= active().dimensions.LOCAL_DIMENSIONS:
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
