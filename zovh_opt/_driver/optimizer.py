"""The ask/tell driver: `Optimizer` coordinates the parts of a run around one method object.

The parts, each a module of `zovh_opt._driver` with its own checkpointable state (docs:
*Architecture*): `coordinates` (the box map and the run's units), `stopping` (budgets and
tolerances), `safeguard` (failed evaluations, divergence, stalls and restarts),
`returned_point` (the best point, the noisy comparison with ``x0``); `evaluation` and
`reporting` serve `Optimizer.run`. The driver never looks inside the estimators: it sees
points, values, the iterate and a few numbers per step.

A run measures ``x0`` where it asks whether the objective is noisy
(`zovh_opt._noise.monitor`), then iterates until a stopping rule fires (a noisy run measures
its centre every 40 iterations against its best measured point, `zovh_opt._noise.drift`;
such asks: `measurements`),
then makes the final ask (for a noisy objective two: the final iterate and the average of its
centres, then the chosen point). ``x0`` is copied, and every array handed out is new and never
read again. When ``fun`` raises inside
`Optimizer.run`, the ask stays pending with the values obtained (``run`` again evaluates the
rest; ``tell`` or ``discard`` also close it); a Ctrl-C ends ``run`` with status 6, and ``run``
again continues. Calls from a second thread while one is inside ``ask``, ``tell``,
``discard``, ``run`` or ``save`` raise ``RuntimeError`` at once. ``save`` and ``load``
continue a run bit for bit, also between an ``ask`` and its ``tell``.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.optimize import OptimizeResult

from .._arrays.backend import DirectionSource, namespace_of, to_host_floats
from .._methods import build
from .._noise.drift import DriftCheck
from .._noise.monitor import NoiseMonitor
from .._version import __version__
from . import checkpoint as _checkpoint
from . import measurements
from .coordinates import Coordinates
from .interrupts import deferred_interrupts
from .measurements import MEASURE
from .quasi_newton import (
    GRADIENT,
    WALL_NOTE,
    asked_size,
    forget_pairs,
    hop,
    iterate,
    met_a_wall,
    phase_fields,
    plan_phase,
    resume_phase,
    tell_phase,
)
from .reporting import Trace
from .returned_point import ReturnedPoint, mean
from .run_loop import run_to_end
from .run_options import checked_method, run_options, validated_x0
from .run_state import pickled, restore, restoring, state_of, unpickled
from .safeguard import Safeguard
from .stopping import (
    FTARGET,
    RUNNING,
    STALLED,
    SUCCESS,
    StoppingRules,
    default_maxfev,
)

__all__ = ["Optimizer"]


def _exclusive(method: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``method`` holding the optimizer's lock; another thread gets a clear error at once
    (never a half-updated state, never a wait). The lock is re-entrant: a callback of `run`
    may `save` from the same thread."""

    @functools.wraps(method)
    def guarded(self: Optimizer, *args: Any, **kwargs: Any) -> Any:
        if not self._lock.acquire(False):
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


class Optimizer:
    r"""A minimization run as an object: ``ask()`` points, ``tell(values)``, ``result()``.

    For objectives that the caller evaluates (a training loop, a job queue, a cluster) and for
    runs that must survive a restart of the process. `zovh_opt.minimize` builds one and calls
    `run`; the two give the same iterates for the same seed. ``nit`` and ``nfev`` count the
    iterations and evaluations so far; `x`, `pending` and `done` say where the run stands.

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
        self.method = checked_method(method)
        self.options, method_options = run_options(method, options, tol)
        x0, x_scale = validated_x0(x0), self.options["x_scale"]
        self._coordinates, z0, scale = Coordinates.start(x0, bounds, method_options, x_scale)
        self.xp = namespace_of(z0)
        self._seeds = DirectionSource(rng)
        noisy, final = self.options["noisy"], self.options["final_evaluations"]
        maxfev = self.options["maxfev"] or default_maxfev(z0.shape[0])
        self._requested = method_options  # as given: the method after the phase resolves them
        self._step, self._method_options = build(  # noisy=True: more pairs from the start
            method, z0, rng=self._seeds, scale=scale, maxfev=maxfev, options=method_options,
            noisy=noisy is True, first_step=self._coordinates.first_step)  # fmt: skip
        adaptive = self._step.control is not None
        self._noise = NoiseMonitor(noisy, adaptive, final, self._step.x, maxfev)
        self._drift = DriftCheck()  # a noisy run's centre against its best measured point
        self._returned = ReturnedPoint(False, final or 1, None, self.xp)
        if self._noise.detected:  # noisy=True: the end of a noisy run from the start
            self._noise.ends_noisy(self._returned)
        self._stopping = StoppingRules(
            self.options,
            method=method,
            adaptive=adaptive,
            dim=self._step.space.dim,
            points_per_iteration=self._step.points_per_iteration,
            final_evaluations=self._returned.reserve + self._noise.size(),
            eps=float(self.xp.finfo(z0.dtype).eps),  # the precision of x, and of f
            x0_scale=self._step.scale,
        )
        restart_at = None if adaptive else self._step.x
        self._safeguard = Safeguard(self.options["max_restarts"], restart_at)
        self.nit = 0
        self._told = 0  # evaluations of completed asks; nfev adds those of the pending one
        self.status = RUNNING
        self.message = "The run has not ended."
        self._phase = "iterate" if self._noise.done else MEASURE
        plan_phase(self)  # `zovh_opt._driver.quasi_newton`: `_quasi_newton`, `_phase_planned`
        self._pending: str | None = None  # the phase of the pending ask
        self._partial: list[float | None] = []  # its values obtained so far (by `run`)
        self._trace = Trace()
        self._elapsed = 0.0
        self._since = time.perf_counter()
        if self._coordinates.all_fixed:  # nothing to search: x is the answer
            self.stop(SUCCESS, "Every variable is fixed by the bounds (lower == upper).")

    # the protocol ---------------------------------------------------------------------------

    @property
    def x(self) -> Any:
        """A copy of the current iterate (with bounds: its image in the box)."""
        return self._coordinates.to_user(iterate(self))

    @property
    def nfev(self) -> int:
        """Function evaluations so far, those of a pending ask obtained by `run` included."""
        return self._told + sum(v is not None for v in self._partial)

    @property
    def done(self) -> bool:
        """True once the run has ended; `result` then holds the final answer."""
        return self._phase == "done"

    @property
    def elapsed(self) -> float:
        """Wall-clock seconds the run has been going, across checkpoints."""
        return self._elapsed + time.perf_counter() - self._since

    @property
    def learning_rate(self) -> float:
        return self._step.learning_rate

    @property
    def restarts(self) -> list[dict[str, Any]]:
        """The safeguard's restarts so far (``result().restarts``)."""
        return self._safeguard.restarts

    @property
    def f_estimate(self) -> float:
        """Mean of the latest iteration's values (``nan`` before the first)."""
        return self._trace.last_fun

    @property
    def step_norm(self) -> float:
        """Length of the latest step."""
        return self._step.step_norm * self._coordinates.unit

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
        host, n = to_host_floats(values, "values"), len(self._partial)
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
        self._keep_obtained()
        self._told = self.nfev
        if self._pending == "iterate":
            self._step.discard()
        self._pending, self._partial = None, []

    def result(self) -> OptimizeResult:
        """The run's answer so far, as a ``scipy.optimize.OptimizeResult``.

        Fields: ``x``, ``fun``, ``nit``, ``nfev``, ``status``, ``success``, ``message``,
        ``iteration`` (what ran), ``learning_rate`` (at the end), ``restarts`` (``nit``,
        ``nfev``, ``reason``, ``cause``, ``learning_rate`` of each), ``failed_evaluations``,
        ``trace`` (NumPy arrays ``"nit"``, ``"nfev"``, ``"fun"``, one entry per iteration),
        the method's ``jac`` and ``hess_inv`` (not with bounds), ``noise_std`` (0: a
        deterministic f) and ``fun_std_error``; `zovh_opt.minimize` says more of each.
        """
        x, fun, extra = self._returned.answer(lambda: self.x, self._coordinates.to_user)
        extra = {**self._noise.fields(), **extra}  # noise_std: 0 for a deterministic f
        return OptimizeResult(
            x=x,
            fun=fun,
            nit=self.nit,
            nfev=self.nfev,
            status=self.status,
            success=self.status in (SUCCESS, FTARGET),
            message=self.message + (self._noise.note() if self.done else ""),
            learning_rate=self.learning_rate,
            iteration=self._step.iteration,
            restarts=[dict(r) for r in self.restarts],
            rejected_steps=self._step.rejected_steps,
            failed_evaluations=self._safeguard.failed_evaluations,
            trace=self._trace.arrays(),
            **extra,
            **phase_fields(self),
        )

    def stop(self, status: int, message: str, *, evaluate_final: bool = True) -> None:
        """End the run with ``status`` and ``message``: the next ask is the final evaluation
        (or, with ``evaluate_final=False``, there is none and `done` is True)."""
        self.status, self.message = status, message
        if met_a_wall(self):
            self.message += WALL_NOTE
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
        only its missing values are evaluated (`zovh_opt._driver.run_loop`).
        """
        run_to_end(self, fun, args, callback=callback, workers=workers, vectorized=vectorized)
        return self.result()

    @_exclusive
    def save(self, path: Any) -> None:
        """Write the whole state to ``path`` as a checkpoint file; `load` continues the run.

        An uncompressed ``.npz`` (``numpy.load`` opens it) of the arrays, a JSON header and a
        SHA-256 checksum; no code. Written to a temporary file beside ``path`` and renamed
        over it once on disk (an interrupted save leaves the previous checkpoint); a symbolic
        link is written through, as ``numpy.savez`` does. ``FileExistsError`` if ``path`` is
        not a regular file (never replaced), ``FileNotFoundError`` if its directory is missing.
        """
        _checkpoint.write(path, self._state(), package_version=__version__)

    def _state(self) -> dict[str, Any]:
        """The whole state, as `save` writes it (`zovh_opt._driver.run_state`)."""
        return state_of(self)

    @classmethod
    def load(cls, path: Any) -> Optimizer:
        """Read a checkpoint written by `save`; the run continues bit for bit.

        Raises `zovh_opt.CheckpointError` if the file is not a zovh-opt checkpoint, is a
        pickle of zovh-opt 0.1 (refused: loading a pickle runs code), is damaged or truncated
        (checksum), comes from a newer format version, needs an array library or device this
        process lacks, or holds an inconsistent state; ``OSError`` if it cannot be read.
        """
        state, written_by = _checkpoint.read(path)
        with restoring(path, state, written_by):
            return restore(cls, state)

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
        if self._phase in ("iterate", GRADIENT):
            asked = asked_size(self)
            reserve = asked + self._returned.reserve
            spent = self._stopping.budget_spent(
                self.nit, self._told, reserve, self.elapsed, asked + 1
            )
            if spent is not None:
                self.stop(*spent)
        if self._phase == "final":
            n = self._returned.final_size(self._told, self._stopping.affordable(
                self._told, self.elapsed))  # fmt: skip
        elif self._phase in measurements.PHASES:
            n = measurements.size(self)
        elif self._phase == GRADIENT:
            n = self._quasi_newton.size()
        else:
            self._step.prepare()
            n = self._step.points_per_iteration
        self._pending, self._partial = self._phase, [None] * n

    def _keep_obtained(self) -> None:
        """The values of the pending ask obtained so far count for the best point."""
        self._returned.observe(self._partial, self._point)

    def _point(self, i: int) -> Any:
        """Point ``i`` of the pending ask, as a new array."""
        if self._pending == "final":
            return self._returned.final_point(i, lambda: self.x, self._coordinates.to_user)
        if self._pending in measurements.PHASES:
            return measurements.point(self)
        source = self._quasi_newton.point if self._pending == GRADIENT else self._step.pending_point
        if not self._coordinates.identity:
            return self._coordinates.to_user(source(i))
        return source(i)  # a new array already

    def _points(self, indices: list[int] | None = None) -> Any:
        """The pending points (those at ``indices``), stacked in a new array."""
        n = len(self._partial)
        if indices is None or list(indices) == list(range(n)):
            if self._pending not in ("iterate", GRADIENT):
                return self.xp.stack([self._point(i) for i in range(n)])
            phase = self._pending == GRADIENT  # the block in one array, not n rows stacked
            block = self._quasi_newton.points() if phase else self._step.pending_points()
            return block if self._coordinates.identity else self._coordinates.to_user(block)
        return self.xp.stack([self._point(i) for i in indices])

    def _close(self, values: list[float], superseded: int) -> None:
        """The values of the pending ask are in: the best point, then the final answer or the
        iteration (the step, the safeguard, the stopping rules)."""
        phase = self._pending
        self._returned.observe(values, self._point)
        self._told += len(values) + superseded
        self._pending, self._partial = None, []
        bad = self._safeguard.count_failures(values)
        if phase == "final":
            done, note = self._returned.take_final(values)
            self.message += note
            if done:
                self._phase = "done"
            return
        if phase in measurements.PHASES:
            measurements.tell(self, phase, values)
            return
        if phase == GRADIENT:
            tell_phase(self, values)
            return
        self.nit += 1
        f_estimate = mean(values)
        self._trace.add(self.nit, self._told, f_estimate)
        if bad:
            self._step.discard()  # missing data: the next iteration draws anew
            failure = self._safeguard.missing(bad, len(values))
            if failure is not None:
                self._restart(failure, diverged=False)
            return
        if self._safeguard.overreached(self._step, values, self._returned, self._noise):
            return
        self._iteration(values, f_estimate)
        measurements.after_iteration(self)  # the best point or the centre measured next

    def _iteration(self, values: list[float], f_estimate: float) -> None:
        """An iteration with finite values: the method's step (unless diverging), the rules."""
        safeguard, step = self._safeguard, self._step
        if safeguard.finite(f_estimate, values):
            self._coordinates.found_f_scale(
                safeguard.scale, step.space.dtype_name, self._method_options
            )
            if step.control is not None:  # noise found at x0 was in the user's unit of f
                step.control.noise_in_unit(self._coordinates.f_unit)
        failure = safeguard.divergence(f_estimate) if step.control is None else None
        if failure is not None:
            step.discard()
            self._restart(failure, diverged=True)
            return
        if step.control is None:
            safeguard.progressed(f_estimate, step.x)
        told = self._coordinates.values(np.asarray(values, dtype=np.float64))  # checked floats
        self._noise.tell_start(step, self.nit, self._coordinates.f_unit)
        # the stopping rules read the method's f estimate (the curvature model's removes its
        # smoothing bias, which grows as the model learns)
        f_estimate = step.f_estimate(told) * self._coordinates.f_unit
        step.tell(told)
        self._returned.follow(step)
        forget_pairs(self)  # the phase's curvature, until the method has learned its own
        length = step.step_norm if step.control is None else step.control.step_length
        scale = self._stopping.length_scale(step.control)
        verdict = self._stopping.after_iteration(
            f_estimate, self._returned.lowest(), length, scale, safeguard.scale, values
        )
        if verdict is None:
            hop(self)  # after a converged phase the method's iterations may have left its basin
            return
        if verdict is STALLED:
            if resume_phase(self) or safeguard.rescale(step, nit=self.nit, nfev=self._told):
                return
            verdict = self._stopping.converged_by_ftol()
        if verdict.status == SUCCESS and met_a_wall(self):
            return  # next to a wall a tolerance met is no minimum: the budgets end the run
        self.stop(*verdict)

    def _restart(self, reason: str, *, diverged: bool) -> None:
        """A restart of the safeguard, or the end of the run when they are spent."""
        stop = self._safeguard.restart(self._step, reason, diverged=diverged, nit=self.nit,
                                       nfev=self._told, stopping=self._stopping)  # fmt: skip
        if stop is not None:
            self.stop(*stop)

    def __getstate__(self) -> dict[str, Any]:
        return pickled(self)

    def __setstate__(self, state: dict[str, Any]) -> None:
        unpickled(self, state)
