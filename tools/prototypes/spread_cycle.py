"""Prototype: new starts without bounds cycle through ``CYCLE`` spreads around ``x0``.

`zovh_opt._new_starts` draws the ``k``-th new start without finite bounds at
``x0 + 2**(k-1) l / sqrt(d) * N(0, I)``: the spread doubles without end, so at d = 2, where
a budget of ``1000 d`` pays 5-15 local runs, the later starts lie tens to hundreds of ``l``
away (COCO f17 instance 2, ``x0 = 0``: starts at (12, 8) and (14, -23), the last ending by
the budget on the way back). Here the ``k``-th start takes the spread of start
``(k - 1) % CYCLE + 1``: 1, 2, ..., ``2**(CYCLE-1)`` times ``l / sqrt(d)``, then again.
Measured on 2026-11-27 (COCO ``bbob``, d = 2, instances 1-5, ``1000 d``, ``new_starts=100``,
seed 0): ``CYCLE = 3`` 0.799, ``CYCLE = 2`` 0.804, against 0.803: the far starts are not what
keeps d = 2 behind IPOP-CMA-ES. Not kept. Run through ``variant.py``; not a part of zovh_opt.
"""

from zovh_opt import _new_starts as ns

CYCLE = 3
_drawn = ns._start


def cycled_start(x0, bounds, k, draws):
    """The package's ``k``-th start with ``k`` taken modulo `CYCLE`."""
    return _drawn(x0, bounds, (k - 1) % CYCLE + 1, draws)


def patch():
    ns._start = cycled_start
