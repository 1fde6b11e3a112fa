"""What a run tells the caller while it goes: the callback, the ``disp`` table, a progress bar."""

from __future__ import annotations

import inspect
import math
from array import array
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.optimize import OptimizeResult

GRADIENT = "gradient"  # `zovh_opt.Optimizer.stage` while the quasi-Newton phase runs

__all__ = ["Progress", "Trace", "callback_caller"]


class Trace:
    """The result's ``trace``: ``nit``, ``nfev`` and ``fun`` (the iteration's f estimate) of
    each iteration, as compact columns (``columns``, the checkpoint's ``trace``)."""

    def __init__(self, columns: dict[str, Any] | None = None) -> None:
        columns = columns or {"nit": [], "nfev": [], "fun": []}
        self.columns = {
            "nit": array("q", list(columns["nit"])),
            "nfev": array("q", list(columns["nfev"])),
            "fun": array("d", list(columns["fun"])),
        }

    def add(self, nit: int, nfev: int, fun: float) -> None:
        columns = self.columns
        columns["nit"].append(nit)
        columns["nfev"].append(nfev)
        columns["fun"].append(fun)

    @property
    def last_fun(self) -> float:
        """The latest iteration's f estimate (``nan`` before the first)."""
        return self.columns["fun"][-1] if self.columns["fun"] else math.nan

    def arrays(self) -> dict[str, np.ndarray]:
        return {k: np.array(v) for k, v in self.columns.items()}


def callback_caller(callback: Any) -> Callable[[Any], bool] | None:
    """Wrap ``callback`` in its SciPy form; the wrapper returns True when it asks to stop.

    ``callback(intermediate_result)`` (recognised by that parameter name) receives an
    ``OptimizeResult`` with ``x`` (a copy of the iterate), ``fun`` (the iteration's f estimate),
    ``nit`` and ``nfev``; any other callable receives a copy of the iterate.
    """
    if callback is None:
        return None
    if not callable(callback):
        raise TypeError(f"callback must be callable, got {type(callback).__name__}")
    try:
        wants_result = set(inspect.signature(callback).parameters) == {"intermediate_result"}
    except (TypeError, ValueError):
        wants_result = False

    def call(optimizer: Any) -> bool:
        x = optimizer.xp.asarray(optimizer.x, copy=True)
        try:
            if wants_result:
                callback(
                    intermediate_result=OptimizeResult(
                        x=x,
                        fun=optimizer.f_estimate,
                        nit=optimizer.nit,
                        nfev=optimizer.nfev,
                    )
                )
            else:
                callback(x)
        except StopIteration:
            return True
        return False

    return call


class Progress:
    """The ``disp`` table and the ``progress`` bar of one run.

    Parameters
    ----------
    every : int
        Print a row every ``every`` iterations; 0: print nothing; -1: about 20 rows a run.
    bar : bool
        Show a tqdm progress bar over the run's iterations (needs ``tqdm``).
    optimizer : Optimizer
        The run, for its options.
    """

    HEADER = f"{'nit':>8} {'nfev':>10} {'f estimate':>13} {'step norm':>10} {'lr':>9} {'time s':>8}"

    def __init__(self, every: int, bar: bool, optimizer: Any) -> None:
        maxiter = self._iterations(optimizer)
        self.rows = every < 0  # about 20 rows: `every` follows the iterations the run can take
        self.every = max(1, maxiter // 20) if every < 0 else every
        self.restarts = len(optimizer.restarts)
        phase = optimizer._parts.quasi_newton
        self.in_phase = phase is not None or optimizer._parts.phase_planned
        self.hops = 0 if phase is None else phase.hops
        self.noise_reported = False
        self.printed_header = False
        self.bar = None
        if bar:
            try:
                from tqdm.auto import tqdm
            except ImportError as exc:
                raise ImportError(
                    "options['progress']=True needs tqdm: pip install 'zovh-opt[progress]'"
                ) from exc
            self.bar = tqdm(total=maxiter, initial=optimizer.nit, unit="it", dynamic_ncols=True)

    @staticmethod
    def _iterations(optimizer: Any) -> int:
        """The iterations the run can take, after the measurements of ``x0`` and the best
        point (`zovh_opt._noise.monitor`), counted in the method's iterations from the run's current
        one and the evaluations it has made."""
        per, stopping = optimizer._parts.method.points_per_iteration, optimizer._parts.stopping
        spent = optimizer._parts.returned.reserve + optimizer._parts.told
        maxiter = stopping.iteration_budget(per, spent)
        left = stopping.iteration_budget(per, spent + optimizer._parts.noise.budgeted(maxiter))
        total = optimizer.nit + left
        cap = optimizer.options["maxiter"]
        return total if cap is None else min(cap, total)

    def _count_again(self, optimizer: Any) -> None:
        """The iterations ahead changed size (noise found at ``x0`` builds the method again
        with more pairs, `zovh_opt._methods.rebuilt_for_noise`; the quasi-Newton phase's
        gradients of ``d`` evaluations gave way to the method's iterations): the rows and the
        bar follow the iterations the run can now take."""
        maxiter = self._iterations(optimizer)
        if self.rows:
            self.every = max(1, maxiter // 20)
        if self.bar is not None:
            self.bar.total = maxiter
            self.bar.refresh()

    def iteration(self, optimizer: Any) -> None:
        """Report the iteration that just ended."""
        noise = optimizer._parts.noise
        if noise.detected and optimizer.nit == 1:  # found at x0: the method may be rebuilt
            self._count_again(optimizer)
        if self.in_phase and optimizer.stage != GRADIENT:  # the phase handed over
            self.in_phase = False
            self._count_again(optimizer)
        again = not self.in_phase and optimizer.stage == GRADIENT  # `resume_phase`, `hop`
        if again:
            self.in_phase = True
        if self.bar is not None:
            self.bar.update(1)
            if optimizer.nit % 10 == 1:
                self.bar.set_postfix(f=f"{optimizer.f_estimate:.4g}", refresh=False)
        if not self.every:
            return
        if len(optimizer.restarts) > self.restarts:
            self.restarts = len(optimizer.restarts)
            last = optimizer.restarts[-1]
            print(
                f"restart at nit {last['nit']}: {last['reason']}; "
                f"learning rate now {last['learning_rate']:.3g}"
            )
        if again and optimizer._parts.quasi_newton.hops > self.hops:
            self.hops = optimizer._parts.quasi_newton.hops
            print(
                f"quasi-Newton phase started again at nit {optimizer.nit} from a lower point "
                "the method found away from its minimum (basin hopping)"
            )
        elif again:
            print(
                f"quasi-Newton phase resumed at nit {optimizer.nit}: the method found no value "
                "below its point by its first ftol stall"
            )
        if noise.detected and not self.noise_reported:
            self.noise_reported = True
            print(
                f"noise detected by nit {optimizer.nit} (sd at x0 {noise.std():.3g}): robust "
                "batches, the radius above the noise, no 'auto' tolerances"
            )
        if optimizer.nit == 1 or optimizer.nit % self.every == 0:
            self.row(optimizer)

    def row(self, optimizer: Any) -> None:
        if not self.printed_header:
            print(self.HEADER)
            self.printed_header = True
        print(
            f"{optimizer.nit:>8} {optimizer.nfev:>10} {optimizer.f_estimate:>13.6g} "
            f"{optimizer.step_norm:>10.3g} {optimizer.learning_rate:>9.3g} "
            f"{optimizer.elapsed:>8.2f}"
        )

    def close(self, optimizer: Any) -> None:
        """Close the bar; with ``disp``, print the last row and the summary."""
        if self.bar is not None:
            if optimizer.done:  # a run that converged early ends its bar where it ended
                self.bar.total = self.bar.n
                self.bar.refresh()
            self.bar.close()
        if not self.every:
            return
        if optimizer.nit % self.every != 0 and optimizer.nit > 1:
            self.row(optimizer)
        res = optimizer.result()
        print(res.message)
        print(f"         Current function value: {res.fun:.6g}")
        print(f"         Iterations: {res.nit}")
        print(f"         Function evaluations: {res.nfev}")
        if res.restarts:
            print(f"         Restarts: {len(res.restarts)}")
        if math.isfinite(res.get("fun_std_error", math.nan)):
            print(f"         Standard error of fun: {res.fun_std_error:.3g}")
            print(f"         Noise standard deviation at x: {res.noise_std:.3g}")
