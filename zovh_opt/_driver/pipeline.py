"""The order of a run's stages (`zovh_opt._driver.stages`), in one place.

    measure x0 ─┬─→ quasi-Newton phase ─┬───────────────→ iterate ─→ final ─→ done
    (noise?)    │   (deterministic:     │ rugged or mild   ↑   │   (the method; hop,
                │    FD L-BFGS)         ↓ noise, d <= 20   │   │    refine, resume)
                ├─ mild noise, d <= 20 → trust region ─────┤   │
                │                                          └───┴─ measure the best point
                └─ deterministic, d <= 3: the region's            again, or a noisy run's
                   opening (10 d evaluations) → phase             centre (drift check)

`zovh_opt.Optimizer` asks the current stage for points, tells it the values, and takes the
stage `next_stage` names. `new_starts` (`zovh_opt._driver.new_starts`) runs whole runs one
after another. The stages' rules: theory page, *The run's parts in detail*.
"""

from __future__ import annotations

from typing import Any

from .stages import (
    FINISHED,
    PHASE_AGAIN,
    SKIPPED,
    WALL_NOTE,
    CentreCheck,
    Done,
    Final,
    Iterate,
    Measure,
    QuasiNewton,
    Stage,
    TrustRegion,
)
from .stopping import Stop

__all__ = ["CHECK", "DONE", "FINAL", "ITERATE", "MEASURE", "MODEL", "QUASI_NEWTON", "STAGES"]
__all__ += ["first_stage", "next_stage", "stopped"]

MEASURE, CHECK, QUASI_NEWTON = Measure(), CentreCheck(), QuasiNewton()
MODEL, ITERATE, FINAL, DONE = TrustRegion(), Iterate(), Final(), Done()
STAGES = {s.name: s for s in (MEASURE, CHECK, QUASI_NEWTON, MODEL, ITERATE, FINAL, DONE)}


def first_stage(parts: Any) -> Stage:
    """Where a run starts: measuring ``x0`` where ``noisy="auto"`` (a noisy objective then
    skips the phase); else the region's opening or the phase where they apply; else the
    method."""
    parts.phase_planned = QuasiNewton.applies(parts)
    if not parts.noise.done:
        return MEASURE
    if MODEL.start_opening(parts):  # (noisy=False: nothing to measure)
        return MODEL
    if parts.phase_planned and QUASI_NEWTON.start(parts):
        return QUASI_NEWTON
    return ITERATE


def next_stage(parts: Any, stage: Stage, outcome: Any) -> Stage:
    """The stage after ``stage`` took its values, which went as ``outcome`` says."""
    if isinstance(outcome, Stop):
        return stopped(parts, *outcome)
    if outcome is PHASE_AGAIN:  # a hop or a resume: the phase from a new point
        return QUASI_NEWTON
    # x0 (or the best point) measured: noise or none; mild noise at small d: the trust region
    if stage is MEASURE:
        if not parts.noise.done:
            return MEASURE
        if MODEL.start(parts) or MODEL.start_opening(parts):
            return MODEL
        return QUASI_NEWTON if QUASI_NEWTON.start_measured(parts) else ITERATE
    if stage is MODEL:  # its end hands over to the method, an opening's to the phase
        if not parts.trust_region.done:
            return MODEL
        phase = parts.quasi_newton
        return QUASI_NEWTON if phase is not None and not phase.done else ITERATE
    if stage is CHECK:  # the centre, then the best point afresh where it looked lower
        return ITERATE if parts.drift.pending is None else CHECK
    # the phase's end hands over: to the trust region where it found ruggedness or mild noise
    # at small d; other noise found there measures x0 first
    if stage is QUASI_NEWTON:
        if not parts.quasi_newton.done:
            return QUASI_NEWTON
        if parts.trust_region is not None and not parts.trust_region.done:
            return MODEL
        return ITERATE if parts.noise.done else MEASURE
    if stage is ITERATE:
        return ITERATE if outcome is SKIPPED else measurement_due(parts) or ITERATE
    return DONE if outcome is FINISHED else FINAL


def measurement_due(parts: Any) -> Stage | None:
    """After an iteration that leaves room in ``maxfev`` beside the next one and the end:
    the best point measured again where the noise monitor wants it, or a noisy run's centre
    where the drift check does."""
    room, reserve = parts.room(), parts.returned.reserve
    if room <= reserve:
        return None
    if MEASURE.due(parts):
        return MEASURE
    return CHECK if CHECK.due(parts, room - reserve) else None


def stopped(parts: Any, status: int, message: str, evaluate_final: bool = True) -> Stage:
    """End the run with ``status`` and ``message``: the final evaluations follow (or, without
    ``evaluate_final``, nothing)."""
    parts.status, parts.message = status, message
    if QuasiNewton.met_a_wall(parts):
        parts.message += WALL_NOTE
    return FINAL if evaluate_final else DONE
