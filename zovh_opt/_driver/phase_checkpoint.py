"""The quasi-Newton phase's checkpoints (`zovh_opt._driver.quasi_newton.QuasiNewtonPhase`): its
state as plain data and arrays, and the phase back from it. Keys added since the first
format have defaults, so that a checkpoint written before them goes on as the run that wrote
it would have (`zovh_opt._driver.run_state` assembles the whole run's state)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .._arrays.backend import ArraySpace, norm
from .quasi_newton import QuasiNewtonPhase

__all__ = ["phase_from_state", "phase_state"]


def phase_state(phase: QuasiNewtonPhase) -> dict[str, Any]:
    """The checkpoint state of ``phase``: plain data and its arrays."""
    pairs = phase.pairs
    return {
        "x": phase.x,
        "fx": phase.fx,
        "f_unit": phase.f_unit,
        "start": phase.start,
        "f_start": phase.f_start,
        "f_scale": phase.f_scale,
        "length": phase.length,
        "recheck": phase.recheck,
        "g": phase.g,
        "jac": phase.jac,
        "pairs_s": None if not pairs else phase.xp.stack([s for s, _, _ in pairs]),
        "pairs_y": None if not pairs else phase.xp.stack([y for _, y, _ in pairs]),
        "pairs_rho": [rho for _, _, rho in pairs],
        "searching": phase.searching,
        "probing": phase.probing,
        "centre_known": phase.centre_known,
        "wide": phase.wide,
        "probed": list(phase.probed),
        "repeating": phase.repeating,
        "measured": phase.measured,
        "retry": list(phase.retry),
        "retried": phase.retried,
        "steps": phase.steps,
        "longest": phase.longest,
        "short": phase.short,
        "jumped": phase.jumped,
        "short_jumps": phase.short_jumps,
        "skipped": phase.skipped,
        "ratio": phase.ratio,
        "first_ratio": phase.first_ratio,
        "p": phase.p,
        "slope": phase.slope,
        "alpha": phase.alpha,
        "trials": phase.trials,
        "expanding": None if phase.expanding is None else list(phase.expanding),
        "miss": phase.miss,
        "contradicted": phase.contradicted,
        "opinion": phase.opinion,
        "opinions": phase.opinions,
        "previous_x": None if phase.previous is None else phase.previous[0],
        "previous_g": None if phase.previous is None else phase.previous[1],
        "ended": phase.ended,
        "noisy": phase.noisy,
        "nfev": phase.nfev,
        "step_limit": phase.step_limit,
        "resumes": phase.resumes,
        "hops": phase.hops,
        "walls": phase.walls,
        "handover_lowest": phase.handover_lowest,
    }


def phase_from_state(
    state: dict[str, Any],
    like: Any,
    within: Callable[[Any], Any] | None = None,
    caps: Any = None,
) -> QuasiNewtonPhase:
    """The phase of `state`; ``like`` is an array of the run (its namespace, device and
    dtype), ``state``'s arrays NumPy; ``within`` and ``caps`` as `QuasiNewtonPhase` takes
    them."""
    space = ArraySpace(like)

    def vector(a: Any) -> Any:
        if a is None:
            return None
        if a.shape[-1] != space.dim:
            raise ValueError(f"expected vectors of length {space.dim}, got {a.shape}")
        return space.from_numpy(a)

    x = space.to_user(vector(state["x"]))  # the run's namespace, as a phase is built with
    phase = QuasiNewtonPhase(x, float(state["length"]), None, bool(state["recheck"]), within, caps)
    phase.fx, phase.f_unit = float(state["fx"]), float(state["f_unit"])
    phase.start, phase.f_start = vector(state["start"]), float(state["f_start"])
    phase.f_scale = float(state.get("f_scale", 0.0))  # (none before the region's opening)
    phase.g, phase.jac = vector(state["g"]), vector(state["jac"])
    s, y = vector(state["pairs_s"]), vector(state["pairs_y"])
    rho = [float(r) for r in state["pairs_rho"]]
    phase.pairs = [] if s is None else [(s[i, ...], y[i, ...], r) for i, r in enumerate(rho)]
    phase.searching = bool(state["searching"])
    phase.probing = bool(state.get("probing", False))  # (none before the probe)
    phase.centre_known = bool(state.get("centre_known", False))
    wide = state.get("wide")
    phase.wide = None if wide is None else float(wide)
    phase.probed = [float(v) for v in state.get("probed", [])]  # (none before the repeats)
    phase.repeating = bool(state.get("repeating", False))
    phase.measured, phase.steps = int(state["measured"]), int(state["steps"])
    # (checkpoints written before `stalled`: a phase that converged as it was then judged)
    phase.longest = float(state.get("longest", math.inf))
    phase.first_ratio = float(state.get("first_ratio", math.nan))
    phase.short = int(state.get("short", 0))  # (0 in checkpoints written before the rule)
    phase.jumped = bool(state.get("jumped", False))  # (none before jumps were told apart)
    phase.short_jumps = int(state.get("short_jumps", 0))
    phase.skipped = int(state.get("skipped", 0))  # (likewise)
    phase.ratio = float(state.get("ratio", math.nan))
    phase.retry = [int(j) for j in state.get("retry", [])]
    phase.retried = int(state.get("retried", 0))  # (0 before a failed retry was asked again)
    phase.p = vector(state["p"])
    phase.p_norm = math.nan if phase.p is None else norm(phase.p, phase.xp)
    phase.slope, phase.alpha = float(state["slope"]), float(state["alpha"])
    phase.trials = int(state["trials"])
    expanding = state.get("expanding")  # (None in checkpoints written before expansions)
    if expanding is not None:
        phase.expanding = (float(expanding[0]), float(expanding[1]), int(expanding[2]))
    # (none in checkpoints written before the second opinion)
    phase.miss = float(state.get("miss", math.nan))
    phase.contradicted = int(state.get("contradicted", 0))
    opinion = state.get("opinion")
    phase.opinion = None if opinion is None else int(opinion)
    phase.opinions = int(state.get("opinions", 0))
    if state["previous_x"] is not None:
        phase.previous = (vector(state["previous_x"]), vector(state["previous_g"]))
    phase.ended = None if state["ended"] is None else str(state["ended"])
    phase.noisy = bool(state["noisy"])
    phase.nfev = int(state["nfev"])
    # (checkpoints written before the phase could resume: it ends at its step limit)
    limit = state.get("step_limit", phase.max_steps)
    phase.step_limit = None if limit is None else int(limit)
    phase.resumes = int(state.get("resumes", 0))
    phase.hops = int(state.get("hops", 0))
    phase.walls = int(state.get("walls", 0))  # (0 in checkpoints written before walls)
    lowest = state.get("handover_lowest")
    phase.handover_lowest = None if lowest is None else float(lowest)
    return phase
