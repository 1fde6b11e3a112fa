"""The ask/tell driver: `Optimizer` runs a pipeline of stages over the parts of a run.

The parts (`zovh_opt._driver.parts.RunParts`: coordinates, stopping, safeguard, the returned
point, the noise monitor, the method) each keep their own checkpointable state; the stages
(`zovh_opt._driver.stages`) ask and take values in the order `zovh_opt._driver.pipeline`
writes down. `Optimizer` holds the parts, the current stage and the pending ask, and does ask,
tell, run, save and load (docs: *Architecture*). ``x0`` is copied and every array handed out
is new. When ``fun`` raises inside `Optimizer.run` the ask stays pending with the values
obtained; Ctrl-C ends ``run`` with status 6 and ``run`` again continues. A second thread's
call while one is inside raises ``RuntimeError``; ``save`` and ``load`` continue a run bit
for bit, also between an ``ask`` and its ``tell``.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from scipy.optimize import OptimizeResult

from .._arrays.backend import to_host_floats
from .._version import __version__
from . import checkpoint as _checkpoint
from .interrupts import deferred_interrupts
from .parts import RunParts
from .pipeline import DONE, ITERATE, MODEL, QUASI_NEWTON, first_stage, next_stage, stopped
from .run_loop import run_to_end
from .run_state import pickled, restore, restoring, state_of, unpickled
from .stopping import FTARGET, SUCCESS, Stop

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
        self._begin(RunParts.start(x0, method, bounds, options, tol, rng))

    @classmethod
    def _new_start(
        cls, x0: Any, method: str, *, bounds: Any, options: Any, tol: Any, rng: Any
    ) -> Optimizer:
        """A new start's optimizer (`zovh_opt._driver.new_starts`): as the constructor's, but
        a deterministic run does not open with the trust region, whose quick first steps a
        new start's budget is past; decided before the first stage is chosen."""
        parts = RunParts.start(x0, method, bounds, options, tol, rng)
        parts.may_open = False
        optimizer = cls.__new__(cls)
        optimizer._begin(parts)
        return optimizer

    def _begin(self, parts: RunParts) -> None:
        """Hold ``parts`` and choose the first stage."""
        self._lock = threading.RLock()
        self._parts = parts
        self.xp = parts.xp
        self._stage = first_stage(parts)
        self._pending: Any = None  # the stage of the pending ask
        self._partial: list[float | None] = []  # its values obtained so far (by `run`)
        if parts.coordinates.all_fixed:  # nothing to search: x is the answer
            self.stop(SUCCESS, "Every variable is fixed by the bounds (lower == upper).")

    # the protocol ---------------------------------------------------------------------------

    @property
    def x(self) -> Any:
        """A copy of the current iterate (with bounds: its image in the box)."""
        return self._parts.coordinates.to_user(self._parts.iterate())

    @property
    def nfev(self) -> int:
        """Function evaluations so far, those of a pending ask obtained by `run` included."""
        return self._parts.told + sum(v is not None for v in self._partial)

    @property
    def done(self) -> bool:
        """True once the run has ended; `result` then holds the final answer."""
        return self._stage is DONE

    @property
    def stage(self) -> str:
        """The stage the next ask belongs to: ``"measure"`` (``x0`` or the best point again,
        for noise), ``"check"`` (a noisy run's centre), ``"gradient"`` (the quasi-Newton
        phase), ``"model"`` (the trust region), ``"iterate"`` (the method), ``"final"`` or
        ``"done"``."""
        return self._stage.name

    @property
    def method(self) -> str:
        """The method's name."""
        return self._parts.method_name

    @property
    def options(self) -> dict[str, Any]:
        """The driver's options as resolved (``maxfev``, tolerances, ...)."""
        return self._parts.options

    @property
    def nit(self) -> int:
        """Iterations so far (the method's, and the quasi-Newton phase's gradients)."""
        return self._parts.nit

    @property
    def status(self) -> int:
        """The run's status: 0 while it runs, then ``result().status``'s."""
        return self._parts.status

    @property
    def message(self) -> str:
        return self._parts.message

    @property
    def elapsed(self) -> float:
        """Wall-clock seconds the run has been going, across checkpoints."""
        return self._parts.elapsed

    @property
    def learning_rate(self) -> float:
        return self._parts.method.learning_rate

    @property
    def restarts(self) -> list[dict[str, Any]]:
        """The safeguard's restarts so far (``result().restarts``)."""
        return self._parts.safeguard.restarts

    @property
    def f_estimate(self) -> float:
        """Mean of the latest iteration's values (``nan`` before the first)."""
        return self._parts.trace.last_fun

    @property
    def step_norm(self) -> float:
        """Length of the latest step."""
        return self._parts.method.step_norm * self._parts.coordinates.unit

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
        self._parts.told = self.nfev
        if self._pending is ITERATE:
            self._parts.method.discard()
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
        parts = self._parts
        x, fun, extra = parts.returned.answer(lambda: self.x, parts.coordinates.to_user)
        extra = {**parts.noise.fields(), **extra}  # noise_std: 0 for a deterministic f
        return OptimizeResult(
            x=x,
            fun=fun,
            nit=self.nit,
            nfev=self.nfev,
            status=self.status,
            success=self.status in (SUCCESS, FTARGET),
            message=self.message
            + (parts.noise.note(not parts.returned.uncompared) if self.done else ""),
            learning_rate=self.learning_rate,
            iteration=parts.method.iteration,
            restarts=[dict(r) for r in self.restarts],
            rejected_steps=parts.method.rejected_steps,
            failed_evaluations=parts.safeguard.failed_evaluations,
            trace=parts.trace.arrays(),
            **extra,
            **QUASI_NEWTON.result_fields(parts),
            **MODEL.result_field(parts),
        )

    def stop(self, status: int, message: str, *, evaluate_final: bool = True) -> None:
        """End the run with ``status`` and ``message``: the next ask is the final evaluation
        (or, with ``evaluate_final=False``, there is none and `done` is True)."""
        self._stage = stopped(self._parts, status, message, evaluate_final)

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
        """Start an ask of the current stage: the budgets first, where the stage has them."""
        if self._pending is not None:
            raise RuntimeError(
                "ask() was called twice without tell() in between: tell() the values of the "
                "pending points (`pending` gives them again), or discard() them"
            )
        if self.done:
            raise RuntimeError(f"the run has ended ({self.message}); see result()")
        parts, stage = self._parts, self._stage
        if stage.budgeted:
            asked = stage.asked(parts)
            reserve = asked + parts.returned.reserve
            spent = parts.stopping.budget_spent(
                parts.nit, parts.told, reserve, parts.elapsed, asked + 1
            )
            if spent is not None:
                self._stage = stage = stopped(parts, *spent)
        self._pending, self._partial = stage, [None] * stage.size(parts)

    def _keep_obtained(self) -> None:
        """The values of the pending ask obtained so far count for the best point."""
        self._parts.returned.observe(self._partial, self._point)

    def _point(self, i: int) -> Any:
        """Point ``i`` of the pending ask, as a new array."""
        return self._pending.point(self._parts, i)

    def _points(self, indices: list[int] | None = None) -> Any:
        """The pending points (those at ``indices``), stacked in a new array."""
        n = len(self._partial)
        if indices is None or list(indices) == list(range(n)):
            block = self._pending.points(self._parts)  # in one array, not n rows stacked
            if block is not None:
                return block
            indices = range(n)
        return self.xp.stack([self._point(i) for i in indices])

    def _close(self, values: list[float], superseded: int) -> None:
        """The values of the pending ask are in: the best point, the failures, then the
        stage's own tell and the stage that follows (`zovh_opt._driver.pipeline`)."""
        parts, stage = self._parts, self._pending
        parts.returned.observe(values, self._point)
        parts.told += len(values) + superseded
        self._pending, self._partial = None, []
        bad = parts.safeguard.count_failures(values)
        outcome = stage.tell(parts, values, bad)
        if self._stage is stage or isinstance(outcome, Stop):  # (not stopped meanwhile)
            self._stage = next_stage(parts, stage, outcome)

    def _resume(self, parts: RunParts, stage: Any, pending: Any, partial: list) -> None:
        """Continue from ``parts`` at ``stage``, with ``pending``'s ask and its ``partial``
        values (a checkpoint or a pickle)."""
        self._parts, self.xp = parts, parts.xp
        self._stage, self._pending, self._partial = stage, pending, partial

    def __getstate__(self) -> dict[str, Any]:
        return pickled(self)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._lock = threading.RLock()
        unpickled(self, state)
