"""Prototype, outside the package: the diagonal model's kept pairs transported by the
expectation of their projection (issue #32's note; the theory page, *The curvature model*).
Not a part of zovh_opt; kept so that the next step starts from numbers.

The library moves a kept iteration's pairs to ``x`` with ``sum_m u_m u_m^T v_b``,
``v_b = s_b h (x - x_b)``, which needs its rows (held, or drawn again twice an iteration).
Here that sum is replaced by its expectation ``P v_b``, and a kept iteration holds only
``g_b = sum_m delta_m u_m``: no kept rows, ``3 P`` rows drawn per iteration instead of ``9 P``
without held directions. Run COCO with it:

    python tools/prototypes/expected_transport.py expect coco --dim 320 --solvers zovh \\
        --no-cocopp --jobs 1 --out /tmp/coco320e
    python tools/prototypes/expected_transport.py library coco --dim 320 --solvers zovh \\
        --no-cocopp --jobs 1 --out /tmp/coco320

(``--jobs 1``: the patch lives in this process.) Measured, instances 1-3, 100 d, fraction of
triples: d = 80, 0.177 (library 0.184); d = 320, 0.202 (library 0.213; at 10 d 0.062 against
0.039). Not adopted.
"""

import sys

from zovh_opt._methods import zovh_preconditioned as zp

_keep = zp.PreconditionedZoVH._keep
_step_and_learn = zp.PreconditionedZoVH._step_and_learn


def keep(self, deltas):
    kept = _keep(self, deltas)
    a = self.space.from_host(deltas)
    g = self.space.empty((self.space.dim,))
    for columns, U in self._rows[1].spans():
        g[columns] = a @ U
    kept.gradient = g  # sum_m delta_m u_m, unwhitened
    kept.rows = None
    return kept


def step_and_learn(self, deltas, c, weights):
    P, d = self.n_directions, self.space.dim
    kept, self._kept = self._kept, []
    try:  # this iteration's pairs and the model's update, as the library's
        out = _step_and_learn(self, deltas, c, weights)
    finally:
        self._kept = kept
    if out is None or deltas is None:
        return out
    step, _ = out
    M = P * (1 + len(kept))
    scale = c * (d + M + 1)
    step *= c * (d + P + 1) / scale  # the library's scale for M = N P pairs
    s = self.model.whitening
    h = self.model.curvature / (s * s) if s is not None else self.model.curvature
    for k in kept:
        v = (self._x - k.centre) * h
        if k.whitening is not None:
            v *= k.whitening
        part = k.gradient + P * v
        if k.whitening is not None:
            part *= k.whitening
        step += part / scale
    return step, M


if __name__ == "__main__":
    if sys.argv[1] == "expect":
        zp.PreconditionedZoVH._keep = keep
        zp.PreconditionedZoVH._step_and_learn = step_and_learn
        zp.PreconditionedZoVH._moved_differences = lambda self: []
    from zovh_opt.benchmarks.__main__ import main

    sys.exit(main(sys.argv[2:]))
