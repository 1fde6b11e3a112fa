"""Prototype: widened new starts widen by less per start, their pairs still doubling.

The ``j``-th widened new start (`zovh_opt._new_starts`) queries ``min(64, 4**j)`` times as
far from its centre, relative to its steps, as a first run, with ``min(8, 2**j)`` times its
pairs. In CMA-ES the samples' spread over the mean's step grows only about as the square root
of the selected points' effective number, some ``lambda**(1/4)`` (1.4, 2, 2.5 for
populations 6, 12, 24): IPOP-CMA-ES's doubled populations average over more points at nearly
the same relative spread. A widened start at 4 times crawls along Rosenbrock's valley (COCO
f8, d = 5, instance 5: ``f - f* = 0.15`` after 4 490 evaluations with 8 pairs, 0.36 with 4;
2 times: 0.022; not widened, 4 pairs: ``0`` after 2 666). Here the ``j``-th widened start
queries ``min(64, WIDENING**j)`` times as far and takes ``min(8, 2**j)`` times the first
run's pairs. Measured on 2026-11-27 (COCO ``bbob``, d = 5, instances 1-5, ``1000 d``, seeds
0-4, median / mean): ``WIDENING = 2`` 0.652 / 0.654, ``sqrt(2)`` 0.626 / 0.629, against the
package's 0.655 / 0.654. With 2, Weierstrass's f16 (0.18 -> 0.36) and Schaffer's f18 (0.40 ->
0.65) gain and the step ellipsoid f7 (0.97 -> 0.69), Rastrigin's f3 and f15 and f22 lose: the
plateaus of f7 need the coarser smoothing. Not kept. Run through ``variant.py``; not a part
of zovh_opt.
"""

import math

from zovh_opt import _new_starts as ns

WIDENING = 2.0


def widened_pairs(pairs, widening):
    """``round(pairs * 2**j)`` for the ``j``-th widened start, at most 8 times."""
    j = round(math.log(widening) / math.log(WIDENING))
    return round(pairs * min(8, 2**j))


def patch():
    ns.WIDENING = WIDENING
    ns.widened_pairs = widened_pairs
