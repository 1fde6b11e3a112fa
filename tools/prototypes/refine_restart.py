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

Then, ``SCALE`` 0.03, where the package does not hop (``UP_TO``; 5 seeds, against the package
in the same week's runs): d = 3 ``zovh-new-starts`` 0.686 against 0.680 on instances 1-5 (4
of 5 seeds ahead: f23 0.47 -> 0.62, f12 0.65 -> 0.71, f21 0.74 -> 0.68), 0.689 against 0.684
on 6-10 (4 ahead, none behind), the default ``zovh`` 0.664 against 0.655 (4 of 5); d = 5
``zovh-new-starts`` 0.672 against 0.673 (mean 0.674 against 0.672, 3 ahead, 2 behind):
level. ``RECHECK`` (the refined method's first iterations judged as the kick's, the run
ending where they find nothing lower) at d = 2: 0.793 against 0.812, 0 of 11 seeds ahead
(f11 1.00 -> 0.90, f13 0.99 -> 0.91, f23 0.79 -> 0.48: the refinement's slow progress is what
solves them), as ``converged_lowest.py`` found.

Adopted with ``SCALE`` 0.03 up to d = 3 (`zovh_opt._gradient_phase.REFINE_SCALE`,
``REFINE_DIMENSIONS``; this prototype sets the package's constants). Run through
``variant.py``; not a part of zovh_opt.
"""

from zovh_opt import _gradient_phase

SCALE = 0.03
UP_TO = None  # the largest d it acts at (None: the package's REFINE_DIMENSIONS)
# the refined method's first iterations decide as the kick's do: where they find no value below
# the lowest at the refinement the run ends (once a run: a lower value then goes on, no new
# refinement)
RECHECK = False
_refine = _gradient_phase._refine


def refine(run, x):
    """The package's refinement; with ``RECHECK`` once a run, its first iterations judged."""
    phase = run._quasi_newton
    if RECHECK and getattr(phase, "refined", False):
        return
    _refine(run, x)
    if RECHECK:
        phase.refined = True
        run._stopping.converged_value = run._returned.lowest()


def patch():
    _gradient_phase.REFINE_SCALE = SCALE
    if UP_TO is not None:
        _gradient_phase.REFINE_DIMENSIONS = UP_TO
    _gradient_phase._refine = refine
