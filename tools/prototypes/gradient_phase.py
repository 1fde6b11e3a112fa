"""Prototype, outside the package: a finite-difference quasi-Newton phase before the default.

Not a part of zovh_opt. Where ``f`` is deterministic (two evaluations of ``x0`` agree to the
bit), a run first takes full forward-difference gradients (``d`` evaluations each, the centre
shared with the line search's accepted point) and limited-memory BFGS steps (``MEMORY`` pairs,
the two-loop recursion, ``H0 = s'y / y'y``) judged by an Armijo line search on function
values alone (a rejected trial costs one evaluation, not a gradient's ``d + 1`` as in SciPy's
L-BFGS-B with finite differences). The phase ends when a line search fails, when a step
decreases ``f`` by less than ``FTOL`` relative (L-BFGS-B's ``factr`` times ``eps``), or when the
gradient's largest entry is below ``GTOL``; then ``zovh_opt.minimize`` runs from the phase's
best point with what is left of ``maxfev`` (its own defaults). A noisy ``x0`` skips the phase.

``patch()`` makes ``zovh_opt.minimize`` (as the benchmarks call it, ``method="zovh"`` with no
learning rate) run the phase first, so any benchmark measures it::

    python tools/prototypes/variant.py gradient_phase '{}' coco --dim 80 --instances 1-3 \
        --budget 100 --solvers zovh "L-BFGS-B (FD)" --no-cocopp --jobs 1

Measured (the docs' theory page, *Curvature off the axes at large d*).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.optimize import OptimizeResult

MEMORY = 10  # secant pairs kept, as L-BFGS-B's default m
FTOL = 1e7 * np.finfo(float).eps  # L-BFGS-B's factr * eps
GTOL = 0.0  # no absolute gradient test (L-BFGS-B: pgtol 1e-5): f -> a f changes nothing
ARMIJO = 1e-4
BACKTRACKS = 30  # trials of one line search before the phase ends
FIRST_STEP = 0.1  # the first trial's length, in units of |x0| (sqrt(d) at x0 = 0)
MIN_BUDGET = 3  # the phase runs only where maxfev allows this many gradients
ENABLED = True
RECHECK = True  # each gradient measures its centre again: noise that x0's two values missed
NOISY_HANDOFF = True  # noise found by the phase: zovh from the phase's iterate with noisy=True


class _Spent(Exception):
    pass


class _Noisy(Exception):
    """The centre of a gradient measured again gave another value."""

    def __init__(self, x: np.ndarray) -> None:
        self.x = x


class _Counted:
    """``fun`` with a budget; remembers the best value and point."""

    def __init__(self, fun: Any, args: tuple, budget: int) -> None:
        self.fun, self.args, self.budget = fun, args, budget
        self.nfev, self.best, self.x_best = 0, math.inf, None

    def __call__(self, x: np.ndarray) -> float:
        if self.nfev >= self.budget:
            raise _Spent
        self.nfev += 1
        value = float(self.fun(x, *self.args))
        if value < self.best:
            self.best, self.x_best = value, x.copy()
        return value


def _gradient(f: _Counted, x: np.ndarray, fx: float) -> np.ndarray:
    """Forward differences with SciPy's step ``sqrt(eps) max(1, |x_i|)``; with ``RECHECK``
    the centre is measured again first (one evaluation), and another value ends the phase."""
    if RECHECK and f(x) != fx:
        raise _Noisy(x)
    h = math.sqrt(np.finfo(float).eps) * np.maximum(1.0, np.abs(x)) * np.where(x < 0, -1.0, 1.0)
    g = np.empty_like(x)
    for i in range(x.shape[0]):
        e = x.copy()
        e[i] += h[i]
        g[i] = (f(e) - fx) / (e[i] - x[i])
    return g


def _direction(g: np.ndarray, pairs: list[tuple[np.ndarray, np.ndarray, float]]) -> np.ndarray:
    """L-BFGS two-loop recursion: ``-H g`` with ``H0 = s'y / y'y``."""
    q = g.copy()
    alphas = []
    for s, y, rho in reversed(pairs):
        a = rho * (s @ q)
        alphas.append(a)
        q -= a * y
    if pairs:
        s, y, _ = pairs[-1]
        q *= (s @ y) / (y @ y)
    for (s, y, rho), a in zip(pairs, reversed(alphas), strict=True):
        q += (a - rho * (y @ q)) * s
    return -q


def quasi_newton_phase(f: _Counted, x0: np.ndarray, fx: float) -> tuple[np.ndarray, str]:
    """The phase (module docstring) from ``x0`` with ``f(x0) = fx``; its last point and why it
    ended."""
    x, d = x0.copy(), x0.shape[0]
    length = float(np.linalg.norm(x0)) or math.sqrt(d)
    g = _gradient(f, x, fx)
    pairs: list[tuple[np.ndarray, np.ndarray, float]] = []
    while True:
        if np.max(np.abs(g)) <= GTOL:
            return x, "gradient"
        p = _direction(g, pairs)
        slope = float(g @ p)
        if not slope < 0:
            p, slope, pairs = -g, -float(g @ g), []
        step = 1.0 if pairs else FIRST_STEP * length / float(np.linalg.norm(p))
        for _ in range(BACKTRACKS):
            trial = x + step * p
            ft = f(trial)
            if math.isfinite(ft) and ft <= fx + ARMIJO * step * slope:
                break
            # a quadratic through fx, slope and ft, kept within [0.1, 0.5] of the step
            curv = (ft - fx - step * slope) if math.isfinite(ft) else math.inf
            shrink = -slope * step / (2 * curv) if curv > 0 else 0.5
            step *= min(0.5, max(0.1, shrink))
        else:
            return x, "line search"
        g_new = _gradient(f, trial, ft)
        s, y = trial - x, g_new - g
        sy = float(s @ y)
        if sy > 1e-10 * float(y @ y):  # positive curvature along s: keep the pair
            pairs = [*pairs[-(MEMORY - 1) :], (s, y, 1.0 / sy)]
        decrease = (fx - ft) / max(abs(fx), abs(ft), 1.0)
        x, fx, g = trial, ft, g_new
        if decrease <= FTOL:
            return x, "ftol"


def minimize_with_phase(
    original: Any,
    fun: Any,
    x0: Any,
    args: tuple = (),
    method: str = "zovh",
    options: dict | None = None,
    rng: Any = None,
    **kwargs: Any,
) -> Any:
    """``zovh_opt.minimize`` with the phase first (module docstring)."""
    options = dict(options or {})
    x0 = np.asarray(x0, dtype=float)
    d = x0.shape[0]
    maxfev = options.get("maxfev") or 1000 * d
    plain = (
        not ENABLED
        or method != "zovh"
        or kwargs.get("bounds") is not None
        or any(k in options for k in ("learning_rate", "noisy", "curvature"))
    )
    if plain or maxfev < MIN_BUDGET * (d + 1) + 2:
        return original(fun, x0, args, method=method, options=options, rng=rng, **kwargs)
    f = _Counted(fun, args, maxfev)
    ended = "budget"
    start = None
    try:
        f0 = f(x0)
        if f(x0) == f0 and math.isfinite(f0):  # deterministic at x0
            _, ended = quasi_newton_phase(f, x0, f0)
        else:
            start, ended = x0, "noisy at x0"
    except _Spent:
        pass
    except _Noisy as noisy:
        ended = "noisy"
        start = noisy.x
        if NOISY_HANDOFF:
            options = {**options, "noisy": True}
    if start is None:
        start = x0 if f.x_best is None else f.x_best
    left = maxfev - f.nfev
    try:
        if left < 1:
            raise ValueError("maxfev must allow an evaluation")
        res = original(
            fun, start, args, method=method, rng=rng, options={**options, "maxfev": left}, **kwargs
        )
    except ValueError as error:  # too little left for an iteration
        if "maxfev must allow" not in str(error):
            raise
        res = OptimizeResult(
            x=start,
            fun=f.best,
            nfev=0,
            nit=0,
            status=1,
            success=False,
            message="budget spent by the gradient phase",
        )
    if f.best < res.fun and not ended.startswith("noisy"):
        res.x, res.fun = f.x_best, f.best
    res.nfev += f.nfev
    res.gradient_phase = ended
    return res


def patch() -> None:
    import zovh_opt
    from zovh_opt import _minimize

    original = _minimize.minimize

    def patched(fun: Any, x0: Any, args: tuple = (), method: str = "zovh", **kwargs: Any) -> Any:
        return minimize_with_phase(original, fun, x0, args, method, **kwargs)

    _minimize.minimize = patched
    zovh_opt.minimize = patched
