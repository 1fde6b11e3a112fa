"""Restarts that spend a budget (`zovh_opt.minimize`'s option ``ipop_restarts``).

A local method returns when it has converged, as SciPy's do; on a multimodal function the
budget left is then unused. With ``ipop_restarts = R`` the run starts again, up to ``R``
times, while ``maxfev`` leaves room for an iteration: as IPOP-CMA-ES (Auger and Hansen, *A
restart CMA evolution strategy with increasing population size*, CEC 2005) doubles its
population at each restart, restart ``k`` doubles the pairs per iteration (``2**k P``, where
the method has ``n_directions`` and it is ``"auto"``), which averages the values over a wider
sample and so smooths a rugged ``f``; it starts from a new point: uniform in the box where
both bounds are finite, elsewhere ``x0 + 2**(k-1) l / sqrt(d) * N(0, I)`` with ``l`` the run's
length scale (``|x0|``, or ``sqrt(d)`` at ``x0 = 0``), so that restarts reach further out as
they go. The answer is the run with the lowest ``fun`` (with ``noisy=True`` an unbiased
estimate); ``nfev`` and ``nit`` count every run, and ``runs`` lists them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.optimize import OptimizeResult

from ._backend import ArraySpace, to_numpy
from ._bounds import host_bounds
from ._optimizer import Optimizer

__all__ = ["checked_restarts", "minimize_with_restarts"]


def checked_restarts(value: Any) -> int:
    """The option ``ipop_restarts``: an integer ``>= 0``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"ipop_restarts must be an integer >= 0, got {value!r}")
    return int(value)


def _seeds(rng: Any, x: Any) -> np.random.Generator:
    """The generator of the restarts' seeds and starts: from ``rng`` where NumPy can take it,
    else from the first run's answer ``x`` (deterministic for the same run)."""
    if rng is None or isinstance(rng, (int, np.integer, np.random.Generator)):
        return np.random.default_rng(rng)
    return np.random.default_rng(np.frombuffer(to_numpy(x).tobytes(), dtype=np.uint8))


def _start(x0: Any, bounds: Any, k: int, draws: np.random.Generator) -> Any:
    """Restart ``k``'s start (module docstring), in the namespace, dtype and device of
    ``x0``."""
    space = ArraySpace(x0)
    host = np.asarray(to_numpy(x0), dtype=np.float64)
    d = host.shape[0]
    length = float(np.linalg.norm(host)) or math.sqrt(d)
    start = host + 2.0 ** (k - 1) * length / math.sqrt(d) * draws.standard_normal(d)
    if bounds is not None:
        lower, upper = host_bounds(bounds, d)
        box = np.isfinite(lower) & np.isfinite(upper)
        start[box] = draws.uniform(lower[box], upper[box])
        start = np.clip(start, lower, upper)
    return space.to_user(space.from_host(start))


def minimize_with_restarts(
    x0: Any,
    method: str,
    restarts: int,
    *,
    bounds: Any,
    options: dict[str, Any],
    tol: float | None,
    rng: Any,
    run: Callable[[Optimizer], OptimizeResult],
) -> OptimizeResult:
    """The best of a first run from ``x0`` and up to ``restarts`` more (module docstring);
    ``run(optimizer)`` runs one to its end."""
    optimizer = Optimizer(x0, method, bounds=bounds, options=options, tol=tol, rng=rng)
    # the first run's own choices ("auto" resolved): the restarts keep its iteration (a short
    # budget left would take the paper's, whose directions are not pairs) and double its pairs
    pairs = getattr(optimizer._step, "n_directions", None)
    scalable = isinstance(pairs, int) and options.get("n_directions", "auto") == "auto"
    curvature = optimizer._method_options.get("curvature")
    first = run(optimizer)
    results, runs = [first], [_summary(first, pairs)]
    maxfev = options.get("maxfev")
    draws = _seeds(rng, first.x)
    for k in range(1, restarts + 1):
        more = dict(options)
        if curvature is not None:
            more["curvature"] = curvature
        if maxfev is not None:
            more["maxfev"] = maxfev - sum(r.nfev for r in results)
        n = min(2**k * pairs, 10_000) if scalable else pairs
        if scalable:
            more["n_directions"] = n
        start = _start(x0, bounds, k, draws)
        seed = int(draws.integers(2**63))
        try:
            optimizer = Optimizer(start, method, bounds=bounds, options=more, tol=tol, rng=seed)
        except ValueError as error:  # the budget left cannot pay an iteration and the answer
            if "maxfev must allow" in str(error):
                break
            raise
        results.append(run(optimizer))
        runs.append(_summary(results[-1], n))
    return _combined(results, runs)


def _summary(result: OptimizeResult, pairs: int | None) -> dict[str, Any]:
    return {
        "fun": result.fun,
        "nfev": result.nfev,
        "nit": result.nit,
        "status": result.status,
        "n_directions": pairs,
    }


def _combined(results: list[OptimizeResult], runs: list[dict[str, Any]]) -> OptimizeResult:
    """The best run's result, with every run's evaluations and iterations counted."""
    def rank(i: int) -> tuple[bool, float]:
        return not math.isfinite(results[i].fun), results[i].fun

    best = min(range(len(results)), key=rank)
    out = OptimizeResult(results[best])
    out.nfev = sum(r.nfev for r in results)
    out.nit = sum(r.nit for r in results)
    out.runs = runs
    out.best_run = best
    if len(results) > 1:
        out.message = f"best of {len(results)} runs (run {best}): {results[best].message}"
    return out
