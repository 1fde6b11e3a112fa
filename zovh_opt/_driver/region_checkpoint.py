"""The trust region's checkpoints (`zovh_opt._driver.trust_region.TrustRegionPhase`): its
state as plain data and host arrays, and the region back from it. Keys added since the first
format have defaults, so that a checkpoint written before them goes on as the run that wrote
it would have (`zovh_opt._driver.run_state` assembles the whole run's state)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .trust_region import TrustRegionPhase

__all__ = ["region_from_state", "region_state"]


def region_state(region: TrustRegionPhase) -> dict[str, Any]:
    """The checkpoint state of ``region``: plain data and host arrays."""
    return {
        "scale": region.scale, "radius": region.radius, "u": region.u, "fu": region.fu,
        "f_start": region.f_start, "noise": region.noise, "points": np.array(region.points),
        "values": list(region.values), "hessian": region.hessian,
        "pending": np.array(region.pending).reshape(-1, region.dim),
        "predicted": region.predicted, "step_length": region.step_length,
        "steps": region.steps, "nfev": region.nfev, "ended": region.ended, "noisy": region.noisy,
        "good_radius": region.good_radius, "quiet": region.quiet, "checking": region.checking,
        "level": region.level, "confirming": region.confirming, "measured": region.measured,
        "misfit": region.misfit, "opening": region.opening, "opened": region.opened,
        "failures": region.failures, "restarts": region.restarts,
        "restart_value": region.restart_value, "ending": region.ending,
        "outliers": region.outliers, "fresh_next": region.fresh_next,
    }  # fmt: skip


def region_from_state(state: dict[str, Any]) -> TrustRegionPhase:
    """The region back from `region_state`'s ``state``."""
    region = TrustRegionPhase.__new__(TrustRegionPhase)
    region.scale = np.asarray(state["scale"], dtype=np.float64)
    region.dim = int(region.scale.shape[0])
    region.radius, region.fu = float(state["radius"]), float(state["fu"])
    region.u = np.asarray(state["u"], dtype=np.float64)
    region.f_start, region.noise = float(state["f_start"]), float(state["noise"])
    region.points = [np.asarray(p, dtype=np.float64) for p in state["points"]]
    region.values = [float(v) for v in state["values"]]
    region.hessian = np.asarray(state["hessian"], dtype=np.float64)
    region.pending = [np.asarray(p, dtype=np.float64) for p in state["pending"]]
    region.predicted, region.step_length = float(state["predicted"]), float(state["step_length"])
    region.steps, region.nfev = int(state["steps"]), int(state["nfev"])
    region.ended = None if state["ended"] is None else str(state["ended"])
    region.noisy = bool(state["noisy"])
    region.good_radius = float(state["good_radius"])
    region.quiet = int(state.get("quiet", 0))  # (none before the noise check)
    region.checking = bool(state.get("checking", False))
    region.confirming = bool(state.get("confirming", False))
    region.level = float(state.get("level", region.noise))
    region.measured = bool(state.get("measured", False))
    region.misfit = float(state.get("misfit", 0.0))
    region.opening = int(state.get("opening", 0))  # (none before the opening)
    region.opened = bool(state.get("opened", False))
    region.failures = int(state.get("failures", 0))  # (none before the alternative model)
    region.restarts = int(state.get("restarts", 0))  # (none before the restarts)
    region.restart_value = float(state.get("restart_value", region.f_start))
    ending = state.get("ending")
    region.ending = None if ending is None else [float(v) for v in ending]
    region.outliers = int(state.get("outliers", 0))
    region.fresh_next = bool(state.get("fresh_next", False))  # (none before the fresh step)
    return region
