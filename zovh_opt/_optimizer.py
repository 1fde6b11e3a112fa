"""The ask/tell driver: budgets, stopping rules, safeguards, the best point and checkpoints.

`Optimizer` wraps one method object (the math of one iteration) and adds everything a run
needs around it. `minimize` is `Optimizer(...).run(fun)`; users who drive evaluation themselves
call ``ask``/``tell`` directly. The driver never looks inside the estimators: it sees points,
values, the iterate and two numbers per step (its length and its amplification).
"""

from __future__ import annotations

import functools
import math
import statistics
import sys
import threading
import time
import warnings
from array import array
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.optimize import Bounds, OptimizeResult, OptimizeWarning

from . import _checkpoint
from ._backend import (
    ArraySpace,
    DirectionSource,
    as_array,
    namespace_of,
    norm,
    to_host_floats,
)
from ._bounds import Box, box_of
from ._checkpoint import CheckpointError
from ._curvature import DiagonalOperator
from ._interrupts import deferred_interrupts
from ._methods import METHODS
from ._step_size import length_scale
from ._options import (
    Option,
    boolean,
    finite_real,
    integer_between,
    optional,
    positive_or_auto,
    positive_real,
    resolve,
)

__all__ = ["Optimizer"]

# Status codes; 0-2 and 99 mean what they mean in scipy.optimize.
SUCCESS, MAXFEV, MAXITER, FAILED, FTARGET, MAXTIME, INTERRUPTED, CALLBACK = 0, 1, 2, 3, 4, 5, 6, 99
RUNNING = -1

# What counts as a failed step (Sec. "Failures and restarts" of the `Optimizer` docstring).
GROWTH = 100.0  # f estimate above its minimum by this many times its scale
BACKOFF = 0.25  # step (learning rate, with "auto" also smoothing radius) cut at each restart
FAILED_IN_A_ROW = 10  # iterations with a non-finite value dropped before that is a failure
MAXFEV_PER_DIMENSION = 1000  # the default budget, maxfev = 1000 d (SciPy's Powell: 1000 d)
FTOL = 1e-12  # default ftol with the step rule "auto": the f estimates have stopped decreasing
FTOL_WINDOW = 50  # iterations of an ftol window at least; by default those of 2 d evaluations
# a stall at one scale is not convergence: the step rule first goes on this many times with
# steps (and smoothing radius) this much shorter before ftol ends the run
STALL_RESCALES, STALL_FACTOR = 3, 0.1
XTOL_PER_SQRT_EPS = 1e-3  # default xtol = 1e-3 sqrt(eps): 1.5e-11 (float64), 3.5e-7 (float32)


def _disp(name: str, value: Any) -> int:
    """``False`` or ``0`` (0: silent), ``True`` (-1: about 20 rows a run) or print every
    ``value`` iterations, as SciPy's ``disp`` takes 0 and 1 for False and True."""
    if isinstance(value, bool):
        return -1 if value else 0
    return integer_between(0, BIG)(name, value)


BIG = 2**62  # counts beyond any run: an upper bound that keeps every count a 64-bit integer


def _disp_option(value: int) -> bool | int:
    """The ``disp`` option that `_disp` turns into ``value``."""
    return {-1: True, 0: False}.get(value, value)


DRIVER_OPTIONS: dict[str, Option] = {
    "maxiter": Option(None, optional(integer_between(1, BIG))),
    "maxfev": Option(None, optional(integer_between(1, BIG))),
    "maxtime": Option(None, optional(positive_real)),
    "ftarget": Option(None, optional(finite_real)),
    "ftol": Option("auto", optional(positive_or_auto)),
    "ftol_window": Option(None, optional(integer_between(1, BIG))),
    "xtol": Option("auto", optional(positive_or_auto)),
    "noisy": Option(False, boolean),
    "final_evaluations": Option(None, optional(integer_between(1, 10_000))),
    "max_restarts": Option(5, integer_between(0, 10**6)),
    "disp": Option(False, _disp),
    "progress": Option(False, boolean),
}


def _exclusive(method: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``method`` holding the optimizer's lock; another thread gets a clear error at once
    (never a half-updated state, never a wait). The lock is re-entrant: a callback of `run`
    may `save` from the same thread."""

    @functools.wraps(method)
    def guarded(self: Optimizer, *args: Any, **kwargs: Any) -> Any:
        if not self._lock.acquire(blocking=False):
            raise RuntimeError(
                "this Optimizer is in use by another thread: ask, tell, discard, run and save "
                "of one optimizer must not overlap (drive it from one thread, or hold a lock "
                "of your own around each call)"
            )
        try:
            return method(self, *args, **kwargs)
        finally:
            self._lock.release()

    return guarded


def checked_method(method: Any) -> str:
    """``method`` if it names a method, else ``ValueError`` listing the names."""
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be one of {sorted(METHODS)}, got {method!r}")
    return method


def known_options(method: str, options: dict[str, Any], stacklevel: int) -> dict[str, Any]:
    """``options`` without the names ``method`` does not know, which warn like SciPy, and with
    SciPy's ``maxfun`` (L-BFGS-B, TNC) read as ``maxfev``."""
    if "maxfun" in options:
        maxfun = options.pop("maxfun")
        if "maxfev" in options and options["maxfev"] != maxfun:
            raise ValueError(
                f"maxfun is another name for maxfev; got both, and they differ "
                f"({maxfun!r} and {options['maxfev']!r})"
            )
        options["maxfev"] = maxfun
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
    bounds : scipy.optimize.Bounds or sequence of (min, max) pairs, optional
        Box constraints, as for `zovh_opt.minimize`: every asked point lies in the box.

    Attributes
    ----------
    x : array
        A copy of the current iterate.
    nit, nfev : int
        Iterations and function evaluations so far.
    pending : array or None
        The points of an ask awaiting its `tell`.
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
    **Order of a run.** Iterations, until a stopping rule fires; then one final ask: the
    iterate itself, ``final_evaluations`` times (with ``noisy=True`` two: the iterate and
    ``x0``, ``final_evaluations`` times each, then the lower of the two as many times).
    With ``learning_rate="auto"`` (the default) each iteration after the first either
    measures the step rule's centre or tries a step from it, kept or undone on the mean of
    its values (`zovh_opt.minimize`, ``learning_rate``).

    **Failed evaluations.** An evaluation that returns NaN or +-inf is missing data: its
    iteration is dropped (none of its values reaches the estimators, the iterate stays, and
    the next iteration draws new directions), and ``result().failed_evaluations`` counts it.
    Only ``10`` such iterations in a row make a failure, below.

    **Failures and restarts.** An iteration fails when its values were not finite ``10``
    times in a row; the run then restarts from the step rule's centre (with a fixed rate:
    the iterate with the lowest f estimate so far) with steps cut by 4 (and the step rule's
    smoothing radius), the queries forgotten, and ``result().restarts`` records it
    (``cause``: ``"non-finite values"``). After ``max_restarts`` such restarts the next
    failure ends the run with status 3: the objective cannot be evaluated near ``x``. With a
    fixed rate, an f estimate (the mean of an iteration's values, see ``trace``) that
    exceeds the lowest one so far by more than ``100`` times their scale (the largest of the
    first estimate, the lowest one, the decrease between them and the spread of the first
    iteration's values) shows the iterates diverging: the run restarts the same way
    (``cause``: ``"divergence"``), whatever ``max_restarts``, since the cut rate ends it. The
    step rule cannot diverge: a step that makes the f estimate worse is undone. (A ZoVH step
    at a Woodbury denominator near zero is not taken and ``result().rejected_steps`` counts
    it; see `zovh_opt.ZoVH`.)

    **Stalls.** With the step rule, the first ``3`` times the ``ftol`` test fires the run
    does not stop: it goes on from the step rule's centre with steps and smoothing radius
    ``10`` times shorter (``cause``: ``"stall"`` in ``result().restarts``). A rugged
    objective (or a valley narrower than the queries' spread) makes the batch means at one
    scale look like noise, which the rule cannot tell from a minimum; only the finer scale
    can. Noise keeps its floor under the radius (`zovh_opt.minimize`, ``learning_rate``).

    **The returned point.** By default ``x`` is the point with the lowest value among all
    evaluated points (the queries and the final iterate) whose value is finite, and ``fun`` is
    that value: ``fun == f(x)`` for a deterministic objective, whatever failed on the way.
    With ``noisy=True`` the minimum of noisy values is a biased pick (it favours points whose
    noise was negative), so ``x`` is the final iterate and ``fun`` the mean of
    ``final_evaluations`` (default 10) fresh evaluations there, with its standard error in
    ``fun_std_error``; ``ftarget`` then compares the f estimate of each iteration. Where the
    noise buries the slope, the step rule accepts trials by chance and the iterate can drift
    uphill; so the final iterate is first compared with ``x0`` on ``final_evaluations`` fresh
    values each, and where ``x0``'s mean is lower ``x`` is ``x0`` (the message says so).
    ``fun`` comes from the evaluations after that choice, so it stays unbiased.

    **Nothing is aliased.** ``x0`` is copied; ``ask``, `pending`, ``x`` and `result` return
    new arrays, and the optimizer never reads an array it has handed out, so the caller (and
    ``fun``, which `run` gives a new array per call) may modify or keep them.

    **Exceptions and interrupts.** When ``fun`` raises inside `run`, the exception propagates
    unchanged and the ask stays pending with the values obtained so far: calling `run` again
    evaluates only the missing points and goes on, `tell` gives all values by hand, and
    `discard` drops the ask. A ``KeyboardInterrupt`` (Ctrl-C) ends `run` with status 6 and the
    result so far, every value obtained counted in ``nfev`` and kept for the best point; with
    a process pool, queued evaluations are cancelled and the running ones waited for (a second
    Ctrl-C stops waiting). `run` again continues the same run. A Ctrl-C during `tell` takes
    effect once its update is complete.

    **Checkpoints.** `save` writes the whole state, the random directions and the query history
    included, as arrays and plain data (no code; see `save`); `load` brings it back, and the
    run continues bit for bit as if it had not stopped, also between an ``ask`` and its
    ``tell``. Elapsed time (for ``maxtime``) carries over.
    """

    def __init__(
        self,
        x0: Any,
        method: str = "zovh",
        *,
        bounds: Any = None,
        options: dict[str, Any] | None = None,
        tol: float | None = None,
        rng: Any = None,
    ) -> None:
        self._lock = threading.RLock()
        method = checked_method(method)
        if options is not None and not isinstance(options, dict):
            raise TypeError(f"options must be a dict, got {type(options).__name__}")
        options = known_options(method, dict(options or {}), stacklevel=2)
        if tol is not None:
            options.setdefault("ftol", tol)
        x0 = validated_x0(x0)
        self._box, x0 = box_of(bounds, x0, ArraySpace(x0))
        scale = None  # of x0: |x0|, unless a box says more
        if self._box is not None:
            scale = self._box.length_scale(x0)
            x0 = self._box.start(x0)  # the run's own, unconstrained coordinates
        cls = METHODS[method]
        self._method_options = {k: v for k, v in options.items() if k in cls.options}
        # the run's unit of length: a power of two, so that the model's curvature (f over a
        # length squared) stays a normal float whatever the scale of x (see `run_unit`)
        if scale is None:
            scale = length_scale(norm(x0), x0.shape[0])
        self._unit = run_unit(scale, ArraySpace(x0).dtype_name, self._method_options)
        self._f_unit = 1.0  # of f: set by the first finite values (`_close`)
        if self._unit != 1.0:
            x0, scale = x0 / self._unit, scale / self._unit
        self.options = resolve(DRIVER_OPTIONS, options)
        if self.options["final_evaluations"] is None:
            self.options["final_evaluations"] = 10 if self.options["noisy"] else 1
        self.method = method
        self.xp = namespace_of(x0)
        self._cls = cls
        self._seeds = DirectionSource(rng)
        self._method_options = cls.options_for_budget(
            self._method_options, x0.shape[0], self.options["maxfev"]
        )
        # validates the options; copies x0
        self._step = cls(x0, rng=self._seeds, scale=scale, **self._method_options)
        # the tolerances stop the step rule "auto"; a fixed rate runs to its budget unless given
        adaptive = self._step.control is not None
        if self.options["ftol"] == "auto":
            self.options["ftol"] = FTOL if adaptive else None
        if self.options["ftol_window"] is None:
            self.options["ftol_window"] = max(
                FTOL_WINDOW, math.ceil(2 * self._step.space.dim / self._step.points_per_iteration)
            )
        self._eps = float(self.xp.finfo(x0.dtype).eps)  # the precision of x, and of f
        if self.options["xtol"] == "auto":
            self.options["xtol"] = XTOL_PER_SQRT_EPS * math.sqrt(self._eps) if adaptive else None

        # x0's length scale for xtol; the step rule keeps its own
        self._x0_scale = None
        if self._step.control is None and self.options["xtol"] is not None:
            self._x0_scale = self._step.scale
        per_iteration = self._step.points_per_iteration
        final = self._final_evaluations()
        if self.options["maxfev"] is None:
            self.options["maxfev"] = max(
                MAXFEV_PER_DIMENSION * self._step.space.dim, per_iteration + final
            )
        maxfev = self.options["maxfev"]
        if maxfev < per_iteration + final:
            raise ValueError(
                f"maxfev must allow one iteration and the final evaluation "
                f"(>= {per_iteration + final} for method {method!r}), got {maxfev}"
            )
        self.nit = 0
        self._told = 0  # evaluations of completed asks; nfev adds those of the pending one
        self.status = RUNNING
        self.message = "The run has not ended."
        self.restarts: list[dict[str, Any]] = []
        self._phase = "iterate"
        self._pending: str | None = None  # the phase of the pending ask
        self._partial: list[float | None] = []  # its values obtained so far (by `run`)
        self._best: tuple[float, Any] | None = None  # lowest finite evaluated value, its point
        # fixed rate: the lowest f estimate and its iterate, where a restart starts (the step
        # rule restarts from its centre: no iterate is held, which would be d floats more)
        fixed = self._step.control is None
        self._anchor: tuple[float, Any] = (math.inf, self._step.x if fixed else None)
        self._scale: float | None = None  # of f: the first batch's (divergence test, ftol)
        self._first = math.nan  # f estimate of the first finite iteration
        self._final_values: list[float] | None = None
        # noisy: the start, compared with the final iterate at the end (steps make new arrays:
        # a reference), and the values of that comparison once in
        self._start = self._step.x if self.options["noisy"] else None
        self._compared: list[float] | None = None
        self._recent: list[float] = []  # f estimates of the current ftol window
        self._previous_median = math.nan  # of the window before
        self._trace = {"nit": array("q"), "nfev": array("q"), "fun": array("d")}
        self._failed_evaluations = 0
        self._failed_in_a_row = 0
        self._elapsed = 0.0
        self._since = time.perf_counter()
        if self._box is not None and self._box.all_fixed:  # nothing to search: x is the answer
            self.stop(SUCCESS, "Every variable is fixed by the bounds (lower == upper).")

    # the protocol ---------------------------------------------------------------------------

    @property
    def x(self) -> Any:
        """A copy of the current iterate (with bounds: its image in the box)."""
        return self._to_user(self._step.x)

    @property
    def nfev(self) -> int:
        """Function evaluations so far, those of a pending ask obtained by `run` included."""
        return self._told + sum(v is not None for v in self._partial)

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
        return self._step.step_norm * self._unit

    def _iteration_budget(self) -> int:
        """The iterations the run can take: ``maxiter``, or as many as ``maxfev`` pays for
        (for the ``disp`` table and the progress bar)."""
        maxiter = self.options["maxiter"]
        # the final evaluations are reserved in maxfev (`_check_budgets`)
        paid = self.options["maxfev"] - self._final_evaluations()
        per_iteration = max(1, paid // self._step.points_per_iteration)
        return per_iteration if maxiter is None else min(maxiter, per_iteration)

    @_exclusive
    def ask(self) -> Any:
        """The next points to evaluate, a new ``(n_points, d)`` array like ``x0``."""
        self._open()
        return self._points()

    @property
    def pending(self) -> Any:
        """The points of the ask awaiting its `tell`, again (a new array), or ``None``."""
        return None if self._pending is None else self._points()

    @_exclusive
    def tell(self, values: Any) -> None:
        """Take the values of the points of the last `ask`, in order, and advance the run.

        ``values`` is a sequence of real numbers or a one-dimensional array of any namespace.
        """
        if self._pending is None:
            raise RuntimeError("tell() needs a preceding ask()")
        host = to_host_floats(values, "values")
        n = len(self._partial)
        if len(host) != n:
            raise ValueError(f"tell() expects {n} values, got {len(host)}")
        superseded = n - self._partial.count(None)  # values `run` had obtained: re-evaluated
        with deferred_interrupts():
            self._close(host, superseded)

    @_exclusive
    def discard(self) -> None:
        """Drop the pending ask without its values (they are missing: for example, ``fun``
        raised). Values `run` had obtained for it count in ``nfev`` and in the best point; the
        next `ask` draws new directions (or, at the end, asks for the final point again)."""
        if self._pending is None:
            return
        self._observe(self._partial)
        self._told = self.nfev
        if self._pending != "final":
            self._step.discard()
        self._pending, self._partial = None, []

    def result(self) -> OptimizeResult:
        """The run's answer so far, as a ``scipy.optimize.OptimizeResult``.

        Fields: ``x``, ``fun``, ``nit``, ``nfev``, ``status``, ``success``, ``message``,
        ``iteration`` (what ran: the method's name, or for ``"zovh"`` ``"Algorithm 1
        (curvature='off')"`` or ``"diagonal curvature model (curvature='diagonal')"``, as
        ``curvature`` and the budget rule chose), ``learning_rate`` (the rate in use at the end), ``restarts`` (one dict per restart:
        ``nit``, ``nfev``, ``reason``, ``cause``, ``learning_rate``), ``failed_evaluations``
        (values that were NaN or +-inf), ``trace`` (``"nit"``, ``"nfev"``, ``"fun"``: NumPy
        arrays with one entry per iteration, ``fun`` being the mean of its values), the
        method's ``jac`` and, for ZoVH, ``hess_inv`` (neither with bounds); with
        ``noisy=True`` also ``fun_std_error``.
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
            iteration=self._step.iteration,
            restarts=[dict(r) for r in self.restarts],
            rejected_steps=self._step.rejected_steps,
            failed_evaluations=self._failed_evaluations,
            trace={k: np.array(v) for k, v in self._trace.items()},
            **extra,
            # with bounds the estimates are of f o phi in the run's coordinates: not given
            **(self._estimates() if self._box is None else {}),
        )

    def _estimates(self) -> dict[str, Any]:
        """The method's ``jac`` and ``hess_inv``, in the user's units of length."""
        estimates = self._step.estimates()
        unit, f_unit = self._unit, self._f_unit
        if unit == 1.0 and f_unit == 1.0:
            return estimates
        # (unit^2 may overflow a float where the array holds inf or 0 honestly)
        with np.errstate(over="ignore", under="ignore"):
            if "jac" in estimates:
                estimates["jac"] = estimates["jac"] * (f_unit / unit)
            inverse = estimates.pop("hess_inv", None)
            if isinstance(inverse, DiagonalOperator):
                diagonal = inverse.diagonal() * (unit / f_unit)
                diagonal *= unit
                estimates["hess_inv"] = DiagonalOperator(diagonal)
        return estimates

    def stop(self, status: int, message: str, *, evaluate_final: bool = True) -> None:
        """End the run with ``status`` and ``message``: the next ask is the final evaluation
        (or, with ``evaluate_final=False``, there is none and `done` is True)."""
        self.status, self.message = status, message
        self._phase = "final" if evaluate_final else "done"

    @_exclusive
    def run(
        self,
        fun: Callable[..., Any],
        args: tuple = (),
        *,
        callback: Callable[..., Any] | None = None,
        workers: int | Callable[..., Any] | None = None,
        vectorized: bool = False,
    ) -> OptimizeResult:
        """Evaluate ``fun`` at every asked point until the run ends; see `zovh_opt.minimize`.

        A pending ask (left by an exception in ``fun`` or an interrupt) is completed first:
        only its missing values are evaluated.
        """
        from ._evaluation import evaluator
        from ._reporting import Progress, callback_caller

        if not callable(fun):
            raise TypeError(f"fun must be callable, got {type(fun).__name__}")
        if not isinstance(args, tuple):
            args = (args,)
        notify = callback_caller(callback)
        if self.status == INTERRUPTED:
            self.status, self.message = RUNNING, "The run has not ended."
        progress = Progress(self.options["disp"], self.options["progress"], self)
        with evaluator(fun, args, workers, vectorized) as evaluate:
            try:
                while not self.done:
                    if self._pending is None:
                        self._open()
                    evaluate(self._partial, self._point, self._points)
                    was_iteration = self._pending != "final"
                    with deferred_interrupts():
                        self._close(self._partial, 0)
                    if was_iteration:
                        progress.iteration(self)
                        if notify is not None and notify(self) and not self.done:
                            self.stop(CALLBACK, "`callback` raised `StopIteration`.")
            except KeyboardInterrupt:
                self._observe(self._partial)
                self.status = INTERRUPTED
                self.message = (
                    "Interrupted by the user (KeyboardInterrupt); run() again continues the run."
                )
            except BaseException:
                self._observe(self._partial)
                raise
            finally:
                progress.close(self)
        return self.result()

    # checkpoints ----------------------------------------------------------------------------

    @_exclusive
    def save(self, path: Any) -> None:
        """Write the whole state to ``path`` as a checkpoint file; `load` continues the run.

        The file is an uncompressed ``.npz`` archive (``numpy.load`` opens it) of the arrays,
        a JSON header with the options, counters and the array library, device and dtype, and
        a SHA-256 checksum of it all; it holds no code. It is written to a temporary file in
        the same directory and renamed over ``path`` once it is complete and on disk, so an
        interrupted save leaves the previous checkpoint as it was. A symbolic link is written
        through (its target is replaced; the link stays), as ``numpy.savez`` does.

        Raises
        ------
        FileExistsError
            If ``path`` is not a regular file (a directory, FIFO, device): never replaced.
        FileNotFoundError
            If ``path``'s directory does not exist.
        """
        from . import __version__

        _checkpoint.write(path, self._state(), package_version=__version__)

    @classmethod
    def load(cls, path: Any) -> Optimizer:
        """Read a checkpoint written by `save`; the run continues bit for bit.

        Raises
        ------
        zovh_opt.CheckpointError
            If the file is not a zovh-opt checkpoint, is a pickle of zovh-opt 0.1 (refused:
            loading a pickle runs code), is damaged or truncated (checksum), comes from a newer
            format version, needs an array library or device this process lacks, or holds an
            inconsistent state.
        OSError
            If the file cannot be read.
        """
        state, written_by = _checkpoint.read(path)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", OptimizeWarning)  # warned when it was built
                return cls._from_state(state)
        except ImportError as error:
            raise CheckpointError(
                f"{path} holds arrays of {state['space']['namespace']}, which is not "
                f"installed: {error}"
            ) from error
        except KeyError as error:
            raise CheckpointError(
                f"{path} (written by zovh-opt {written_by}) holds an inconsistent state: "
                f"{error} is missing"
            ) from error
        except LookupError as error:
            raise CheckpointError(f"{path}: {error}") from error
        except (TypeError, ValueError, AttributeError, IndexError) as error:
            raise CheckpointError(
                f"{path} (written by zovh-opt {written_by}) holds an inconsistent state: {error}"
            ) from error

    def _state(self) -> dict[str, Any]:
        return {
            "space": self._step.space.describe(),
            "method": self.method,
            "method_options": self._method_options,
            "bounds": None if self._box is None else self._box.state(),
            "options": {**self.options, "disp": _disp_option(self.options["disp"])},
            "source": self._seeds.get_state(),
            "step": self._step.state(),
            "nit": self.nit,
            "told": self._told,
            "status": self.status,
            "message": self.message,
            "restarts": self.restarts,
            "phase": self._phase,
            "pending": self._pending,
            "partial": self._partial,
            "best": None if self._best is None else list(self._best),
            "anchor": list(self._anchor),
            "scale": self._scale,
            "x0_scale": self._x0_scale,
            "unit": self._unit,
            "f_unit": self._f_unit,
            "first": self._first,
            "final_values": self._final_values,
            "start": self._start,
            "compared": self._compared,
            "recent": list(self._recent),
            "previous_median": self._previous_median,
            "trace": self._trace,
            "failed_evaluations": self._failed_evaluations,
            "failed_in_a_row": self._failed_in_a_row,
            "elapsed": self.elapsed,
        }

    @classmethod
    def _from_state(cls, state: dict[str, Any]) -> Optimizer:
        space = ArraySpace.described(state["space"])
        x0 = space.to_user(space.zeros((space.dim,)))
        options = {**state["options"], **state["method_options"]}
        bounds = state["bounds"]
        opt = cls(
            x0,
            state["method"],
            bounds=None if bounds is None else Bounds(*bounds[:2]),
            options=options,
            rng=0,
        )
        if bounds is not None:  # checkpoints written before the scales were kept: pycma's 1
            opt._box = Box(*bounds[:2], space, bounds[2] if len(bounds) > 2 else None)
        opt._seeds.set_state(state["source"])
        opt._step.load_state(state["step"])
        vector = opt._step._vector
        user = space.to_user
        opt.nit, opt._told = int(state["nit"]), int(state["told"])
        opt.status, opt.message = int(state["status"]), str(state["message"])
        opt.restarts = [dict(r) for r in state["restarts"]]
        if state["phase"] not in ("iterate", "final", "done"):
            raise ValueError(f"unknown phase {state['phase']!r}")
        if state["pending"] not in (None, "iterate", "final"):
            raise ValueError(f"unknown pending phase {state['pending']!r}")
        opt._phase, opt._pending = state["phase"], state["pending"]
        opt._partial = [None if v is None else float(v) for v in state["partial"]]
        if (opt._pending is None) != (not opt._partial) or (
            opt._pending == "iterate" and not opt._step.asked
        ):
            raise ValueError("the pending ask and its values disagree")
        best = state["best"]
        opt._best = None if best is None else (float(best[0]), user(vector(best[1])))
        anchor = state["anchor"]
        opt._anchor = (float(anchor[0]), None if anchor[1] is None else user(vector(anchor[1])))
        opt._scale = None if state["scale"] is None else float(state["scale"])
        opt._x0_scale = None if state["x0_scale"] is None else float(state["x0_scale"])
        # written before the units were kept: 1
        opt._unit, opt._f_unit = float(state.get("unit", 1.0)), float(state.get("f_unit", 1.0))
        opt._first = float(state["first"])
        final = state["final_values"]
        opt._final_values = None if final is None else [float(v) for v in final]
        start, compared = state.get("start"), state.get("compared")
        opt._start = None if start is None else user(vector(start))
        opt._compared = None if compared is None else [float(v) for v in compared]
        opt._recent = [float(v) for v in state["recent"]]
        opt._previous_median = float(state["previous_median"])
        opt._trace = {
            "nit": array("q", state["trace"]["nit"].tolist()),
            "nfev": array("q", state["trace"]["nfev"].tolist()),
            "fun": array("d", state["trace"]["fun"].tolist()),
        }
        opt._failed_evaluations = int(state["failed_evaluations"])
        opt._failed_in_a_row = int(state["failed_in_a_row"])
        opt._elapsed = float(state["elapsed"])
        return opt

    # internals ------------------------------------------------------------------------------

    def _open(self) -> None:
        """Start an ask: check budgets, let the method draw its directions."""
        if self._pending is not None:
            raise RuntimeError(
                "ask() was called twice without tell() in between: tell() the values of the "
                "pending points (`pending` gives them again), or discard() them"
            )
        if self.done:
            raise RuntimeError(f"the run has ended ({self.message}); see result()")
        if self._phase == "iterate":
            self._check_budgets()
        if self._phase == "final":
            n = self.options["final_evaluations"] * (2 if self._comparing() else 1)
        else:
            self._step.prepare()
            n = self._step.points_per_iteration
        self._pending, self._partial = self._phase, [None] * n

    def _final_evaluations(self) -> int:
        """Evaluations after the last iteration: ``final_evaluations``, three times as many
        with ``noisy=True`` (the comparison with the start, then the returned point)."""
        return self.options["final_evaluations"] * (3 if self.options["noisy"] else 1)

    def _comparing(self) -> bool:
        """Whether the next final ask compares the final iterate with the start."""
        return self._start is not None and self._compared is None

    def _final_point(self, i: int) -> Any:
        """Point ``i`` of the final ask (a new array): the final iterate, the start for the
        second half of a comparison, or the point chosen by the comparison."""
        n = self.options["final_evaluations"]
        if (i >= n) if self._comparing() else self._chose_start():
            return self._to_user(self._start)
        return self.x

    def _to_user(self, x: Any) -> Any:
        """A new array of the run's point ``x`` in the user's coordinates: times the run's
        unit, and mapped onto the box where there is one."""
        if self._unit != 1.0:
            x = x * self._unit
        return self._box.to_box(x) if self._box is not None else self.xp.asarray(x, copy=True)

    def _chose_start(self) -> bool:
        """Whether the comparison found the start lower than the final iterate: the mean of
        its finite values below the final iterate's. A NaN or inf is missing data, left out of
        its side's mean (one failed evaluation must not decide); a side with no finite value
        loses."""
        if self._compared is None:
            return False
        n = self.options["final_evaluations"]
        at_x, at_start = _finite_mean(self._compared[:n]), _finite_mean(self._compared[n:])
        return at_start < at_x

    def _point(self, i: int) -> Any:
        """Point ``i`` of the pending ask, as a new array."""
        if self._pending == "final":
            return self._final_point(i)
        if self._box is not None or self._unit != 1.0:
            return self._to_user(self._step.pending_point(i))
        return self._step.pending_point(i)

    def _points(self, indices: list[int] | None = None) -> Any:
        """The pending points (those at ``indices``), stacked in a new array."""
        n = len(self._partial)
        if indices is None or list(indices) == list(range(n)):
            if self._pending == "final":
                return self.xp.stack([self._final_point(i) for i in range(n)])
            if self._box is not None or self._unit != 1.0:
                return self._to_user(self._step.pending_points())
            return self._step.pending_points()
        return self.xp.stack([self._point(i) for i in indices])

    def _close(self, values: list[float], superseded: int) -> None:
        """The values of the pending ask are in: the best point, the step, the stopping rules."""
        phase = self._pending
        self._observe(values)
        self._told += len(values) + superseded
        self._pending, self._partial = None, []
        bad = sum(not math.isfinite(v) for v in values)
        self._failed_evaluations += bad
        if phase == "final":
            if self._comparing():
                self._compared = list(values)  # the next final ask measures the choice
                if self._chose_start():
                    self.message += (
                        " The final iterate's mean value was above the start's: x is the start."
                    )
                return
            self._final_values = list(values)
            self._phase = "done"
            if self.options["noisy"] and not any(math.isfinite(v) for v in values):
                self.message += (
                    " Every final evaluation failed (NaN or inf): x and fun are the lowest "
                    "finite value seen, a biased pick among noisy values."
                )
            return
        self.nit += 1
        f_estimate = _mean(values)
        self._record(f_estimate)
        failure = None
        if bad:
            self._failed_in_a_row += 1
            self._step.discard()  # missing data: the next iteration draws anew
            if self._failed_in_a_row < FAILED_IN_A_ROW:
                return
            failure = (
                f"function values were not finite in {FAILED_IN_A_ROW} iterations in a row "
                f"({bad} of {len(values)} in the last)"
            )
            self._failed_in_a_row = 0
        else:
            self._failed_in_a_row = 0
            if self._scale is None:
                # (a tiny floor only for f = 0 everywhere: an absolute one such as ulp(1)
                # would be a stopping rule for f ~ 1e-31 that f ~ 1 does not have)
                spread = max(values) - min(values)
                self._scale = max(abs(f_estimate), spread, sys.float_info.min)
                # the run's unit of f, as of length: the curvature model's float32 arrays
                # hold f / length^2, which overflows for f ~ 1e38
                self._f_unit = run_unit(
                    self._scale, self._step.space.dtype_name, self._method_options
                )
                self._first = f_estimate
            if self._step.control is None:
                failure = self._divergence(f_estimate)
            if failure is None:
                if self._step.control is None and f_estimate < self._anchor[0]:
                    self._anchor = (f_estimate, self._step.x)  # steps make new arrays
                told = np.asarray(values, dtype=np.float64)  # checked floats
                if self._f_unit != 1.0:
                    told /= self._f_unit
                # the stopping rules read the method's f estimate (the curvature model's
                # removes its smoothing bias, which grows as the model learns)
                f_estimate = self._step.f_estimate(told) * self._f_unit
                self._step.tell(told)
            else:
                self._step.discard()
        if failure is not None:
            self._restart(failure, diverged=not bad)
        else:
            self._check_convergence(f_estimate)

    def _observe(self, values: list[float | None]) -> None:
        """Keep the best finite point among the pending ones with a value (made again: the
        arrays handed out may have been modified)."""
        finite = [(v, i) for i, v in enumerate(values) if v is not None and math.isfinite(v)]
        if not finite:
            return
        value, i = min(finite)
        if self._best is not None and value >= self._best[0]:
            return
        xp = self.xp
        row = self._point(i)
        # a finite sum means finite entries; only an overflowing sum pays for the d-sized mask
        if not math.isfinite(float(xp.sum(row))) and not bool(xp.all(xp.isfinite(row))):
            return
        self._best = (value, row)

    def _record(self, f_estimate: float) -> None:
        self._trace["nit"].append(self.nit)
        self._trace["nfev"].append(self._told)
        self._trace["fun"].append(f_estimate)

    def _divergence(self, f_estimate: float) -> str | None:
        """Why this iteration's f estimate shows diverging iterates (fixed rate), or None."""
        lowest = min(self._anchor[0], f_estimate)  # the anchor holds the lowest estimate
        scale = max(self._scale, abs(lowest), self._first - lowest)
        if f_estimate - lowest > GROWTH * scale:
            return (
                f"f estimate {f_estimate:.6g} rose far above its lowest value "
                f"{lowest:.6g} (diverging iterates)"
            )
        return None

    def _restart(self, reason: str, *, diverged: bool) -> None:
        """Start again with shorter steps: a fixed rate from the iterate with the lowest f
        estimate, the step rule from its centre. Divergence always restarts (the steps shrink
        until it stops); non-finite values end the run after ``max_restarts`` restarts."""
        cause = "divergence" if diverged else "non-finite values"
        unusable = sum(r["cause"] == "non-finite values" for r in self.restarts)
        if not diverged and unusable >= self.options["max_restarts"]:
            self.stop(
                FAILED,
                f"The objective cannot be evaluated near x: {reason}, and again after "
                f"{unusable} restarts with shorter steps. Check fun there; where it is "
                f"undefined, a large finite value lets the run step around it.",
            )
            return
        if self._step.control is None:
            rate = self.learning_rate * BACKOFF
            self._step.restart(self._anchor[1], rate)
        else:
            self._step.shorten(BACKOFF)
            rate = self.learning_rate
        self._recent, self._previous_median = [], math.nan
        self._record_restart(reason, cause, rate)

    def _rescale(self) -> None:
        """Go on from the step rule's centre at a finer scale (the class Notes, *Stalls*)."""
        self._step.shorten(STALL_FACTOR)
        self._recent = []  # the next window is compared with the stalled one
        reason = f"the f estimates stalled (ftol); steps {STALL_FACTOR:g} times as long"
        self._record_restart(reason, "stall", self.learning_rate)

    def _record_restart(self, reason: str, cause: str, learning_rate: float) -> None:
        """One entry of ``result().restarts``."""
        self.restarts.append(
            {
                "nit": self.nit,
                "nfev": self._told,
                "reason": reason,
                "cause": cause,
                "learning_rate": learning_rate,
            }
        )

    def _check_budgets(self) -> None:
        opts = self.options
        reserve = self._step.points_per_iteration + self._final_evaluations()
        if opts["maxiter"] is not None and self.nit >= opts["maxiter"]:
            self.stop(
                MAXITER,
                "Maximum number of iterations has been exceeded. No tolerance was met within "
                f"maxiter={opts['maxiter']}; raise it to go on.",
            )
        elif self._told + reserve > opts["maxfev"]:
            self.stop(
                MAXFEV,
                "Maximum number of function evaluations has been exceeded. No tolerance was "
                f"met within maxfev={opts['maxfev']}; raise it to go on.",
            )
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
        self._recent.append(f_estimate)
        if opts["ftol"] is not None and len(self._recent) == opts["ftol_window"]:
            before, after = self._previous_median, statistics.median(self._recent)
            self._recent, self._previous_median = [], after
            # relative to the estimates, as SciPy's ftol; below the precision of f at x0 no
            # decrease is real (0.1.0 took ftol of that scale too, which stopped a run at
            # f - f* = 1e-12 |f(x0)|, far above COCO's targets for |f(x0)| ~ 1e7)
            floor = self._eps * self._scale
            if before - after <= max(opts["ftol"] * max(abs(before), abs(after)), floor):
                stalls = sum(r["cause"] == "stall" for r in self.restarts)
                if self._step.control is not None and stalls < STALL_RESCALES:
                    self._rescale()
                    return
                self.stop(
                    SUCCESS,
                    f"The median f estimate of the last {opts['ftol_window']} iterations was "
                    "lower than that of the iterations before by at most ftol (relative).",
                )
                return
        if opts["xtol"] is not None and self._step_length() <= opts["xtol"] * self._length_scale():
            self.stop(
                SUCCESS,
                "The steps became shorter than xtol times the length scale of x0.",
            )

    def _step_length(self) -> float:
        """The running step length of the step rule, or the latest step's with a fixed rate."""
        control = self._step.control
        return self._step.step_norm if control is None else control.step_length

    def _length_scale(self) -> float:
        """The length scale of ``x0`` that ``xtol`` multiplies."""
        control = self._step.control
        return self._x0_scale if control is None else control.scale

    def _answer(self) -> tuple[Any, float, dict[str, Any]]:
        """The returned point, its value and extra fields (see the class Notes)."""
        final = [v for v in self._final_values or () if math.isfinite(v)]  # NaN: missing
        mean = _finite_mean(final)
        if self.options["noisy"] and math.isfinite(mean):
            n = len(final)
            spread = sum((v - mean) * (v - mean) for v in final) / max(n - 1, 1)
            error = math.sqrt(spread / n) if n > 1 else math.nan
            return self._final_point(0), mean, {"fun_std_error": error}
        extra = {"fun_std_error": math.nan} if self.options["noisy"] else {}
        if self._best is None:
            return self.x, math.nan, extra
        return self.xp.asarray(self._best[1], copy=True), self._best[0], extra

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_elapsed"] = self.elapsed
        del state["xp"], state["_since"], state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()
        self.xp = namespace_of(self._step.x)
        self._since = time.perf_counter()


def run_unit(scale: float, dtype: str, method_options: dict[str, Any]) -> float:
    """The run's unit of length (or of f): 1, or for a scale beyond ``2**(maxexp / 16)`` (or
    below its inverse; ``2**64`` in float64, ``2**8`` in float32) a power of two near it.

    The step rule is scale-free: ``x -> a x`` for a power of two ``a`` gives the same
    iterates, bit for bit, as long as no number leaves the floats' range. The curvature model
    holds ``f / length**2``, which at ``|x0| = 1e160`` with ``f ~ 1`` is ``1e-320`` (below
    float64's normal range, and 0 soon after): in units of the scale it stays near 1. Only
    where every option is scale-free (``learning_rate``, ``smoothing`` and
    ``regularization`` left ``"auto"``); a number given for one of them is in the user's
    units, and the run keeps them.
    """
    if any(
        not (isinstance(method_options.get(name, "auto"), str))
        for name in ("learning_rate", "smoothing", "regularization")
    ):
        return 1.0
    limit = 2.0 ** (np.finfo(np.dtype(dtype)).maxexp // 16)
    if 1 / limit <= scale <= limit or not math.isfinite(scale):
        return 1.0
    return math.ldexp(1.0, math.frexp(scale)[1])


def _finite_mean(values: list[float]) -> float:
    """The mean of the finite ``values``; ``inf`` when there is none (such a side loses)."""
    finite = [v for v in values if math.isfinite(v)]
    return _mean(finite) if finite else math.inf


def _mean(values: list[float]) -> float:
    """Plain mean: overflows to inf and gives nan for inf - inf, where ``math.fsum`` raises."""
    return sum(values) / len(values)


def validated_x0(x0: Any) -> Any:
    """``x0`` as a finite, non-empty, one-dimensional float32 or float64 array; a scalar is a
    one-element array, as in SciPy."""
    x0 = as_array(x0)
    xp = namespace_of(x0)
    if x0.ndim == 0:
        x0 = xp.reshape(x0, (1,))
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
