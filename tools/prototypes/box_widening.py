"""Prototype: a widened new start's queries capped at a fraction of the box's width.

In a box the run's coordinates ``z`` map onto it periodically (`zovh_opt._bounds`): ``f o
phi`` repeats with a period of about twice the width, and a step of any length lands
somewhere in the box. A widened new start (`new_starts`) compares ``f`` smoothed at ``W``
times its steps; once its queries reach across the box those comparisons are noise, the step
rule's learning rate drifts up on them (as it is built to), and nothing in a periodic box
pushes back: the running step length grew to 2 to 5e8 in a box 10 wide, and the run
wandered. Switch
``KAPPA`` (None: the package): the per-coordinate query distance ``mu = current_spread * s /
sqrt(d)`` is kept within ``KAPPA`` times the narrowest two-sided width in ``z``, at the start
(the widening cut) and at every iteration after (``MODE "always"``; ``"start"``: the start
only). Not part of zovh_opt.

One widened start (`_new_starts.new_start`, ``quasi_newton=False``, ``maxfev = 1000 d``) on
the sphere ``|x - 1|^2`` in ``[-5, 5]^d`` from uniform points, six seeds, runs that reached
``f < 1e-20``:

| d, W | package | KAPPA 0.25, start only | KAPPA 0.25 | KAPPA 0.1 |
|---|---|---|---|---|
| 2, 4 | 3 of 6 | 3 | 6 | 6 |
| 2, 16 | 0 (f 1e-2 to 9e-2) | 1 | 2 | 6 |
| 2, 64 | 0 (f 4e-3 to 5e-2) | 0 | 0 | 6 |
| 5, 4 | 4 | 4 | 6 | 6 |
| 5, 16 | 0 (f 0.8 to 3) | 0 | 0 | 6 |
| 5, 64 | 0 (f 1 to 2) | 0 | 0 | 6 |

Without bounds every one of these runs converges (W = 64 at d = 2 by its budget to 1e-8 or
below). COCO ``bbob`` with its box given (``coco --bounds``), d = 5, instances 1-5, ``1000 d``,
``zovh-new-starts``, 5 seeds, median [mean]:

| KAPPA | median | mean | f3 | f7 | f15 | f16 | f17 | f18 | f22 |
|---|---|---|---|---|---|---|---|---|---|
| package | 0.568 | 0.571 | 0.08 | 0.77 | 0.12 | 0.14 | 0.46 | 0.29 | 0.32 |
| 0.05 | 0.643 | 0.645 | 0.12 | 0.77 | 0.20 | 0.41 | 0.65 | 0.45 | 0.82 |
| **0.1** | **0.648** | 0.650 | 0.21 | 0.93 | 0.27 | 0.19 | 0.87 | 0.68 | 0.63 |
| 0.2 | 0.631 | 0.629 | 0.15 | 0.85 | 0.18 | 0.15 | 0.80 | 0.70 | 0.56 |
| no bounds (widening-decay d5) | 0.675 | 0.671 | 0.31 | 1.00 | 0.46 | 0.16 | 0.87 | 0.76 | 0.54 |

Not COCO's: classic test functions in their boxes (`main`: ``python box_widening.py KAPPA|none
D SEEDS``), ``1000 d``, ``new_starts=100``, uniform starts, 5 seeds, median ``f - f*`` and
seeds that reached ``1e-6`` (package / KAPPA 0.1):

| function, box | d = 5 | d = 10 |
|---|---|---|
| Rastrigin, 5.12 | 0.99, 1 of 5 / 1.99, 0 | 2.98, 0 / 2.98, 0 |
| Ackley, 32.768 | 3e-10, 4 / 2e-10, 5 | 6e-10, 4 / 2e-10, 5 |
| Griewank, 600 | 1.5e-3, 1 / 2.7e-2, 1 | 0, 5 / 0, 5 |
| Schwefel, 500 | 590, 0 / 476, 0 | 1150, 0 / 1150, 0 |
| Levy, 10 | 2e-29, 5 / 3e-31, 5 | 1e-30, 3 / 3e-32, 5 |
| Styblinski-Tang, 5 | 14.1, 0 / 15.1, 0 | 28.3, 0 / 28.3, 0 |

(Styblinski-Tang's global basin needs every coordinate on its negative side; smoothed at
``sigma > 1.63`` per coordinate its sum is convex, but ``0.1`` of the width is 1.)
"""

import math

import numpy as np

from zovh_opt._backend import to_numpy

KAPPA = None
MODE = "always"


def box_width(optimizer):
    """The narrowest two-sided width of the box in the run's coordinates, or None."""
    c = optimizer._coordinates
    if c.box is None:
        return None
    lower, upper = c.box.host
    widths = (upper - lower).astype(float)
    if c.x_scale is not None:
        widths = widths / to_numpy(c.x_scale)
    widths = widths / c.unit
    widths = widths[np.isfinite(widths) & (widths > 0)]
    return float(widths.min()) if widths.size else None


def patch():
    if KAPPA is None:
        return
    import zovh_opt._new_starts as ns
    from zovh_opt import _step_size

    original = ns.new_start

    def new_start(*args, **kwargs):
        optimizer = original(*args, **kwargs)
        if optimizer is None:
            return None
        control = optimizer._step.control
        width = box_width(optimizer)
        if width is None or control is None or not control.widened:
            return optimizer
        d = control.dim
        cap = KAPPA * width * math.sqrt(d)  # the cap on current_spread * step_length
        allowed = max(_step_size.SPREAD, cap / control.step_length) / control.spread
        if allowed < 1:
            control.spread *= allowed
            control.base_smoothing *= allowed
            optimizer._step._set_smoothing(control.smoothing)
        if MODE == "always":
            control.query_cap = cap
        return optimizer

    ns.new_start = new_start
    base = _step_size.StepSizeControl.current_spread

    def current_spread(self):
        value = base(self)
        cap = getattr(self, "query_cap", None)
        if cap is None:
            return value
        return max(_step_size.SPREAD, min(value, cap / self.step_length))

    _step_size.StepSizeControl.current_spread = current_spread


def _functions():
    """Classic box-constrained test functions, not COCO's: name, f (f* = 0), half-width."""

    def rastrigin(x):
        return 10 * len(x) + float(np.sum(x * x - 10 * np.cos(2 * np.pi * x)))

    def ackley(x):
        d = len(x)
        a = -20 * np.exp(-0.2 * np.sqrt(np.sum(x * x) / d))
        return float(a - np.exp(np.sum(np.cos(2 * np.pi * x)) / d) + 20 + math.e)

    def griewank(x):
        i = np.arange(1, len(x) + 1)
        return float(np.sum(x * x) / 4000 - np.prod(np.cos(x / np.sqrt(i))) + 1)

    def schwefel(x):
        return float(418.9828872724338 * len(x) - np.sum(x * np.sin(np.sqrt(np.abs(x)))))

    def levy(x):
        w = 1 + (x - 1) / 4
        head = np.sin(np.pi * w[0]) ** 2
        body = np.sum((w[:-1] - 1) ** 2 * (1 + 10 * np.sin(np.pi * w[:-1] + 1) ** 2))
        tail = (w[-1] - 1) ** 2 * (1 + np.sin(2 * np.pi * w[-1]) ** 2)
        return float(head + body + tail)

    def styblinski_tang(x):
        return float(0.5 * np.sum(x**4 - 16 * x * x + 5 * x) + 39.16616570377142 * len(x))

    return [
        ("Rastrigin", rastrigin, 5.12),
        ("Ackley", ackley, 32.768),
        ("Griewank", griewank, 600.0),
        ("Schwefel", schwefel, 500.0),
        ("Levy", levy, 10.0),
        ("Styblinski-Tang", styblinski_tang, 5.0),
    ]


def main(argv):
    """``python box_widening.py KAPPA|none D [SEEDS]``: each function at ``1000 d`` with
    ``new_starts=100`` in its box, from a uniform start; per function the median over seeds of
    ``f - f*`` and how many seeds reached ``1e-6``."""
    import warnings

    global KAPPA
    KAPPA = None if argv[0] == "none" else float(argv[0])
    patch()
    import zovh_opt

    d, seeds = int(argv[1]), int(argv[2]) if len(argv) > 2 else 5
    for name, f, half in _functions():
        ends = []
        for seed in range(seeds):
            x0 = np.random.default_rng(seed).uniform(-half, half, d)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = zovh_opt.minimize(
                    f,
                    x0,
                    bounds=[(-half, half)] * d,
                    rng=seed,
                    options={"maxfev": 1000 * d, "new_starts": 100},
                )
            ends.append(max(res.fun, 0.0))
        print(
            f"{argv[0]} d={d} {name:16s} median {np.median(ends):.2e} "
            f"solved {sum(e <= 1e-6 for e in ends)}/{seeds} " + " ".join(f"{e:.1e}" for e in ends),
            flush=True,
        )


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
