"""The method's length scale after the quasi-Newton phase (a prototype of
`zovh_opt._gradient_phase.tell_phase`).

The method after a deterministic phase takes the norm of the phase's point as its length
scale ``l`` (its first step ``0.1 l``). Where the phase ends near the origin without having
resolved a descent (a deterministic but rugged ``f`` from ``x0 = 0``: its differences read
the ruggedness as slope, its line search accepts steps of 1e-8), the method's first steps are
1e-9 and the run crawls, or ends after the method's ten iterations at ``x0`` as converged
(``sum((x - arange(6))**2)`` plus a hashed ruggedness of amplitude 0.5 or 5: 6 of 6 runs
returned a point 55 above the minimum, status 0). ``MODE``:

* ``"floor"``: the method's scale is ``max(l_run, |x|)``, never below the run's;
* ``"stuck"``: the run's scale where the phase ended within ``STUCK`` difference steps
  (``sqrt(eps) l_run``) of its start, else ``|x|`` (as the package).

Neither was adopted: the package reads the phase's line search instead
(`zovh_opt._gradient_phase.QuasiNewtonPhase.stalled`: no accepted step since ``x0`` longer
than ``h / ARMIJO``). Run through ``variant.py``; not a part of zovh_opt.
"""

import math

from zovh_opt import _gradient_phase, _optimizer
from zovh_opt._backend import norm

MODE = "floor"
STUCK = 64
_build, _tell = _gradient_phase.build, _gradient_phase.tell_phase
_phase = []  # the phase whose hand-over builds the method


def _scaled_build(method, x, *, scale, **kwargs):
    phase = _phase[0] if _phase else None
    if scale is None and phase is not None and phase.start is not None:
        run_length, point = phase.length, float(norm(phase.x, phase.xp))
        if MODE == "floor":
            scale = max(run_length, point)
        elif (
            float(norm(phase.x - phase.start, phase.xp))
            <= STUCK * math.sqrt(phase.eps) * run_length
        ):
            scale = run_length
    return _build(method, x, scale=scale, **kwargs)


def tell_phase(run, values):
    _phase[:] = [run._quasi_newton]
    try:
        _tell(run, values)
    finally:
        _phase.clear()


def patch():
    _gradient_phase.build = _scaled_build
    _optimizer.tell_phase = tell_phase
