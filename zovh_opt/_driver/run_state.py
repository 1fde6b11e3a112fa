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
import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any

from scipy.optimize import Bounds, OptimizeWarning

from .._arrays.backend import ArraySpace, namespace_of
from .._methods import METHODS
from .checkpoint import CheckpointError
from .measurements import PHASES
from .phase_checkpoint import phase_from_state, phase_state
from .quasi_newton import GRADIENT, phase_applies
from .reporting import Trace
from .run_options import disp_option

__all__ = ["pickled", "restore", "restoring", "state_of", "unpickled"]


def state_of(run: Any) -> dict[str, Any]:
    """The whole state of the `zovh_opt.Optimizer` ``run``, as plain data and arrays."""
    return {
        "space": run._step.space.describe(),
        "method": run.method,
        "method_options": run._method_options,
        "options": {**run.options, "disp": disp_option(run.options["disp"])},
        "source": run._seeds.get_state(),
        "step": run._step.state(),
        "nit": run.nit,
        "told": run._told,
        "status": run.status,
        "message": run.message,
        "phase": run._phase,
        "pending": run._pending,
        "partial": run._partial,
        "trace": run._trace.columns,
        "elapsed": run.elapsed,
        "requested_options": run._requested,
        "quasi_newton": None if run._quasi_newton is None else phase_state(run._quasi_newton),
        **run._coordinates.state(),
        **run._stopping.state(),
        **run._safeguard.state(),
        **run._returned.state(),
        **run._noise.state(),
        **run._drift.state(),
    }


def pickled(run: Any) -> dict[str, Any]:
    """What ``pickle`` keeps of the `zovh_opt.Optimizer` ``run`` (``copy.deepcopy``, workers):
    its attributes, less the namespace, the clock and the lock, which `unpickled` makes anew."""
    state = dict(run.__dict__)
    state["_elapsed"] = run.elapsed
    del state["xp"], state["_since"], state["_lock"]
    return state


def unpickled(run: Any, state: dict[str, Any]) -> None:
    """The `pickled` ``state`` into ``run``."""
    run.__dict__.update(state)
    run.xp = namespace_of(run._step.x)
    run._since = time.perf_counter()
    run._lock = threading.RLock()


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
    run._seeds.set_state(state["source"])
    run._step.load_state(state["step"])
    vector = lambda a: None if a is None else space.to_user(run._step._vector(a))  # noqa: E731
    run._coordinates.load_state(state, space)
    run._stopping.load_state(state)
    run._safeguard.load_state(state, vector)
    run._noise.load_state(state, vector)
    run._drift.load_state(state, vector)
    if run._noise.detected and run._noise.acted:  # before the returned point's own state
        run._noise.ends_noisy(run._returned)
    run._returned.load_state(state, vector)
    # the method's options as given (older checkpoints: as resolved)
    run._requested = state.get("requested_options", run._requested)
    run._phase_planned = phase_applies(run) and "quasi_newton" in state
    phase = state.get("quasi_newton")
    run._quasi_newton = (
        None
        if phase is None
        else phase_from_state(
            phase, x0, run._coordinates.in_one_period, run._coordinates.difference_caps()
        )
    )
    run.nit, run._told = int(state["nit"]), int(state["told"])
    run.status, run.message = int(state["status"]), str(state["message"])
    if state["phase"] not in (*PHASES, GRADIENT, "iterate", "final", "done"):
        raise ValueError(f"unknown phase {state['phase']!r}")
    if state["pending"] not in (None, *PHASES, GRADIENT, "iterate", "final"):
        raise ValueError(f"unknown pending phase {state['pending']!r}")
    run._phase, run._pending = state["phase"], state["pending"]
    run._partial = [None if v is None else float(v) for v in state["partial"]]
    running = run._quasi_newton is not None and not run._quasi_newton.done
    if (
        (run._pending is None) != (not run._partial)
        or (run._pending == "iterate" and not run._step.asked)
        or ((run._phase == GRADIENT) != running)
    ):
        raise ValueError("the pending ask and its values disagree")
    run._trace = Trace({k: v.tolist() for k, v in state["trace"].items()})
    run._elapsed = float(state["elapsed"])
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
