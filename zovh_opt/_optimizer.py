"""The ask/tell driver: budgets, stopping rules, safeguards, the best point and checkpoints.

`Optimizer` wraps one method object (the math of one iteration) and adds everything a run
needs around it. `minimize` is `Optimizer(...).run(fun)`; users who drive evaluation themselves
call ``ask``/``tell`` directly. The driver never looks inside the estimators: it sees points,
values, the iterate and two numbers per step (its length and its amplification).
"""

from __future__ import annotations

import math
import pickle
import time
import warnings
from array import array
from collections import deque
from collections.abc import Callable
from typing import Any

from scipy.optimize import OptimizeResult, OptimizeWarning

from ._backend import DirectionSource, as_array, namespace_of, to_host_floats
from ._methods import METHODS
from ._options import (
    Option,
    boolean,
    finite_real,
    integer_at_least,
    optional,
    positive_real,
    resolve,
)

__all__ = ["Optimizer"]

# Status codes; 0-2 and 99 mean what they mean in scipy.optimize.
SUCCESS, MAXFEV, MAXITER, FAILED, FTARGET, MAXTIME, INTERRUPTED, CALLBACK = 0, 1, 2, 3, 4, 5, 6, 99
RUNNING = -1

# What counts as a failed step (Sec. "Step-size safety" of the `Optimizer` docstring).
GROWTH = 100.0  # f estimate above its minimum by this many times its scale
BACKOFF = 0.25  # learning-rate cut at each restart

# The learning-rate search of ``learning_rate="auto"``.
AUTO_GRID = tuple(10.0**-k for k in range(1, 10))  # 1e-1 ... 1e-9
AUTO_ITERATIONS = 10  # iterations per trial rate
AUTO_SCORED = 3  # trailing iterations whose mean f estimate scores a trial


def _learning_rate(name: str, value: Any) -> float | str:
    if value == "auto":
        return "auto"
    return positive_real(name, value)


def _disp(name: str, value: Any) -> int:
    """``False`` (0), ``True`` (-1: about 20 rows a run) or print every ``value`` iterations."""
    if isinstance(value, bool):
        return -1 if value else 0
    return integer_at_least(1)(name, value)


DRIVER_OPTIONS: dict[str, Option] = {
    "maxiter": Option(1000, integer_at_least(1)),
    "maxfev": Option(None, optional(integer_at_least(1))),
    "maxtime": Option(None, optional(positive_real)),
    "ftarget": Option(None, optional(finite_real)),
    "ftol": Option(None, optional(positive_real)),
    "ftol_window": Option(50, integer_at_least(1)),
    "noisy": Option(False, boolean),
    "final_evaluations": Option(None, optional(integer_at_least(1))),
    "max_restarts": Option(5, integer_at_least(0)),
    "disp": Option(False, _disp),
    "progress": Option(False, boolean),
}


def checked_method(method: Any) -> str:
    """``method`` if it names a method, else ``ValueError`` listing the names."""
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be one of {sorted(METHODS)}, got {method!r}")
    return method


def known_options(method: str, options: dict[str, Any], stacklevel: int) -> dict[str, Any]:
    """``options`` without the names ``method`` does not know, which warn like SciPy."""
    specs = {**METHODS[method].options, **DRIVER_OPTIONS}
    unknown = sorted(set(options) - set(specs))
    if unknown:
        warnings.warn(
            f"Unknown solver options: {', '.join(unknown)}",
            OptimizeWarning,
            stacklevel=stacklevel + 1,
        )
    return {k: v for k, v in options.items() if k in specs}


class Optimizer:
    r"""A minimization run as an object: ``ask()`` points, ``tell(values)``, ``result()``.

    For objectives that the caller evaluates (a training loop, a job queue, a cluster) and for
    runs that must survive a restart of the process. `zovh_opt.minimize` builds one and calls
    `run`; the two give the same iterates for the same seed.

    Parameters
    ----------
    x0 : array_like, shape (d,)
        Starting point; namespace, device and dtype (float32 or float64) are kept.
    method : str, default "zovh"
        One of ``zovh_opt.METHODS``.
    options : dict, optional
        Method and driver options, as for `zovh_opt.minimize`.
    tol : float, optional
        Sets ``ftol`` unless ``options`` gives it.
    rng : None, int or generator, optional
        SPEC 7 source of the random directions.

    Attributes
    ----------
    x : array
        The current iterate.
    nit, nfev : int
        Iterations and function evaluations so far.
    done : bool
        True once the run has ended; `result` then holds the final answer.

    Examples
    --------
    >>> import numpy as np
    >>> from zovh_opt import Optimizer
    >>> opt = Optimizer(np.ones(50), options={"learning_rate": 1e-3, "maxiter": 200}, rng=0)
    >>> while not opt.done:
    ...     points = opt.ask()
    ...     opt.tell([float(p @ p) for p in points])
    >>> res = opt.result()
    >>> res.nit, res.nfev, bool(res.fun < 1.0)
    (200, 601, True)

    Notes
    -----
    **Order of a run.** With ``learning_rate="auto"`` the run starts with a search over
    ``1e-1, 1e-2, ..., 1e-9``: each trial rate runs ``10`` iterations from ``x0``, from the
    largest rate down, and is scored by its mean f estimate over its last ``3`` iterations; the
    scan stops once two rates in a row score worse than the best. The run then continues the
    best trial at its rate; should that rate prove too large later, the safeguard below cuts
    it. This costs at most ``9 * 10`` iterations, ``90 * K`` evaluations for ZoVH, all
    counted in ``nit`` and ``nfev`` (and in ``trace``, which then starts with the trials).
    Then come the iterations proper, until a stopping rule fires; then one final ask: the
    iterate itself, ``final_evaluations`` times.

    **Failed iterations and restarts.** An iteration fails when (a) an evaluated value is NaN
    or +-inf: those values never reach the estimators; or (b) its f estimate (the mean of its
    values, see ``trace``) exceeds the lowest one so far by more than ``100`` times their
    scale (the largest of the first estimate, the lowest one, the decrease between them and
    the spread of the first iteration's values): the iterates are diverging. The run then
    restarts from the iterate with the lowest f estimate so far, with the queries forgotten
    and the learning rate cut by 4, and ``result().restarts`` records it. After
    ``max_restarts`` restarts the next failure ends the run with status 3. (A ZoVH step at a
    Woodbury denominator near zero is not a failure of the rate: ZoVH does not take it and
    ``result().rejected_steps`` counts it; see `zovh_opt.ZoVH`.)

    **The returned point.** By default ``x`` is the point with the lowest value among all
    evaluated points (the queries and the final iterate) whose value is finite, and ``fun`` is
    that value: ``fun == f(x)`` for a deterministic objective, whatever failed on the way.
    With ``noisy=True`` the minimum of noisy values is a biased pick (it favours points whose
    noise was negative), so ``x`` is the final iterate and ``fun`` the mean of
    ``final_evaluations`` (default 10) fresh evaluations there, with its standard error in
    ``fun_std_error``; ``ftarget`` then compares the f estimate of each iteration.

    **Checkpoints.** `save` pickles the whole state, the random generator and the query history
    included; `load` brings it back, and the run continues bit for bit as if it had not
    stopped, also between an ``ask`` and its ``tell``. Elapsed time (for ``maxtime``) carries
    over. Only load files you trust: unpickling runs code.
    """

    def __init__(
        self,
        x0: Any,
        method: str = "zovh",
        *,
        options: dict[str, Any] | None = None,
        tol: float | None = None,
        rng: Any = None,
    ) -> None:
        method = checked_method(method)
        if options is not None and not isinstance(options, dict):
            raise TypeError(f"options must be a dict, got {type(options).__name__}")
        options = known_options(method, dict(options or {}), stacklevel=2)
        if tol is not None:
            options.setdefault("ftol", tol)
        x0 = validated_x0(x0)
        cls = METHODS[method]
        learning_rate = _learning_rate(
            "learning_rate", options.get("learning_rate", cls.options["learning_rate"].default)
        )
        method_options = {k: v for k, v in options.items() if k in cls.options}
        method_options.pop("learning_rate", None)
        self.options = resolve(DRIVER_OPTIONS, options)
        if self.options["final_evaluations"] is None:
            self.options["final_evaluations"] = 10 if self.options["noisy"] else 1
        self.method = method
        self.xp = namespace_of(x0)
        self._cls = cls
        self._method_options = method_options
        self._seeds = DirectionSource(rng)
        first_rate = AUTO_GRID[0] if learning_rate == "auto" else learning_rate
        self._step = self._new_method(x0, first_rate)  # validates the options; copies x0
        start = self._step.x  # the method's private copy: steps make new arrays, so it stays
        self.x0 = start if learning_rate == "auto" else None  # the trials start from it
        self._auto = {"trial": 0, "scores": [], "best": None} if learning_rate == "auto" else None

        per_iteration = self._step.points_per_iteration
        final = self.options["final_evaluations"]
        maxfev = self.options["maxfev"]
        if maxfev is not None and maxfev < per_iteration + final:
            raise ValueError(
                f"maxfev must allow one iteration and the final evaluation "
                f"(>= {per_iteration + final} for method {method!r}), got {maxfev}"
            )
        self.nit = 0
        self.nfev = 0
        self.status = RUNNING
        self.message = "The run has not ended."
        self.restarts: list[dict[str, Any]] = []
        self._phase = "search"
        self._pending: tuple[str, Any] | None = None
        self._best: tuple[float, Any] | None = None  # lowest finite evaluated value, its point
        self._anchor: tuple[float, Any] = (math.inf, start)  # lowest f estimate, its iterate
        self._scale: float | None = None  # the divergence test's scale
        self._first = math.nan  # f estimate of the first finite iteration
        self._final_values: list[float] | None = None
        self._recent: deque[float] = deque(maxlen=2 * self.options["ftol_window"])
        self._trace = {"nit": array("q"), "nfev": array("q"), "fun": array("d")}
        self._rejected = 0  # by method objects replaced since (learning-rate search)
        self._elapsed = 0.0
        self._since = time.perf_counter()

    # the protocol ---------------------------------------------------------------------------

    @property
    def x(self) -> Any:
        return self._step.x

    @property
    def done(self) -> bool:
        return self._phase == "done"

    @property
    def elapsed(self) -> float:
        """Wall-clock seconds the run has been going, across checkpoints."""
        return self._elapsed + time.perf_counter() - self._since

    @property
    def learning_rate(self) -> float:
        return self._step.learning_rate

    @property
    def f_estimate(self) -> float:
        """Mean of the latest iteration's values (``nan`` before the first)."""
        return self._trace["fun"][-1] if self._trace["fun"] else math.nan

    @property
    def step_norm(self) -> float:
        """Length of the latest step."""
        return self._step.step_norm

    def ask(self) -> Any:
        """The next points to evaluate, an ``(n_points, d)`` array like ``x0``."""
        if self._pending is not None:
            raise RuntimeError("ask() was called twice without tell() in between")
        if self.done:
            raise RuntimeError(f"the run has ended ({self.message}); see result()")
        if self._phase == "search":
            self._check_budgets()
        if self._phase == "final":
            n = self.options["final_evaluations"]
            points = self.xp.stack([self.x] * n)
        else:
            points = self._step.ask()
        self._pending = (self._phase, points)
        return points

    def tell(self, values: Any) -> None:
        """Take the values of the points of the last `ask`, in order, and advance the run.

        ``values`` is a sequence of real numbers or a one-dimensional array of any namespace.
        """
        if self._pending is None:
            raise RuntimeError("tell() needs a preceding ask()")
        phase, points = self._pending
        host = to_host_floats(values, "values")
        if len(host) != points.shape[0]:
            raise ValueError(f"tell() expects {points.shape[0]} values, got {len(host)}")
        self._pending = None
        self.nfev += len(host)
        self._observe(points, host)
        del points  # before the step: the memory of the points is the step's to use
        if phase == "final":
            self._final_values = host
            self._phase = "done"
            return
        self.nit += 1
        f_estimate = _mean(host)
        self._record(f_estimate)
        failure = self._failure(host, f_estimate)
        if failure is None:
            if f_estimate < self._anchor[0]:
                self._anchor = (f_estimate, self.x)  # steps make new arrays: no copy needed
            self._step.tell(host)
        if self._auto is not None:
            self._advance_search(failure, f_estimate)
        elif failure is not None:
            self._restart(failure)
        else:
            self._check_convergence(f_estimate)

    def result(self) -> OptimizeResult:
        """The run's answer so far, as a ``scipy.optimize.OptimizeResult``.

        Fields: ``x``, ``fun``, ``nit``, ``nfev``, ``status``, ``success``, ``message``,
        ``learning_rate`` (the rate in use at the end), ``restarts`` (one dict per restart:
        ``nit``, ``nfev``, ``reason``, ``learning_rate``), ``trace`` (``"nit"``, ``"nfev"``,
        ``"fun"``: one entry per iteration, ``fun`` being the mean of its values), the method's
        ``jac`` and, for ZoVH, ``hess_inv``; with ``noisy=True`` also ``fun_std_error``.
        """
        x, fun, extra = self._answer()
        return OptimizeResult(
            x=x,
            fun=fun,
            nit=self.nit,
            nfev=self.nfev,
            status=self.status,
            success=self.status in (SUCCESS, FTARGET),
            message=self.message,
            learning_rate=self.learning_rate,
            restarts=[dict(r) for r in self.restarts],
            rejected_steps=self._rejected + self._step.rejected_steps,
            trace={k: v.tolist() for k, v in self._trace.items()},
            **extra,
            **self._step.estimates(),
        )

    def stop(self, status: int, message: str, *, evaluate_final: bool = True) -> None:
        """End the run with ``status`` and ``message``: the next ask is the final evaluation
        (or, with ``evaluate_final=False``, there is none and `done` is True)."""
        self.status, self.message = status, message
        self._auto = None
        self._phase = "final" if evaluate_final else "done"

    def save(self, path: Any) -> None:
        """Write the whole state to ``path`` (a pickle); see `load`."""
        with open(path, "wb") as file:
            pickle.dump(self, file, protocol=pickle.HIGHEST_PROTOCOL)

    @classmethod
    def load(cls, path: Any) -> Optimizer:
        """Read a state written by `save`; the run continues bit for bit. Trusted files only."""
        with open(path, "rb") as file:
            obj = pickle.load(file)
        if not isinstance(obj, cls):
            raise TypeError(f"{path} does not hold a {cls.__name__}, but a {type(obj).__name__}")
        return obj

    def run(
        self,
        fun: Callable[..., Any],
        args: tuple = (),
        *,
        callback: Callable[..., Any] | None = None,
        workers: int | Callable[..., Any] | None = None,
        vectorized: bool = False,
    ) -> OptimizeResult:
        """Evaluate ``fun`` at every asked point until the run ends; see `zovh_opt.minimize`."""
        from ._evaluation import evaluator
        from ._reporting import Progress, callback_caller

        if not callable(fun):
            raise TypeError(f"fun must be callable, got {type(fun).__name__}")
        if not isinstance(args, tuple):
            args = (args,)
        notify = callback_caller(callback)
        progress = Progress(self.options["disp"], self.options["progress"], self)
        with evaluator(fun, args, workers, vectorized) as evaluate:
            try:
                while not self.done:
                    points = self.ask()
                    values: list[float] = []
                    evaluate(points, values)
                    del points
                    was_iteration = self._phase != "final"
                    self.tell(values)
                    if was_iteration:
                        progress.iteration(self)
                        if notify is not None and notify(self) and not self.done:
                            self.stop(CALLBACK, "`callback` raised `StopIteration`.")
            except KeyboardInterrupt:
                self._interrupt(values)
            finally:
                progress.close(self)
        return self.result()

    # internals ------------------------------------------------------------------------------

    def _new_method(self, x: Any, learning_rate: float) -> Any:
        return self._cls(x, rng=self._seeds, learning_rate=learning_rate, **self._method_options)

    def _replace_step(self, step: Any) -> None:
        self._rejected += self._step.rejected_steps - step.rejected_steps
        self._step = step

    def _observe(self, points: Any, values: list[float]) -> None:
        """Keep the best finite point among ``points`` (a copy of its row)."""
        finite = [(v, i) for i, v in enumerate(values) if math.isfinite(v)]
        if not finite:
            return
        value, i = min(finite)
        if self._best is not None and value >= self._best[0]:
            return
        xp = self.xp
        row = points[i, ...]
        # a finite sum means finite entries; only an overflowing sum pays for the d-sized mask
        if not math.isfinite(float(xp.sum(row))) and not bool(xp.all(xp.isfinite(row))):
            return
        if self._best is None:
            self._best = (value, xp.asarray(row, copy=True))
        else:  # into the same buffer: no second d-vector while the points are alive
            self._best[1][...] = row
            self._best = (value, self._best[1])

    def _record(self, f_estimate: float) -> None:
        self._trace["nit"].append(self.nit)
        self._trace["nfev"].append(self.nfev)
        self._trace["fun"].append(f_estimate)

    def _failure(self, values: list[float], f_estimate: float) -> str | None:
        """Why this iteration's values must not reach the estimators, or None."""
        bad = sum(not math.isfinite(v) for v in values)
        if bad:
            return f"{bad} of {len(values)} function values were not finite"
        if self._scale is None:
            spread = max(values) - min(values)
            self._scale = max(abs(f_estimate), spread, math.ulp(1.0))
            self._first = f_estimate
            return None
        lowest = min(self._anchor[0], f_estimate)  # the anchor holds the lowest estimate
        scale = max(self._scale, abs(lowest), self._first - lowest)
        if f_estimate - lowest > GROWTH * scale:
            return (
                f"f estimate {f_estimate:.6g} rose far above its lowest value "
                f"{lowest:.6g} (diverging iterates)"
            )
        return None

    def _restart(self, reason: str) -> None:
        x = self._anchor[1]
        if len(self.restarts) >= self.options["max_restarts"]:
            self._step.restart(x, self.learning_rate)
            self.stop(FAILED, f"Stopped after {len(self.restarts)} restarts: {reason}.")
            return
        rate = self.learning_rate * BACKOFF
        self._step.restart(x, rate)
        self._recent.clear()
        self.restarts.append(
            {"nit": self.nit, "nfev": self.nfev, "reason": reason, "learning_rate": rate}
        )

    def _advance_search(self, failure: str | None, f_estimate: float) -> None:
        """One iteration of the ``learning_rate="auto"`` search (see the class Notes)."""
        auto = self._auto
        auto.setdefault("estimates", []).append(f_estimate)
        if failure is None and len(auto["estimates"]) < AUTO_ITERATIONS:
            return
        scored = auto.pop("estimates")[-AUTO_SCORED:]
        score = math.inf if failure is not None else _mean(scored)
        auto["scores"].append(score)
        if auto["best"] is None or score < auto["best"][0]:
            auto["best"] = (score, self._step)
        best_score = auto["best"][0]
        worse_in_a_row = 0
        for s in reversed(auto["scores"]):
            if s <= best_score:
                break
            worse_in_a_row += 1
        auto["trial"] += 1
        more = auto["trial"] < len(AUTO_GRID)
        if more and not (math.isfinite(best_score) and worse_in_a_row >= 2):
            self._replace_step(self._new_method(self.x0, AUTO_GRID[auto["trial"]]))
            return
        self._auto = None
        if not math.isfinite(best_score):
            self.stop(FAILED, "learning_rate='auto': every trial rate failed.")
            return
        self._replace_step(auto["best"][1])

    def _check_budgets(self) -> None:
        opts = self.options
        reserve = self._step.points_per_iteration + opts["final_evaluations"]
        if self.nit >= opts["maxiter"]:
            self.stop(MAXITER, "Maximum number of iterations has been exceeded.")
        elif opts["maxfev"] is not None and self.nfev + reserve > opts["maxfev"]:
            self.stop(MAXFEV, "Maximum number of function evaluations has been exceeded.")
        elif opts["maxtime"] is not None and self.elapsed >= opts["maxtime"]:
            self.stop(MAXTIME, f"Maximum time of {opts['maxtime']:g} s has been exceeded.")

    def _check_convergence(self, f_estimate: float) -> None:
        opts = self.options
        target = opts["ftarget"]
        if target is not None:
            reached = f_estimate if opts["noisy"] or self._best is None else self._best[0]
            if reached <= target:
                self.stop(FTARGET, f"ftarget reached: f = {reached:.6g} <= {target:.6g}.")
                return
        if opts["ftol"] is None:
            return
        self._recent.append(f_estimate)
        window = opts["ftol_window"]
        if len(self._recent) == 2 * window:
            recent = list(self._recent)
            before, after = _mean(recent[:window]), _mean(recent[window:])
            if before - after <= opts["ftol"] * max(abs(before), abs(after), 1.0):
                self.stop(
                    SUCCESS,
                    f"The mean f estimate decreased by at most ftol (relative) over the last "
                    f"{window} iterations.",
                )

    def _interrupt(self, values: list[float]) -> None:
        """KeyboardInterrupt: keep what was evaluated, end without a final evaluation."""
        if self._pending is not None:
            phase, points = self._pending
            values = values[: points.shape[0]]
            self._observe(points[: len(values), ...], values)
            self.nfev += len(values)
            self._pending = None
            self._step._asked = None
        self.stop(INTERRUPTED, "Interrupted by the user (KeyboardInterrupt).", evaluate_final=False)

    def _answer(self) -> tuple[Any, float, dict[str, Any]]:
        """The returned point, its value and extra fields (see the class Notes)."""
        final = self._final_values
        mean = _mean(final) if final else math.nan
        if self.options["noisy"] and math.isfinite(mean):
            n = len(final)
            spread = sum((v - mean) * (v - mean) for v in final) / max(n - 1, 1)
            error = math.sqrt(spread / n) if n > 1 else math.nan
            return self.xp.asarray(self.x, copy=True), mean, {"fun_std_error": error}
        extra = {"fun_std_error": math.nan} if self.options["noisy"] else {}
        if self._best is None:
            return self.xp.asarray(self.x, copy=True), math.nan, extra
        return self.xp.asarray(self._best[1], copy=True), self._best[0], extra

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_elapsed"] = self.elapsed
        del state["xp"], state["_since"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.xp = namespace_of(self.x)
        self._since = time.perf_counter()


def _mean(values: list[float]) -> float:
    """Plain mean: overflows to inf and gives nan for inf - inf, where ``math.fsum`` raises."""
    return sum(values) / len(values)


def validated_x0(x0: Any) -> Any:
    """``x0`` as a finite, non-empty, one-dimensional float32 or float64 array."""
    x0 = as_array(x0)
    xp = namespace_of(x0)
    if x0.ndim != 1 or x0.shape[0] == 0:
        raise ValueError(
            f"x0 must be a non-empty one-dimensional array, got shape {tuple(x0.shape)}"
        )
    if xp.isdtype(x0.dtype, "complex floating") or xp.isdtype(x0.dtype, "bool"):
        raise TypeError(f"x0 must be real, got dtype {x0.dtype}")
    if not xp.isdtype(x0.dtype, "real floating"):
        x0 = xp.astype(x0, xp.float64)
    elif x0.dtype not in (xp.float32, xp.float64):
        raise TypeError(f"x0 must be float32 or float64, got dtype {x0.dtype}")
    if not bool(xp.all(xp.isfinite(x0))):
        raise ValueError("x0 must be finite")
    return x0
