"""Prototype: the quasi-Newton phase's line search lengthens a step that fell about linearly.

The phase's line search is Armijo's with backtracking only (`zovh_opt._gradient_phase`): a
first trial that decreases ``f`` by as much as its slope predicts (the ratio of the decrease
to ``-alpha g'p`` near 1) is accepted though the line's minimum may lie far beyond it, as
where its secant pairs describe another region (the stale pairs that `SKIPPED_PAIRS` drops
after three such steps). Moré and Thuente's search lengthens such a step until the curvature
condition holds. Here, where the first trial is accepted with a ratio of at least ``RATIO``,
the next trial is at twice its step (one evaluation), doubling while each trial is lower than
the last and its own ratio is at least ``RATIO``, at most ``MAX_EXPANSIONS`` times; the
lowest is the step. On a quadratic a ratio of ``0.75`` or more means a step of at most half
the line's minimum; ``1`` or more, ``f`` linear or concave along it. `SKIPPED_PAIRS` is kept.
A doubled trial lower than the last has a ratio above ``RATIO / 2``, so it passes Armijo's
condition, and the package's ``_judge`` accepts it as its own first trial.

Measured 2026-11-27 (COCO ``bbob``, ``1000 d``, the seeds of
``docs/results/coco-bbob-phase-pairs/``; records ``docs/results/coco-bbob-line-expansion/``;
theory page, *A step that fell at least linearly is lengthened*): with ``RATIO`` 1 level at
d = 2, 5, 10 and 40, ahead at d = 20, faster at ``10 d`` and ``100 d`` almost everywhere:
adopted as `zovh_opt._gradient_phase.MAX_EXPANSIONS` (the package's runs repeat these); 0.75
lost Katsuura's f23 at d = 5. ``patch()`` turns the package's own expansion off, so the
prototype measures ``RATIO`` on the code before it. Run through ``variant.py``; not a part
of zovh_opt.
"""

import math

from zovh_opt import _gradient_phase as gp

RATIO = 1.0
MAX_EXPANSIONS = 10
Phase = gp.QuasiNewtonPhase
_judge_package = Phase._judge


def _ratio(phase, value):
    return (phase.fx - value) / (-phase.alpha * phase.slope)


def _judge(self, value):
    expanding = getattr(self, "proto_expanding", None)
    if expanding is None:
        first = self.trials == 0 and math.isfinite(value)
        if first and value <= self.fx + gp.ARMIJO * self.alpha * self.slope:
            if _ratio(self, value) >= RATIO and MAX_EXPANSIONS > 0:
                self.trials += 1
                self.proto_expanding, self.alpha = (self.alpha, value, 0), 2.0 * self.alpha
                return
        _judge_package(self, value)
        return
    best_alpha, best_value, count = expanding
    self.proto_expanding, self.trials = None, 0
    if math.isfinite(value) and value < best_value:
        if _ratio(self, value) >= RATIO and count + 1 < MAX_EXPANSIONS:
            self.trials = 1
            self.proto_expanding, self.alpha = (self.alpha, value, count + 1), 2.0 * self.alpha
            return
        _judge_package(self, value)
        return
    self.alpha = best_alpha
    _judge_package(self, best_value)


def patch():
    gp.MAX_EXPANSIONS = 0
    Phase._judge = _judge
