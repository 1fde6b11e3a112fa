"""How far the transport after an undone trial (`zovh_opt._curvature.carried_transport`: the
model of an update before, with this update's scale) is from the exact one: for each kept
iteration whose products were adopted from the record before, |lagged - exact| / |exact| of the
moved differences, exact formed again from the rows. Rosenbrock from 0, d = 3000, 40 iterations of
the default (the theory page, *memory*, and the CHANGELOG quote the range)::

    python tools/lagged_transport.py
"""

import numpy as np

import zovh_opt
from zovh_opt.problems import rosenbrock


def main(d: int = 3000, iterations: int = 40) -> None:
    opt = zovh_opt.Optimizer(np.zeros(d), rng=4, options={"maxiter": 60})
    errors = []
    for _ in range(iterations):
        points = opt.ask()
        step = opt._parts.method
        record = step._carried
        if record is not None and step._kept:
            ahead = [record.deltas(k.block, step._x) for k in step._kept]
            step._carried = None
            exact = step._moved_differences()
            step._carried = record
            for a, k, g in zip(ahead, step._kept, exact, strict=True):
                adopted = a is not None and record.products[k.block][1] is None
                moved = g - k.deltas
                if adopted and k is not step._kept[0] and np.linalg.norm(moved) > 0:
                    errors.append(np.linalg.norm(a - moved) / np.linalg.norm(moved))
        opt.tell([float(rosenbrock(p)) for p in points])
    e = np.array(errors)
    print(
        f"{e.size} adopted transports: relative error min {e.min():.3f}, "
        f"median {np.median(e):.3f}, max {e.max():.3f}"
    )


if __name__ == "__main__":
    main()
