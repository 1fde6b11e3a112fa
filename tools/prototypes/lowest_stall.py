"""Prototype: after a converged quasi-Newton phase, the run ends where the method's iterations
stop lowering the run's lowest value.

After a converged phase the method's first 10 iterations decide (`zovh_opt._stopping`): where
they evaluated a value below the phase's, the method goes on under the usual ``ftol`` test on
its f estimates' medians. Where the phase's own differences had evaluated values below its
point (common at its last digits), that is every run, and where the method then wanders (COCO
f6 at d = 5, instance 3: the phase at ``1.05e-7`` after 748 evaluations, the method's centre
100 away by 2 000, its estimates still decreasing) the run spends the budget left, 3 600
evaluations, without a lower value. Ending after the 10 iterations where nothing was below
the lowest value lost (f10 at d = 5: 1.00 -> 0.82 with new starts; f11, f13 at d = 2) where
the method refines slowly. Here the run ends (converged) once ``WINDOW`` of the method's
iterations in a row have not lowered the run's lowest value by more than ``ftol`` (relative)
or the precision of ``f``. Measured on 2026-11-27 (the default, restarted, COCO ``bbob``, d =
5, instances 1-5, ``1000 d``, seed 0): 0.606 against 0.637; f6 0.96 -> 1.00, f12 0.80 ->
0.91, f17 0.31 -> 0.44, but f10 1.00 -> 0.80, f11 1.00 -> 0.78, f13 and f14 1.00 -> 0.84, f3
0.31 -> 0.09: the method's refinement of the last digits often goes 50 iterations and more
without a lower value (f13 at d = 2, instance 1: ``5.2e-7`` where the package reaches
``1e-7`` after 1 300 evaluations). Not kept. Again on 2026-11-27 at d = 2 only
(``DIMENSIONS`` 2; ``zovh-new-starts``, instances 1-5, 11 seeds, against 0.795), for
Weierstrass's f16, where a first run (instance 4, COCO's start, ``rng=0``) spends 1 650 of
its 2 000 evaluations after its phase converged at 8.108 above ``f*`` without a lower value:
the phase's own differences had evaluated 8.6e-7 below its point, ``1e-8 l`` from it, so the
method went on, at a radius the slope test held at 5e-3, its estimates falling from 14 to 10:
``WINDOW`` 50 0.784, 100 0.791 (11 of 11 seeds behind both; f16 0.41 -> 0.46 and 0.44, f11
1.00 -> 0.85 and 0.92, f13 0.99 -> 0.89 and 0.92). With ``ABOVE`` (``WINDOW`` 20, d = 2),
a method refining near the lowest point stays and one wandering at a coarser scale ends:
from COCO's start (``rng=0``, ``maxfev = 2000``) f16's instances 2 and 4 end after 945 and
589 evaluations (1 996 and 1 995 before), f11's five runs as before; on the package with its
perturbed new starts (0.808), ``ABOVE`` 1e-2 0.808 (3 of 11 seeds ahead, 5 behind), 1e-3
0.802 (2 ahead, 8 behind): f16 0.40 -> 0.43, but f13 0.99 -> 0.96 / 0.93 and Katsuura's f23
0.57 -> 0.53 / 0.48. Not kept either. Run through ``variant.py``; not a part of zovh_opt.
"""

import math

from zovh_opt import _optimizer, _stopping

WINDOW = 50
DIMENSIONS = None  # the rule up to this d only (None: every d)
# also only where every f estimate of those iterations stayed above the lowest value by more
# than this fraction of the run's decrease, its first finite value less the lowest (None: no
# such condition); a hop's phase then forgets the count
ABOVE = None
_after = _stopping.StoppingRules.after_iteration
_forget = _stopping.StoppingRules.forget_windows
_close = _optimizer.Optimizer._close
MESSAGE = (
    "After the quasi-Newton phase converged, the method's last {window} iterations found no "
    "value below the lowest, {value!r}."
)


def after_iteration(self, f_estimate, lowest, step_length, length_scale, f_scale, values):
    stop = _after(self, f_estimate, lowest, step_length, length_scale, f_scale, values)
    if stop is not None or lowest is None or self.options["ftol"] is None:
        return stop
    if DIMENSIONS is not None and self.dim > DIMENSIONS:
        return None
    if self.converged_value is not None:  # a phase converged: its window decides first
        self._stall = None
    elif self.lower_found:
        self._stall = [lowest, 0, math.inf]
    elif getattr(self, "_stall", None) is not None:
        if not self._no_decrease(self._stall[0], lowest, f_scale):
            self._stall = [lowest, 0, math.inf]
        else:
            self._stall[1] += 1
            self._stall[2] = min(self._stall[2], f_estimate)
            if self._stall[1] >= WINDOW and _above(self, lowest):
                return _stopping.Stop(
                    _stopping.SUCCESS, MESSAGE.format(window=WINDOW, value=self._stall[0])
                )
    return None


def _above(self, lowest):
    """Whether the iterations' estimates stayed above ``lowest`` as ``ABOVE`` asks."""
    if ABOVE is None:
        return True
    first = getattr(self, "_first_value", math.nan)
    return self._stall[2] - lowest > ABOVE * (first - lowest)


def forget_windows(self):
    _forget(self)
    if ABOVE is not None:
        self._stall = None


def close(self, values, superseded):
    """`Optimizer._close`, noting the run's first finite value for ``ABOVE``."""
    stopping = self._stopping
    if not hasattr(stopping, "_first_value"):
        finite = [float(v) for v in values if v is not None and math.isfinite(float(v))]
        if finite:
            stopping._first_value = finite[0]
    return _close(self, values, superseded)


def patch():
    _stopping.StoppingRules.after_iteration = after_iteration
    _stopping.StoppingRules.forget_windows = forget_windows
    _optimizer.Optimizer._close = close
