"""The checkpoint state of a whole run, assembled from its parts' own ``state()``, and the way
back (`zovh_opt._driver.checkpoint` writes and reads the file).

The state is one flat mapping, the layout of format 1 that the one-class driver wrote: each
part contributes its own keys (``bounds``, ``unit`` and ``f_unit`` from the coordinates;
``recent``, ``previous_median`` and ``x0_scale`` from the stopping rules; ``restarts``,
``anchor``, ``scale``, ``first`` and the failure counts from the safeguard; ``best``,
``final_values``, ``start`` and ``compared`` from the returned point), the driver its counters,
the method its ``step``. Keys added since (the units, the one-sided margins' scales) have
defaults, so checkpoints written before them load and go on as the runs that wrote them.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

from scipy.optimize import Bounds, OptimizeWarning

from .._arrays.backend import ArraySpace
from .._methods import METHODS
from .checkpoint import CheckpointError
from .phase_checkpoint import phase_from_state, phase_state
from .pipeline import ITERATE, MODEL, QUASI_NEWTON, STAGES
from .region_checkpoint import region_from_state, region_state
from .reporting import Trace
from .run_options import disp_option

__all__ = ["pickled", "restore", "restoring", "state_of", "unpickled"]


def state_of(run: Any) -> dict[str, Any]:
    """The whole state of the `zovh_opt.Optimizer` ``run``, as plain data and arrays."""
    parts = run._parts
    return {
        "space": parts.method.space.describe(),
        "method": parts.method_name,
        "method_options": parts.method_options,
        "options": {**parts.options, "disp": disp_option(parts.options["disp"])},
        "source": parts.seeds.get_state(),
        "step": parts.method.state(),
        "nit": parts.nit,
        "told": parts.told,
        "status": parts.status,
        "message": parts.message,
        "phase": run.stage,
        "pending": None if run._pending is None else run._pending.name,
        "partial": run._partial,
        "trace": parts.trace.columns,
        "elapsed": parts.elapsed,
        "requested_options": parts.requested,
        "quasi_newton": None if parts.quasi_newton is None else phase_state(parts.quasi_newton),
        "trust_region": None if parts.trust_region is None else region_state(parts.trust_region),
        "regions_spent": list(parts.regions_spent),
        "may_open": parts.may_open,
        **parts.coordinates.state(),
        **parts.stopping.state(),
        **parts.safeguard.state(),
        **parts.returned.state(),
        **parts.noise.state(),
        **parts.drift.state(),
    }


def pickled(run: Any) -> dict[str, Any]:
    """What ``pickle`` keeps of the `zovh_opt.Optimizer` ``run`` (``copy.deepcopy``, workers):
    its parts and the pending ask, with the stages by name (the lock is made anew)."""
    pending = None if run._pending is None else run._pending.name
    return {"parts": run._parts, "stage": run.stage, "pending": pending, "partial": run._partial}


def unpickled(run: Any, state: dict[str, Any]) -> None:
    """The `pickled` ``state`` into ``run``."""
    pending = None if state["pending"] is None else STAGES[state["pending"]]
    run._resume(state["parts"], STAGES[state["stage"]], pending, state["partial"])


def restore(cls: type, state: dict[str, Any]) -> Any:
    """The run of `state_of` again, as an instance of ``cls`` (`zovh_opt.Optimizer`)."""
    space = ArraySpace.described(state["space"])
    x0 = space.to_user(space.zeros((space.dim,)))
    method = METHODS.get(state["method"])  # an unknown name: the Optimizer says so
    method_options = state["method_options"]
    if method is not None:
        method_options = method.options_from_checkpoint(method_options)
    options = {**state["options"], **method_options}
    bounds = state["bounds"]
    bounds = None if bounds is None else Bounds(*bounds[:2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OptimizeWarning)  # warned when it was built
        run = cls(x0, state["method"], bounds=bounds, options=options, rng=0)
    parts = run._parts
    parts.seeds.set_state(state["source"])
    parts.method.load_state(state["step"])
    vector = lambda a: None if a is None else space.to_user(parts.method.vector(a))  # noqa: E731
    parts.coordinates.load_state(state, space)
    parts.stopping.load_state(state)
    parts.safeguard.load_state(state, vector)
    parts.noise.load_state(state, vector)
    parts.drift.load_state(state, vector)
    if parts.noise.detected and parts.noise.acted:  # before the returned point's own state
        parts.noise.ends_noisy(parts.returned)
    parts.returned.load_state(state, vector)
    # the method's options as given (older checkpoints: as resolved)
    parts.requested = state.get("requested_options", parts.requested)
    parts.phase_planned = QUASI_NEWTON.applies(parts) and "quasi_newton" in state
    phase = state.get("quasi_newton")
    parts.quasi_newton = (
        None
        if phase is None
        else phase_from_state(
            phase, x0, parts.coordinates.in_one_period, parts.coordinates.difference_caps()
        )
    )
    region = state.get("trust_region")  # (none in checkpoints written before the region)
    parts.trust_region = None if region is None else region_from_state(region)
    parts.regions_spent = tuple(int(n) for n in state.get("regions_spent", (0, 0)))
    parts.may_open = bool(state.get("may_open", True))
    parts.nit, parts.told = int(state["nit"]), int(state["told"])
    parts.status, parts.message = int(state["status"]), str(state["message"])
    if state["phase"] not in STAGES:
        raise ValueError(f"unknown phase {state['phase']!r}")
    if state["pending"] not in (None, *STAGES) or state["pending"] == "done":
        raise ValueError(f"unknown pending phase {state['pending']!r}")
    stage = STAGES[state["phase"]]
    pending = None if state["pending"] is None else STAGES[state["pending"]]
    partial = [None if v is None else float(v) for v in state["partial"]]
    running = parts.quasi_newton is not None and not parts.quasi_newton.done
    if (
        (pending is None) != (not partial)
        or (pending is ITERATE and not parts.method.asked)
        or ((stage is QUASI_NEWTON) != running)
        or ((stage is MODEL) != (parts.trust_region is not None and not parts.trust_region.done))
    ):
        raise ValueError("the pending ask and its values disagree")
    parts.trace = Trace({k: v.tolist() for k, v in state["trace"].items()})
    parts.clock_start(float(state["elapsed"]))
    run._resume(parts, stage, pending, partial)
    return run


@contextlib.contextmanager
def restoring(path: Any, state: dict[str, Any], written_by: str) -> Iterator[None]:
    """Turn what goes wrong while a state is restored into a `CheckpointError` that names
    the file: a missing library, a missing key, a device this process lacks, a bad value."""
    try:
        yield
    except ImportError as error:
        raise CheckpointError(
            f"{path} holds arrays of {state['space']['namespace']}, which is not installed: {error}"
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
