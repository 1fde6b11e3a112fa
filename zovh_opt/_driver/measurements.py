"""The asks between iterations that measure one point: ``x0``, or the best point again, to
find noise (`zovh_opt._noise.monitor`), and a noisy run's centre against its best measured point
(`zovh_opt._noise.drift`). Functions of the driver, `zovh_opt.Optimizer`, as those of
`zovh_opt._driver.quasi_newton` are: they read and set its parts."""

from __future__ import annotations

from typing import Any

from .._methods import rebuilt_for_noise
from .._noise.drift import CHECK
from .quasi_newton import start_phase

__all__ = ["CHECK", "MEASURE", "PHASES", "after_iteration", "point", "size", "tell"]

MEASURE = "measure"  # the phase that evaluates x0, or the best point, again (`_noise`)
PHASES = (MEASURE, CHECK)


def _room(run: Any) -> int:
    """The evaluations ``maxfev`` leaves ``run`` after its next iteration."""
    return run.options["maxfev"] - run._told - run._step.points_per_iteration


def size(run: Any) -> int:
    """The number of values the measurement of ``run``'s phase asks for."""
    return run._noise.size() if run._phase == MEASURE else run._drift.size


def point(run: Any) -> Any:
    """The point of ``run``'s pending measurement, a new array of the user's."""
    if run._pending == MEASURE:
        return run._noise.point(run._coordinates.to_user)
    return run._coordinates.to_user(run._drift.point())


def tell(run: Any, phase: str, values: list[float]) -> None:
    """The values of a measurement of ``phase`` are in. At ``x0`` (or the best point): the
    parts act on noise once it is measured, and a noise found at ``x0`` rebuilds the method
    for it. At a noisy run's centre: back to the best point where it drifted (the return is
    one of the run's ``restarts``)."""
    if phase == CHECK:
        room = _room(run) - run._returned.reserve
        reason = run._drift.take(values, run._step, run._returned, room)
        if reason is not None:
            run._safeguard.record(run.nit, run._told, reason, "drift", run.learning_rate)
        run._phase = "iterate" if run._drift.pending is None else CHECK  # or the best afresh
        return
    noise = run._noise
    noise.take(values, _room(run))
    if noise.done:
        if noise.detected and run.nit == 0 and not noise.acted:  # at x0
            args = run.method, run._step, run._method_options, run.options["maxfev"]
            run._step, run._method_options = rebuilt_for_noise(*args)
        noise.act(run._returned, run._stopping, run._step, run._coordinates.f_unit)
        run._phase = "iterate"
        start_phase(run, measured=True)


def after_iteration(run: Any) -> None:
    """After an iteration that leaves the run iterating with room in ``maxfev`` beside the
    next iteration and the end: the next ask measures the best point again where the noise
    monitor wants it, or the centre where the drift check does."""
    room = _room(run)
    if not (run._phase == "iterate" and room > run._returned.reserve):
        return
    run._noise.recheck_due(run.nit, run._returned.best, affordable=True)
    if not run._noise.done:
        run._phase = MEASURE
    elif run._drift.due(run._step, run._returned, room - run._returned.reserve):
        run._phase = CHECK
