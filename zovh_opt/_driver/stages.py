"""The stages of a run: what each asks for and what it does with the values.

A stage is an object with `Stage.size` (the points of its next ask, drawing them), `point` and
`points` (those points for ``fun``) and `Stage.tell` (the values are in: the parts change,
and an outcome says how it went); `zovh_opt._driver.pipeline` says which stage follows.
The stages keep nothing of their own: what a run knows is in its parts
(`zovh_opt._driver.parts.RunParts`), whose ``state()`` the checkpoint holds. The theory
page's *The run's parts in detail* gives each stage's rules and their evidence.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from .._arrays.backend import norm
from .._methods import build, rebuilt_for_noise
from .._noise.samples import sample_std
from ..tuning import active
from .difference_gradient import unrounded_steps
from .quasi_newton import QuasiNewtonPhase
from .returned_point import mean
from .stopping import STALLED, SUCCESS, Stop
from .trust_region import TrustRegionPhase

__all__ = [
    "FINISHED",
    "PHASE_AGAIN",
    "SKIPPED",
    "CentreCheck",
    "Done",
    "Final",
    "Iterate",
    "Measure",
    "QuasiNewton",
    "Stage",
    "WALL_NOTE",
]


class Outcome(NamedTuple):
    """How a told ask went, where the pipeline must know more than "go on"."""

    name: str


PHASE_AGAIN = Outcome("phase again")  # the quasi-Newton phase starts again (resume, hop)
SKIPPED = Outcome("skipped")  # the method's batch taught nothing: no measurement follows
FINISHED = Outcome("finished")  # the final values are all in

WALL_NOTE = (
    " The quasi-Newton phase met a wall or a jump of f (its slope promised a decrease that even "
    "its shortest trial did not give, or its steps shrank to nothing against values far above "
    "f): a tolerance met next to it is no minimum, so only the budgets or ftarget end such a "
    "run."
)


REGION_XTOL_MESSAGE = (
    "The trust region's radius became shorter than xtol times the length scale of x0."
)


class Stage:
    """One stage of a run (its ``name`` is the checkpoint's). ``budgeted`` stages check
    ``maxiter``, ``maxfev`` and ``maxtime`` before each ask (`asked` points)."""

    name = ""
    budgeted = False

    def asked(self, parts: Any) -> int:
        """The points of the next ask, for the budgets (before `size` draws them)."""
        raise NotImplementedError

    def size(self, parts: Any) -> int:
        """Start the next ask (draw its directions); the number of its points."""
        raise NotImplementedError

    def point(self, parts: Any, i: int) -> Any:
        """Point ``i`` of the pending ask, a new array of the user's."""
        raise NotImplementedError

    def points(self, parts: Any) -> Any:
        """The pending ask's points in one new array, or ``None`` (stack `point`'s)."""
        return None

    def tell(self, parts: Any, values: list[float], bad: int) -> Any:
        """The values of the pending ask (``bad`` of them NaN or infinite): ``None`` to go
        on, a `Stop`, or an `Outcome`."""
        raise NotImplementedError


class Measure(Stage):
    """``x0``, or the best point again, measured to find noise (`zovh_opt._noise.monitor`).
    Noise found at ``x0`` rebuilds the method for it; once measured, the parts act on it."""

    name = "measure"

    def size(self, parts: Any) -> int:
        return parts.noise.size()

    def point(self, parts: Any, i: int) -> Any:
        return parts.noise.point(parts.coordinates.to_user)

    def tell(self, parts: Any, values: list[float], bad: int) -> None:
        noise = parts.noise
        noise.take(values, parts.room())
        if noise.detected and parts.nit == 0 and not noise.done and TrustRegion.applies(parts):
            noise.defer()  # mild noise at small d: x0's values wait for the end's comparison
        if not noise.done:
            return
        if noise.detected and parts.nit == 0 and not noise.acted:  # at x0
            args = parts.method_name, parts.method, parts.method_options, parts.options["maxfev"]
            parts.method, parts.method_options = rebuilt_for_noise(*args)
        noise.act(parts.returned, parts.stopping, parts.method, parts.coordinates.f_unit)

    @staticmethod
    def due(parts: Any) -> bool:
        """After an iteration: whether the best point is measured again now (the noise
        monitor's rechecks, where the budget leaves room)."""
        parts.noise.recheck_due(parts.nit, parts.returned.best, affordable=True)
        return not parts.noise.done


class CentreCheck(Stage):
    """A noisy run's centre measured against its best measured point; where it drifted,
    back to the best point (`zovh_opt._noise.drift`; the return is one of ``restarts``)."""

    name = "check"

    def size(self, parts: Any) -> int:
        return parts.drift.size

    def point(self, parts: Any, i: int) -> Any:
        return parts.coordinates.to_user(parts.drift.point())

    def tell(self, parts: Any, values: list[float], bad: int) -> None:
        room = parts.room() - parts.returned.reserve
        reason = parts.drift.take(values, parts.method, parts.returned, room)
        if reason is not None:
            rate = parts.method.learning_rate
            parts.safeguard.record(parts.nit, parts.told, reason, "drift", rate)

    @staticmethod
    def due(parts: Any, room: int) -> bool:
        """After an iteration of a noisy run: whether its centre is measured now (every
        `zovh_opt._noise.drift.CHECK_EVERY` iterations, where ``room`` pays for it)."""
        return parts.drift.due(parts.method, parts.returned, room)


class QuasiNewton(Stage):
    """Forward-difference gradients and L-BFGS steps before the method
    (`zovh_opt._driver.quasi_newton.QuasiNewtonPhase`); at its end the method starts at its
    point with the budget left. Its hops and resumes come from `Iterate`."""

    name = "gradient"
    budgeted = True

    @staticmethod
    def applies(parts: Any) -> bool:
        """Whether the run starts with the phase: ``quasi_newton`` is ``"auto"``, the method
        ``"zovh"`` with the step rule and a curvature model not set ``"off"`` (the paper's
        iteration runs as published), an objective not declared noisy, and a budget
        (``maxfev``, and ``maxiter`` iterations of the method) paying for `MIN_GRADIENTS`
        gradients."""
        method, options = parts.method, parts.options
        dim, budget = method.space.dim, options["maxfev"]
        if options["maxiter"] is not None:
            budget = min(budget, options["maxiter"] * method.points_per_iteration)
        return (
            options["quasi_newton"] == "auto"
            and parts.method_name == "zovh"
            and method.control is not None
            and parts.requested.get("curvature", "auto") != "off"
            and options["noisy"] is not True
            and budget
            >= active().quasi_newton.MIN_GRADIENTS * (dim + 1) + parts.returned.reserve + 2
        )

    @staticmethod
    def start(parts: Any, value: float | None = None, f_scale: float = 0.0) -> bool:
        """Start the phase at the method's point (``x0``, or where an opening region handed
        over), where ``f = value`` there (``None``: not measured), ``f_scale`` the run's scale
        of ``f`` there (``|f(x0)|``: walls and jumps are measured against it); ``False`` where
        the value is not finite (the method then runs alone)."""
        if value is not None and not math.isfinite(value):
            return False
        method, coordinates = parts.method, parts.coordinates
        recheck = parts.options["noisy"] == "auto"
        parts.quasi_newton = QuasiNewtonPhase(
            method.x, method.scale, value, recheck, coordinates.in_one_period,
            coordinates.difference_caps(), probe=TrustRegion.fits(parts), f_scale=f_scale,
        )  # fmt: skip
        return True

    def start_measured(self, parts: Any) -> bool:
        """After the measurement of ``x0``: the phase starts from its first value where it
        was planned and the values there agreed."""
        if not (parts.phase_planned and not parts.noise.detected and parts.nit == 0):
            return False
        started = QuasiNewton.start(parts, parts.noise.values[0])
        if started:  # x0's values just repeated: the first gradient does not measure it again
            parts.quasi_newton.centre_known = True
        return started

    def asked(self, parts: Any) -> int:
        return parts.quasi_newton.size()

    def size(self, parts: Any) -> int:
        return parts.quasi_newton.size()

    def point(self, parts: Any, i: int) -> Any:
        return _to_user(parts, parts.quasi_newton.point(i))

    def points(self, parts: Any) -> Any:
        return _to_user(parts, parts.quasi_newton.points())

    def tell(self, parts: Any, values: list[float], bad: int) -> Stop | None:
        """A completed gradient is an iteration (the trace, ``nit``); ``ftarget`` is
        checked; where the phase has ended, the method starts at its point with the budget
        left (where the phase found noise, with the pairs and length scale of a noisy run,
        and the measurement of ``x0`` follows)."""
        phase = parts.quasi_newton
        if phase.tell(values):
            parts.nit += 1
            parts.trace.add(parts.nit, parts.told, phase.f_value)
        reached = parts.stopping.target_reached(parts.returned.lowest())
        if reached is not None or not phase.done:
            return reached
        if phase.noisy:
            parts.noise.found(parts.options["maxfev"] - parts.told, elsewhere=True)
            if TrustRegion.start_noisy(parts, phase):
                phase.release()  # mild noise at small d: the trust region, from the phase's point
                return None
        # in a box |z| is the box's offset in the run's coordinates, no scale (issue #67: 73 in
        # a box 1 wide, and the float32 method's queries spread over the whole box)
        if phase.rugged and not phase.noisy and TrustRegion.start_rugged(parts, phase):
            phase.release()  # a rugged f at small d: the trust region, from the phase's point
            return None
        boxed = parts.coordinates.box is not None
        scale = phase.length if phase.noisy or phase.stalled or boxed else None
        method_from(parts, phase.x, scale, noisy=phase.noisy)
        if phase.converged:
            parts.stopping.converged_value = phase.f_value
        if phase.ended == "steps":
            phase.handover_lowest = parts.returned.lowest()
        phase.release()
        return None

    @staticmethod
    def met_a_wall(parts: Any) -> bool:
        """Whether the phase ended at a wall or a jump of ``f``: its tolerances then do not
        end the run with success where they are met next to the wall."""
        return parts.quasi_newton is not None and parts.quasi_newton.walls > 0

    @staticmethod
    def result_fields(parts: Any) -> dict[str, Any]:
        """The result's ``quasi_newton`` (steps, evaluations and why the phase ended) where
        the run had the phase, and ``jac`` and ``hess_inv`` in the user's units: ``jac`` the
        method's, or the phase's gradient before the method has iterated; ``hess_inv`` the
        phase's secant pairs' while it has them (`Iterate.forget_pairs`), else the
        method's."""
        phase, method = parts.quasi_newton, parts.method

        def source() -> dict[str, Any]:
            if phase is None:
                return method.estimates()
            fields = method.estimates() if method.nit else phase.estimates()
            if phase.pairs:
                fields = {**fields, "hess_inv": phase.estimates()["hess_inv"]}
            return fields

        fields = parts.coordinates.estimates(source)
        if phase is not None:
            fields["quasi_newton"] = {
                "nit": phase.steps,
                "nfev": phase.nfev,
                "ended": phase.ended,
                "resumes": phase.resumes,
                "hops": phase.hops,
                "walls": phase.walls,
            }
        return fields


class TrustRegion(Stage):
    """A mildly noisy run at small d: a model-based trust region from ``x0``
    (`zovh_opt._driver.trust_region.TrustRegionPhase`) in place of the phase; at its end the
    method starts at its centre with the budget left (`hand_over`). A deterministic run at
    the smallest d opens with it, and the phase follows (`start_opening`)."""

    name = "model"
    budgeted = True

    @staticmethod
    def fits(parts: Any) -> bool:
        """Whether the run may take the trust region: the method ``"zovh"`` with the step
        rule and a curvature model not set ``"off"``; ``d`` at most
        `TRUST_REGION_MAX_DIMENSION`; a budget for its first ``2 d`` points and a step beside
        the end's."""
        method = parts.method
        dim = method.space.dim
        return (
            parts.method_name == "zovh"
            and method.control is not None
            and parts.requested.get("curvature", "auto") != "off"
            and dim <= active().dimensions.TRUST_REGION_MAX_DIMENSION
            and TrustRegion._before_the_end(parts) >= 2 * dim + 2
        )

    @staticmethod
    def _before_the_end(parts: Any) -> int:
        """The evaluations ``maxfev`` leaves beside the end's."""
        return parts.options["maxfev"] - parts.told - parts.returned.reserve

    @classmethod
    def applies(cls, parts: Any) -> bool:
        """Whether the run goes on with the trust region after ``x0``'s values: noise was
        found there before the first iteration, mild (the values spread by at most `MILD`
        of their mean's magnitude), and the run `fits`."""
        noise = parts.noise
        if not (noise.detected and parts.nit == 0 and cls.fits(parts)):
            return False
        finite = noise.finite_values()
        if len(finite) < 2:
            return False
        return sample_std(finite) <= active().trust_region.MILD * abs(mean(finite))

    @classmethod
    def start_rugged(cls, parts: Any, phase: Any) -> bool:
        """After a quasi-Newton phase that converged on ruggedness (`QuasiNewtonPhase.rugged`:
        a deterministic ``f`` rugged at its differences' scale, a solver's tolerance), where
        the run `fits`: the trust region from the phase's point, whose radii rise above it."""
        if not cls.fits(parts):
            return False
        region = parts.trust_region
        if region is not None and region.opened and not phase.steps:  # at the opening's centre
            region.go_on(rugged=True)
            return True
        x, x0 = phase.space.to_host(phase.x), phase.space.to_host(phase.start)
        cls._install(
            parts,
            TrustRegionPhase(x, phase.f_value, 0.0, noisy=False, like=x0, length=phase.length),
        )
        return True

    @classmethod
    def start_noisy(cls, parts: Any, phase: Any) -> bool:
        """After a quasi-Newton phase that found noise (its centre's value did not repeat),
        where the run `fits` and the two values spread by at most `MILD` of their mean's
        magnitude (noise in a fraction of the calls, bbob-noisy's Cauchy model): the trust
        region from the phase's point as a noisy run's, ``x0``'s values for the end."""
        values = phase.noise_values
        if not (cls.fits(parts) and len(values) == 2 and all(map(math.isfinite, values))):
            return False
        if sample_std(values) > active().trust_region.MILD * abs(mean(values)):
            return False
        noise = parts.noise
        noise.defer()
        noise.act(parts.returned, parts.stopping, None, parts.coordinates.f_unit)
        x, x0 = phase.space.to_host(phase.x), phase.space.to_host(phase.start)
        back = phase.previous is not None and phase.x is phase.start  # (no confirmed progress)
        f = phase.f_start * phase.f_unit if back else mean(values)
        cls._install(
            parts, TrustRegionPhase(x, f, sample_std(values), like=x0, length=phase.length)
        )
        return True

    @classmethod
    def start_opening(cls, parts: Any) -> bool:
        """Where a deterministic run (``x0``'s values repeated, or ``noisy=False``) would start
        the phase at ``x0``, ``d`` is at most `OPENING_MAX_DIMENSION` and the run `fits`: the
        region opens it, deterministic, for `OPENING` ``d`` evaluations, and the phase goes on
        from its centre (`hand_over`); not in a new start (``parts.may_open``), whose budget is
        past the region's quick first steps."""
        noise, dim = parts.noise, parts.method.space.dim
        if not (parts.phase_planned and parts.may_open and not noise.detected and parts.nit == 0):
            return False
        if dim > active().dimensions.OPENING_MAX_DIMENSION or not cls.fits(parts):
            return False
        f0 = noise.values[0] if noise.values else None  # (None: noisy=False measured nothing)
        if f0 is not None and not math.isfinite(f0):
            return False
        x0 = parts.method.space.to_host(parts.method.x)
        opening = active().trust_region.OPENING * dim
        parts.trust_region = TrustRegionPhase(
            x0, f0, 0.0, noisy=False, length=parts.method.scale, opening=opening
        )
        return True

    @staticmethod
    def _install(parts: Any, region: TrustRegionPhase) -> None:
        """``region`` as the run's, the steps and evaluations of one it replaces (an opening)
        kept for the result (`result_field`)."""
        old = parts.trust_region
        if old is not None:
            steps, nfev = parts.regions_spent
            parts.regions_spent = (steps + old.steps, nfev + old.nfev)
        parts.trust_region = region

    def start(self, parts: Any) -> bool:
        """Start at ``x0`` from its measured values where the region `applies`."""
        if not self.applies(parts):
            return False
        finite = parts.noise.finite_values()
        x0 = parts.method.space.to_host(parts.method.x)
        parts.trust_region = TrustRegionPhase(
            x0, mean(finite), sample_std(finite), length=parts.method.scale
        )
        return True

    def asked(self, parts: Any) -> int:
        return parts.trust_region.size()

    def size(self, parts: Any) -> int:
        return parts.trust_region.size()

    def point(self, parts: Any, i: int) -> Any:
        space = parts.method.space
        return _to_user(parts, space.to_user(space.from_host(parts.trust_region.point(i))))

    def tell(self, parts: Any, values: list[float], bad: int) -> Stop | None:
        """Each ask is an iteration (the trace, ``nit``); ``ftarget`` and a given ``xtol`` (the
        radius against ``x0``'s length scale) are checked; where the region ended, or the
        budget leaves no room for its next ask beside the end's, the method starts at its
        centre."""
        region = parts.trust_region
        region.tell(values)
        parts.nit += 1
        parts.trace.add(parts.nit, parts.told, region.fu)
        reached = parts.stopping.target_reached(parts.returned.lowest())
        xtol = parts.stopping.options["xtol"]
        if reached is None and xtol is not None and region.length <= xtol * parts.method.scale:
            region.ended, reached = "xtol", Stop(SUCCESS, REGION_XTOL_MESSAGE)
        if reached is None and not region.done and region.size() > self._before_the_end(parts):
            region.ended = "budget"
        if reached is not None or region.done:
            region.ended = region.ended or "target"
            self.hand_over(parts)
        return reached

    @staticmethod
    def hand_over(parts: Any) -> None:
        """After an opening region that spent its evaluations or converged, the phase from its
        centre (`QuasiNewton.start`, which measures the centre again: noise in a fraction of
        the calls shows there), unless its radius came within the phase's resolution
        (`_finer`: it goes on first). Else the method at the region's centre with the budget
        left, its length scale the region's last good radius (`TrustRegionPhase.length`), or
        its own where the noise stayed as large as at ``x0`` (`TrustRegionPhase.noise_stayed`:
        its batches must rise above that noise, and the radius, cut down to where steps fail
        within it, is far too short for that) or the radius ran out in noise after a check
        (`TrustRegionPhase.ran_out`: the check may have read the noise far too low). Where
        the run is noisy the method reads its batches as a noisy run's, told the noise last
        measured near the centre (``level``: x0's would be far too large where the noise fell
        with ``f``; after a run-out the largest reading, `TrustRegionPhase.noise_read`), and
        the end compares its answer with the region's centre, not with ``x0``, which the
        region's steps left behind. After a rugged ``f``'s region that ran its radius out
        (`TrustRegionPhase.rugged_end`) the method's first iterations are compared with its
        centre, as after a converged phase (`StoppingRules.roughness`)."""
        region, space = parts.trust_region, parts.method.space
        x = space.from_host(region.x)
        if region.opened and region.ended in ("opening", "radius"):
            if region.ended == "opening" and TrustRegion._finer(parts):
                region.go_on()  # the phase's differences would see nothing the region does not
                return
            method_from(parts, x, parts.method.scale, noisy=False, space=space)  # (x0's)
            QuasiNewton.start(parts, region.fu, abs(region.f_start))  # from the centre
            return
        scale = None if region.noise_stayed or region.ran_out else region.length
        method_from(parts, x, scale, noisy=region.noisy, space=space)
        if region.rugged_end:  # the run ends where the method's first iterations go no lower
            parts.stopping.converged_value, parts.stopping.roughness = region.fu, region.roughness
        if region.noisy:
            level = region.noise_read if region.ran_out else region.level
            parts.method.noise_found((level / parts.coordinates.f_unit) ** 2)
            if region.steps:
                parts.returned.compare_with(space.to_user(x), "the trust region's centre")

    @staticmethod
    def _finer(parts: Any) -> bool:
        """Whether an opening region's radius is, along some coordinate, within `OPENING_FINE`
        times the difference step the phase would take at its centre (``sqrt(eps) max(|x_j|,
        l / sqrt(d))``, `zovh_opt._driver.difference_gradient`): in float32 the region gets
        there within its opening, and the phase's differences would read their own rounding."""
        region, method = parts.trust_region, parts.method
        eps = float(parts.xp.finfo(method.space.dtype).eps)
        steps = unrounded_steps(region.x, method.scale / math.sqrt(region.dim), eps, np)
        return bool(
            np.any(region.radius * region.scale <= active().trust_region.OPENING_FINE * steps)
        )

    @staticmethod
    def result_field(parts: Any) -> dict[str, Any]:
        """The result's ``trust_region`` where it ran: steps and evaluations (an opening's
        with those of a region after it), and why the last ended."""
        region = parts.trust_region
        if region is None:
            return {}
        steps, nfev = parts.regions_spent
        fields = {"nit": steps + region.steps, "nfev": nfev + region.nfev, "ended": region.ended}
        return {"trust_region": {**fields, "restarts": region.restarts}}


class Iterate(Stage):
    """The method's iterations: the step, the safeguard, the stopping rules; after a
    converged phase the hop or refinement at small d, at a stall the phase resumed or the
    safeguard's finer scale."""

    name = "iterate"
    budgeted = True

    def asked(self, parts: Any) -> int:
        return parts.method.points_per_iteration

    def size(self, parts: Any) -> int:
        method = parts.method
        method.prepare()
        return method.points_per_iteration

    def point(self, parts: Any, i: int) -> Any:
        return _to_user(parts, parts.method.pending_point(i))

    def points(self, parts: Any) -> Any:
        return _to_user(parts, parts.method.pending_points())

    def tell(self, parts: Any, values: list[float], bad: int) -> Any:
        parts.nit += 1
        f_estimate = mean(values)
        parts.trace.add(parts.nit, parts.told, f_estimate)
        method, safeguard = parts.method, parts.safeguard
        if bad:
            method.discard()  # missing data: the next iteration draws anew
            failure = safeguard.missing(bad, len(values))
            stop = None if failure is None else restart(parts, failure, diverged=False)
            return SKIPPED if stop is None else stop
        if safeguard.overreached(method, values, parts.returned, parts.noise):
            return SKIPPED
        return self._step(parts, values, f_estimate)

    def _step(self, parts: Any, values: list[float], f_estimate: float) -> Any:
        """An iteration with finite values: the method's step (unless diverging), then the
        stopping rules' verdict and what follows it."""
        safeguard, method, coordinates = parts.safeguard, parts.method, parts.coordinates
        if safeguard.finite(f_estimate, values):
            coordinates.found_f_scale(
                safeguard.scale, method.space.dtype_name, parts.method_options
            )
            if method.control is not None:  # noise found at x0 was in the user's unit of f
                method.control.noise_in_unit(coordinates.f_unit)
        failure = safeguard.divergence(f_estimate) if method.control is None else None
        if failure is not None:
            method.discard()
            return restart(parts, failure, diverged=True)
        if method.control is None:
            safeguard.progressed(f_estimate, method.x)
        told = coordinates.values(np.asarray(values, dtype=np.float64))  # checked floats
        parts.noise.tell_start(method, parts.nit, coordinates.f_unit)
        # the stopping rules read the method's f estimate (the curvature model's removes its
        # smoothing bias, which grows as the model learns)
        f_estimate = method.f_estimate(told) * coordinates.f_unit
        method.tell(told)
        parts.returned.follow(method)
        self.forget_pairs(parts)  # the phase's curvature, until the method has learned its own
        length = method.step_norm if method.control is None else method.control.step_length
        stopping = parts.stopping
        scale = stopping.length_scale(method.control)
        verdict = stopping.after_iteration(
            f_estimate, parts.returned.lowest(), length, scale, safeguard.scale, values
        )
        if verdict is None:  # after a converged phase the iterations may have left its basin
            return PHASE_AGAIN if self.hop(parts) else None
        if verdict is STALLED:
            if self.resume_phase(parts):
                return PHASE_AGAIN
            if safeguard.rescale(method, nit=parts.nit, nfev=parts.told):
                return None
            verdict = stopping.converged_by_ftol()
        if verdict.status == SUCCESS and QuasiNewton.met_a_wall(parts):
            return None  # next to a wall a tolerance met is no minimum: the budgets end the run
        return verdict

    @staticmethod
    def forget_pairs(parts: Any) -> None:
        """The phase's secant pairs go once a curvature model has learned (its ``hess_inv``
        is then the result's): once it has had as many pairs as it has unknowns (``d`` for
        the diagonal model, ``d (d + 1) / 2`` for the full one), or as many evaluations as
        the phase. The paper's iteration learns none."""
        phase, method = parts.quasi_newton, parts.method
        if phase is None or not phase.pairs or method.curvature == "off":
            return
        d = method.space.dim
        unknowns = d * (d + 1) // 2 if method.curvature == "full" else d
        if method.nfev >= min(2 * unknowns, phase.nfev):
            phase.pairs = []

    @staticmethod
    def resume_phase(parts: Any) -> bool:
        """At the method's first ``ftol`` stall after a phase that its step limit cut (still
        descending): where the method found no value below the run's lowest before it, the
        phase starts again from its point (``True``; the stall's finer scale does not
        follow). Either way the stall decides once."""
        phase = parts.quasi_newton
        if phase is None or phase.handover_lowest is None:
            return False
        before, phase.handover_lowest = phase.handover_lowest, None
        lowest = parts.returned.lowest()
        if lowest is None or lowest < before:
            return False
        phase.resume()
        forget_windows(parts)
        return True

    @staticmethod
    def hop(parts: Any) -> bool:
        """After the method's first iterations that followed a converged phase found a lower
        value (`StoppingRules.lower_found`): up to `HOP_DIMENSIONS`, where the lowest point
        lies farther than `HOP_DISTANCE` ``l`` from the phase's point (another basin, or a
        stretch of a valley its differences missed), the phase starts again there
        (``True``: basin hopping); up to `REFINE_DIMENSIONS`, where nearer, the method
        starts again from it at `REFINE_SCALE` ``l`` (it refines there instead of going on
        at the kick's scale)."""
        stopping = parts.stopping
        if not stopping.lower_found:  # (every iteration: one flag)
            return False
        stopping.lower_found = False
        phase, best = parts.quasi_newton, parts.returned.best
        if (
            phase is None
            or best is None
            or phase.dim
            > max(active().dimensions.HOP_DIMENSIONS, active().dimensions.REFINE_DIMENSIONS)
        ):
            return False
        x = phase.space.copy_in(parts.coordinates.to_run(best[1]))
        if norm(x - phase.x, phase.xp) <= active().quasi_newton.HOP_DISTANCE * phase.length:
            if phase.dim <= active().dimensions.REFINE_DIMENSIONS:
                method_from(
                    parts, x, active().quasi_newton.REFINE_SCALE * phase.length, noisy=False
                )
                forget_windows(parts)
            return False
        if phase.dim > active().dimensions.HOP_DIMENSIONS:
            return False
        phase.hop(x, best[0])
        forget_windows(parts)
        return True


class Final(Stage):
    """The final evaluations at the returned point (a noisy run's comparison of the final
    iterate, the centres' average and ``x0`` first; `zovh_opt._driver.returned_point`)."""

    name = "final"

    def size(self, parts: Any) -> int:
        affordable = parts.stopping.affordable(parts.told, parts.elapsed)
        return parts.returned.final_size(parts.told, affordable)

    def point(self, parts: Any, i: int) -> Any:
        to_user = parts.coordinates.to_user
        return parts.returned.final_point(i, lambda: to_user(parts.iterate()), to_user)

    def tell(self, parts: Any, values: list[float], bad: int) -> Outcome | None:
        done, note = parts.returned.take_final(values)
        parts.message += note
        return FINISHED if done else None


class Done(Stage):
    """The run has ended: nothing more is asked."""

    name = "done"


def _to_user(parts: Any, z: Any) -> Any:
    """The run's points ``z`` as the user's (new arrays already)."""
    coordinates = parts.coordinates
    return z if coordinates.identity else coordinates.to_user(z)


def restart(parts: Any, reason: str, *, diverged: bool) -> Stop | None:
    """A restart of the safeguard; its `Stop` where the restarts are spent."""
    return parts.safeguard.restart(parts.method, reason, diverged=diverged, nit=parts.nit,
                                   nfev=parts.told, stopping=parts.stopping)  # fmt: skip


def method_from(parts: Any, x: Any, scale: float | None, *, noisy: bool, space: Any = None) -> None:
    """The run's method built at ``x`` (a compute array of ``space``, the phase's by default,
    in the run's coordinates) with the length scale ``scale`` (``None``: its own) and the
    budget left: at a hand-over and a refinement."""
    space = parts.quasi_newton.space if space is None else space
    phase, region = parts.quasi_newton, parts.trust_region
    if (phase is not None and phase.steps) or (region is not None and region.steps):
        parts.stopping.values_varied()  # a step was taken: x0 is on no plateau
    parts.method, parts.method_options = build(
        parts.method_name, space.to_user(x), rng=parts.seeds, scale=scale,
        maxfev=parts.options["maxfev"] - parts.told, options=parts.requested, noisy=noisy,
        first_step=parts.coordinates.first_step,
    )  # fmt: skip


def forget_windows(parts: Any) -> None:
    """No ``ftol`` window, and no average of centres, from before a restart of the phase or
    of the method is compared with what follows."""
    parts.stopping.forget_windows()
    parts.returned.average.forget()
