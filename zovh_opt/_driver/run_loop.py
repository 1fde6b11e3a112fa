"""The evaluation loop of `zovh_opt.Optimizer.run`: ask, evaluate, tell, report, until the end.

The loop drives the optimizer through its protocol (`Optimizer._open` starts an ask,
``_partial`` collects its values as they arrive, `Optimizer._close` takes them in) and adds
what a whole run needs around it: the evaluation mode (`zovh_opt._driver.evaluation`), the ``disp``
table, the progress bar and the callback (`zovh_opt._driver.reporting`), and interrupts. A
``KeyboardInterrupt`` ends the run with status 6 and the result so far; an exception of
``fun`` propagates with the ask still pending, every value obtained kept for the best point.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .evaluation import evaluator
from .interrupts import deferred_interrupts
from .reporting import Progress, callback_caller
from .stopping import CALLBACK, INTERRUPTED, RUNNING

__all__ = ["run_to_end"]


def run_to_end(
    run: Any,
    fun: Callable[..., Any],
    args: tuple,
    *,
    callback: Callable[..., Any] | None,
    workers: Any,
    vectorized: bool,
) -> None:
    """Evaluate ``fun`` at every point the `zovh_opt.Optimizer` ``run`` asks for until it is
    done (or interrupted); a pending ask is completed first, only its missing values
    evaluated."""
    if not callable(fun):
        raise TypeError(f"fun must be callable, got {type(fun).__name__}")
    if not isinstance(args, tuple):
        args = (args,)
    notify = callback_caller(callback)
    parts = run._parts
    if parts.status == INTERRUPTED:
        parts.status, parts.message = RUNNING, "The run has not ended."
    progress = Progress(run.options["disp"], run.options["progress"], run)
    with evaluator(fun, args, workers, vectorized) as evaluate:
        try:
            while not run.done:
                if run._pending is None:
                    run._open()
                evaluate(run._partial, run._point, run._points)
                nit = run.nit
                with deferred_interrupts():
                    run._close(run._partial, 0)
                if run.nit > nit:  # an iteration (of the method, or a gradient of the phase)
                    progress.iteration(run)
                    if notify is not None and notify(run) and not run.done:
                        run.stop(CALLBACK, "`callback` raised `StopIteration`.")
        except KeyboardInterrupt:
            run._keep_obtained()
            parts.status = INTERRUPTED
            parts.message = (
                "Interrupted by the user (KeyboardInterrupt); run() again continues the run."
            )
        except BaseException:
            run._keep_obtained()
            raise
        finally:
            progress.close(run)
