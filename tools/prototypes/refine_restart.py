"""Prototype: after a converged phase, where the method's first iterations found a lower
value only at the phase's own resolution, the method starts again there at a finer scale.

Up to ``HOP_DIMENSIONS`` the method's first iterations after a converged quasi-Newton phase
(the kick, at ``0.3 l``) end the run where they found no value below the phase's, and start
the phase again where they found one farther than ``HOP_DISTANCE l`` away
(`zovh_opt._gradient_phase.hop`). The lowest value is often one of the phase's own
differences, ``1e-8 l`` from its point (COCO f12 at d = 2, instance 2: ``5.6e-9`` below it,
``3.9e-8 l`` away): the method then went on at the kick's scale, and on the bent cigar its
trials, rejected and accepted as coin flips at that scale, drifted out to ``f ~ 1e48`` for
the 1 100 evaluations left (the run ended ``1.4e-5`` above ``f*``). With the refinement the
method is built again at the lowest point with the length scale ``SCALE l`` (its first step
``0.3 SCALE l``), so that it refines where the phase stopped (``_gradient_phase._refine``).

Measured on 2026-11-27, COCO ``bbob`` d = 2, instances 1-5, ``1000 d``, ``zovh-new-starts``,
11 seeds, against the package before it (median 0.808, mean 0.803)::

    SCALE 1e-3   0.811, mean 0.805 (6 of 11 seeds ahead): f12 0.89 -> 0.95, f23 0.57 -> 0.70,
                 f16 0.40 -> 0.28
    SCALE 1e-2   0.807, mean 0.809 (7 of 11): f23 0.57 -> 0.79, f16 0.40 -> 0.31
    SCALE 3e-2   0.812, mean 0.813 (9 of 11): f23 0.57 -> 0.79, f12 0.89 -> 0.91, f16 0.38
    SCALE 1e-1   0.804, mean 0.803 (5 of 11): f23 0.57 -> 0.60

Adopted with ``SCALE`` 0.03 at d = 2 (`zovh_opt._gradient_phase.REFINE_SCALE`; this
prototype now sets the package's constant, and ``UP_TO`` above ``HOP_DIMENSIONS`` adds the
refinement where the package does not hop). Run through ``variant.py``; not a part of
zovh_opt.
"""

from zovh_opt import _gradient_phase, _optimizer
from zovh_opt._backend import norm

SCALE = 0.03
UP_TO = None  # the largest d it acts at (None: HOP_DIMENSIONS, as the package)
_hop = _gradient_phase.hop


def hop(run):
    """The package's hop; above ``HOP_DIMENSIONS`` up to ``UP_TO``, where the lower value
    lies within ``HOP_DISTANCE l``, the package's refinement too."""
    found = run._stopping.lower_found
    if _hop(run) or not found or UP_TO is None:
        return False
    phase, best = run._quasi_newton, run._returned.best
    if phase is None or best is None or not _gradient_phase.HOP_DIMENSIONS < phase.dim <= UP_TO:
        return False
    x = phase.space.copy_in(run._coordinates.to_run(best[1]))
    if norm(x - phase.x, phase.xp) <= _gradient_phase.HOP_DISTANCE * phase.length:
        _gradient_phase._refine(run, x)
    return False


def patch():
    _gradient_phase.REFINE_SCALE = SCALE
    _optimizer.hop = hop
