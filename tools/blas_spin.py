"""How the work just before a draw changes the direction draws' threads (the performance
page, *Memory at scale*): the median time of drawing two rows of ``d = 10^6`` side by side
(`zovh_opt._methods.direction_block.DirectionBlock.rows_from`, as the default draws a pair's
direction with the next pair's), back to back, or each right after ``x @ x`` (a BLAS call
OpenBLAS runs on its threads), after ``np.sum(x * x)`` (the same sum without BLAS), or
after a sleep of 50 ms. Run on an idle machine::

    python tools/blas_spin.py
"""

import time

import numpy as np

from zovh_opt._arrays.backend import ArraySpace, DirectionSource
from zovh_opt._methods.direction_block import DirectionBlock


def main(d: int = 1_000_000, repeats: int = 15) -> None:
    block = DirectionBlock(DirectionSource(0), 5, 4, ArraySpace(np.ones(d)), held=False)
    out, x = [np.empty(d), np.empty(d)], np.ones(d)
    before = {
        "back to back": lambda: None,
        "after x @ x": lambda: x @ x,
        "after np.sum(x * x)": lambda: np.sum(x * x),
        "after a 50 ms sleep": lambda: time.sleep(0.05),
    }
    block.rows_from(0, 2, out=out)  # warm: the threads started, the buffers touched
    for label, work in before.items():
        times = []
        for _ in range(repeats):
            work()
            start = time.perf_counter()
            block.rows_from(0, 2, out=out)
            times.append(time.perf_counter() - start)
        print(f"{label:>20}: {1e3 * float(np.median(times)):.1f} ms for two rows")


if __name__ == "__main__":
    main()
