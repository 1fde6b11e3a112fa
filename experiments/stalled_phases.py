"""When the quasi-Newton phase is stalled (`QuasiNewtonPhase.stalled`), quoted in the theory
page (*The quasi-Newton phase*).

    python experiments/stalled_phases.py rugged        # rugged deterministic f and noisy=False
    python experiments/stalled_phases.py coco 2 5 10   # COCO bbob's phases at these d

``rugged``: ``sum((x - arange(6))**2)`` plus a deterministic ruggedness in ``[-a/2, a/2]``
from the bytes of ``x`` (``zlib.crc32``, as the tests', or ``blake2b``), ``a`` = 5, 0.5,
0.01, from ``x0 = 0``, seeds 0-2; then ``+ 5 N(0, 1)`` with ``noisy=False``, seeds 0-5: for
each default run, whether its phase was stalled, the first step's decrease over its slope's
prediction, the longest step over ``h``, and the quadratic part at ``res.x`` (``f(0)`` is
55 above the minimum).
``coco``: the phases of COCO ``bbob`` functions 1-24, instances 1-5, from COCO's start and
from 4 starts drawn as the benchmark's restarts draw them (``U[-4, 4]^d``), ``1000 d``
evaluations: the phases whose steps since ``x0`` were at most ``h / ARMIJO`` long, with
their first step's ratio and whether they are stalled.
"""

import hashlib
import sys
import warnings
import zlib

import numpy as np

import zovh_opt
from zovh_opt.tuning import DEFAULT


def phase_of(f, x0, seed, options=None):
    """The run's phase after it handed over, and the run's result."""
    opt = zovh_opt.Optimizer(x0, rng=seed, options=options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        while opt._parts.quasi_newton is None or not opt._parts.quasi_newton.done:
            opt.tell([f(p) for p in opt.ask()])
        phase = opt._parts.quasi_newton
        return phase, opt.run(f)


def rugged_f(amplitude, kind):
    target = np.arange(6.0)

    def f(x):
        data = np.ascontiguousarray(x, dtype=np.float64).tobytes()
        if kind == "crc32":
            u = zlib.crc32(data) / 2**32
        else:
            u = int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little") / 2**64
        return float(np.sum((x - target) ** 2)) + amplitude * (u - 0.5)

    return f


def show(name, phase, res):
    target = np.arange(6.0)
    quadratic = float(np.sum((np.asarray(res.x) - target) ** 2))
    print(
        f"{name:28} stalled {phase.stalled!s:5} first ratio {phase.first_ratio:8.2g} "
        f"longest / h {phase.longest / phase.difference_step:9.3g} "
        f"quadratic part at x {quadratic:.3g}"
    )


def rugged():
    for kind in ("crc32", "blake2b"):
        for amplitude in (5.0, 0.5, 0.01):
            for seed in range(3):
                phase, res = phase_of(rugged_f(amplitude, kind), np.zeros(6), seed)
                show(f"{kind} a={amplitude} seed {seed}", phase, res)
    target = np.arange(6.0)
    for seed in range(6):
        noise = np.random.default_rng(100 + seed)

        def f(x, noise=noise):
            return float(np.sum((x - target) ** 2) + 5 * noise.standard_normal())

        phase, res = phase_of(f, np.zeros(6), seed, {"noisy": False})
        show(f"5 N(0, 1), noisy=False, seed {seed}", phase, res)


def coco(dims):
    import cocoex

    for dim in dims:
        short = stalled = phases = 0
        suite = cocoex.Suite("bbob", "instances: 1-5", f"dimensions: {dim}")
        for index, problem in enumerate(suite):
            starts = np.random.default_rng(index)
            x0s = [np.asarray(problem.initial_solution, dtype=float)]
            x0s += [starts.uniform(-4, 4, dim) for _ in range(4)]
            for k, x0 in enumerate(x0s):
                opt = zovh_opt.Optimizer(x0, rng=k, options={"maxfev": 1000 * dim})
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    while not opt.done and (
                        opt._parts.quasi_newton is None or not opt._parts.quasi_newton.done
                    ):
                        opt.tell([problem(np.asarray(p)) for p in opt.ask()])
                phase = opt._parts.quasi_newton
                if phase is None or not phase.done:
                    continue
                phases += 1
                if (
                    phase.converged
                    and phase.steps
                    and (phase.longest <= phase.difference_step / DEFAULT.quasi_newton.ARMIJO)
                ):
                    short += 1
                    stalled += phase.stalled
                    print(
                        f"  {problem.id} start {k}: {phase.steps} steps, longest / h "
                        f"{phase.longest / phase.difference_step:.3g}, first ratio "
                        f"{phase.first_ratio:.3g}, stalled {phase.stalled}"
                    )
        print(f"d = {dim}: {phases} phases, {short} with steps <= h / ARMIJO, {stalled} stalled")


if __name__ == "__main__":
    if sys.argv[1] == "rugged":
        rugged()
    else:
        coco([int(d) for d in sys.argv[2:]])
