"""The parts of one run that its stages share (`zovh_opt._driver.stages`): the method, the
coordinates, the budgets and tolerances, the safeguard, the returned point, the noise
monitor and drift check, the quasi-Newton phase, the counters and the clock. Built once by
`RunParts.start` from what `zovh_opt.Optimizer` was given; the stages read and replace them
through these public attributes (docs: *Architecture*)."""

from __future__ import annotations

import time
from typing import Any

from .._arrays.backend import DirectionSource, namespace_of
from .._methods import build
from .._noise.drift import DriftCheck
from .._noise.monitor import NoiseMonitor
from .coordinates import Coordinates
from .reporting import Trace
from .returned_point import ReturnedPoint
from .run_options import checked_method, run_options, validated_x0
from .safeguard import Safeguard
from .stopping import RUNNING, StoppingRules, default_maxfev

__all__ = ["RunParts"]


class RunParts:
    """What a run is made of, as `start` builds it.

    Attributes
    ----------
    method_name, options : str, dict
        The method's name and the driver's resolved options.
    requested, method_options : dict
        The method's options as given (a method built later resolves them again) and as
        the current method resolved them.
    seeds : DirectionSource
        The source of every direction.
    method : AskTellMethod
        The method object (`zovh_opt._methods`), replaced when the phase hands over, when
        noise is found at ``x0`` and at a refinement.
    coordinates, stopping, safeguard, returned, noise, drift, trace
        The driver's parts (`Coordinates`, `StoppingRules`, `Safeguard`, `ReturnedPoint`,
        `NoiseMonitor`, `DriftCheck`, `Trace`).
    quasi_newton : QuasiNewtonPhase or None
        The phase, once started (`zovh_opt._driver.quasi_newton`); ``phase_planned`` says
        whether the run starts with it.
    trust_region : TrustRegionPhase or None
        The model-based trust region of a mildly noisy run at small d, or of a deterministic
        run's opening, once started (`zovh_opt._driver.trust_region`).
    regions_spent : tuple of int
        The steps and evaluations of a region that another replaced (an opening's).
    may_open : bool
        Whether a deterministic run may open with the region (not a new start's).
    nit, told : int
        Iterations, and evaluations of completed asks.
    status, message : int, str
        Where the run stands (`zovh_opt._driver.stopping`'s statuses).
    """

    @classmethod
    def start(cls, x0: Any, method: str, bounds: Any, options: Any, tol: Any, rng: Any) -> RunParts:
        """The parts of a new run from `zovh_opt.Optimizer`'s arguments, checked."""
        parts = cls()
        parts.method_name = checked_method(method)
        parts.options, method_options = run_options(method, options, tol)
        x0, x_scale = validated_x0(x0), parts.options["x_scale"]
        parts.coordinates, z0, scale = Coordinates.start(x0, bounds, method_options, x_scale)
        parts.xp = namespace_of(z0)
        parts.seeds = DirectionSource(rng)
        noisy, final = parts.options["noisy"], parts.options["final_evaluations"]
        maxfev = parts.options["maxfev"] or default_maxfev(z0.shape[0])
        parts.requested = method_options  # as given: the method after the phase resolves them
        parts.method, parts.method_options = build(  # noisy=True: more pairs from the start
            method, z0, rng=parts.seeds, scale=scale, maxfev=maxfev, options=method_options,
            noisy=noisy is True, first_step=parts.coordinates.first_step)  # fmt: skip
        adaptive = parts.method.control is not None
        parts.noise = NoiseMonitor(noisy, adaptive, final, parts.method.x, maxfev)
        parts.drift = DriftCheck()  # a noisy run's centre against its best measured point
        parts.returned = ReturnedPoint(False, final or 1, None, parts.xp)
        if parts.noise.detected:  # noisy=True: the end of a noisy run from the start
            parts.noise.ends_noisy(parts.returned)
        parts.stopping = StoppingRules(
            parts.options,
            method=method,
            adaptive=adaptive,
            dim=parts.method.space.dim,
            points_per_iteration=parts.method.points_per_iteration,
            final_evaluations=parts.returned.reserve + parts.noise.size(),
            eps=float(parts.xp.finfo(z0.dtype).eps),  # the precision of x, and of f
            x0_scale=parts.method.scale,
        )
        restart_at = None if adaptive else parts.method.x
        parts.safeguard = Safeguard(parts.options["max_restarts"], restart_at)
        parts.quasi_newton, parts.phase_planned = None, False
        parts.trust_region, parts.regions_spent, parts.may_open = None, (0, 0), True
        parts.trace = Trace()
        parts.nit, parts.told = 0, 0
        parts.status, parts.message = RUNNING, "The run has not ended."
        parts.clock_start(0.0)
        return parts

    def clock_start(self, elapsed: float) -> None:
        """Start the run's clock at ``elapsed`` seconds (a run loaded from a checkpoint goes
        on from the time it had)."""
        self.earlier, self.since = elapsed, time.perf_counter()

    @property
    def elapsed(self) -> float:
        """Wall-clock seconds the run has been going, across checkpoints."""
        return self.earlier + time.perf_counter() - self.since

    def iterate(self) -> Any:
        """The current iterate in the run's coordinates: the phase's or the trust region's
        while it runs, else the method's."""
        region = self.trust_region
        if region is not None and not region.done:
            space = self.method.space
            return space.to_user(space.from_host(region.x))
        phase = self.quasi_newton
        return self.method.x if phase is None or phase.done else phase.x

    def room(self) -> int:
        """The evaluations ``maxfev`` leaves after the method's next iteration."""
        return self.options["maxfev"] - self.told - self.method.points_per_iteration

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["earlier"], state["since"] = self.elapsed, None  # the clock goes on when loaded
        del state["xp"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.xp = namespace_of(self.method.x)
        self.since = time.perf_counter()
