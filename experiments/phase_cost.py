"""The quasi-Newton phase's own cost (`zovh_opt._driver.quasi_newton`), quoted in the docs.

    python experiments/phase_cost.py   # d = 1e3 ... 1e6, float64, NumPy, one thread

Per evaluation: the time of the phase's ``ask`` and ``tell`` through `zovh_opt.Optimizer`
(the points of a gradient ask, 64 a time, and the forward differences), the objective's own
time excluded, over the first 10 asks. Per step: the L-BFGS two-loop recursion with its 10
pairs (``_direction``). Memory: the phase's vectors after 10 steps (``tracemalloc``), in
floats per coordinate, and an ask's points.
"""

import time
import tracemalloc

import numpy as np

import zovh_opt
from zovh_opt._driver.quasi_newton import QuasiNewtonPhase
from zovh_opt.tuning import DEFAULT

print("| d | own us / evaluation | two-loop step (ms) | phase's vectors (d floats) |")
print("|---|---|---|---|")
for d in (1_000, 10_000, 100_000, 1_000_000):
    w = np.linspace(1.0, 2.0, d)
    opt = zovh_opt.Optimizer(np.ones(d), rng=0, options={"maxfev": 10 * d, "noisy": False})
    own, evaluations = 0.0, 0
    for _ in range(10):
        t = time.perf_counter()
        points = opt.ask()
        own += time.perf_counter() - t
        values = (points * points) @ w  # the objective, not timed
        t = time.perf_counter()
        opt.tell(values.tolist())
        own += time.perf_counter() - t
        evaluations += len(values)
    rng = np.random.default_rng(0)
    tracemalloc.start()
    phase = QuasiNewtonPhase(np.ones(d), float(np.sqrt(d)), 1.0, recheck=True)
    phase.g = rng.standard_normal(d)
    for _ in range(DEFAULT.quasi_newton.MEMORY):
        s, y = rng.standard_normal(d), rng.standard_normal(d)
        phase.pairs.append((s, y + s, 1.0 / float(s @ (y + s))))
    phase.previous = (rng.standard_normal(d), rng.standard_normal(d))
    phase.jac = phase.g
    t = time.perf_counter()
    phase._direction()
    step = time.perf_counter() - t
    held = tracemalloc.get_traced_memory()[0] / 8 / d
    tracemalloc.stop()
    print(f"| {d:.0e} | {1e6 * own / evaluations:.1f} | {1e3 * step:.2f} | {held:.0f} |")
