"""Prototype: at small d, some new starts begin near the best answer (monotonic basin hopping).

Up to ``d = UP_TO`` the package's new starts were local runs from new points
(`zovh_opt._new_starts`). On Schaffer's f17 and f18 at d = 2 those runs end on the rings of
the funnel at ``1e-3`` to ``1e-1`` above ``f*``, at about the rings' spacing from the minimum,
and each new point descends the funnel again from its rim. Here new starts alternate, by
BIPOP's budget rule (the perturbed ones where they have spent at most ``SHARE`` times the
local ones), between the package's local runs and *perturbed* ones: a local run from
``x_best + r N(0, I) / sqrt(d)``, ``x_best`` the best answer so far and ``r`` a radius that
follows the answers: at first ``FRACTION`` times the distance from ``x_best`` to the nearest
other answer, after a perturbed run that found a lower answer ``GROW`` times the distance it
moved, after one that did not ``SHRINK`` times the last (monotonic basin hopping, Leary 2000,
with the hop's length learned from the answers' spacing). Perturbed starts begin after
``AFTER`` runs.

Measured on 2026-11-27 (COCO ``bbob``, ``zovh-new-starts``, ``1000 d``, medians over seeds,
the package before it 0.795 on instances 1-5 and 0.789 on 6-10 at d = 2, 11 seeds, and
0.680 at d = 3, 5 seeds)::

    SHARE 1, FRACTION 0.5                 d = 2: 0.800 (7 of 11 seeds ahead)
    SHARE 1, FRACTION 1                   d = 2: 0.797 (5 of 11)
    SHARE 0.5, FRACTION 0.5               d = 2: 0.808 (9 of 11); 6-10: 0.798 (7 of 11);
                                          d = 3: 0.665 (2 of 5)
    SHARE 0.25, FRACTION 0.5              d = 2: 0.807 (8 of 11)
    SHARE 0.5, FRACTION 0.25              d = 2: 0.806 (9 of 11)

Then, against the adopted package (0.808, mean 0.803), not kept: ``GIVE_UP`` 3 or 2 with
``RESET`` (perturbed starts pause after that many without a lower answer, until a local run
finds one): 0.805 / 0.805, means 0.804 / 0.805; ``SHIFT`` (a perturbed run minimizes
``f(x_best + y)``, so that its first step and differences scale with the perturbation, not
with ``|x|``): 0.804, ``FRACTION`` 1 0.807: Schaffer's f17 0.44 -> 0.58 (its rings are then
hopped), but the separable Rastrigin f3 0.84 -> 0.73 / 0.70 (its basins, a unit apart, are
not left by a run at that scale); ``SHIFT`` only where ``r < SHIFT_BELOW |x_best|`` (0.05,
0.02): 0.794 / 0.799 (f17 0.49 / 0.47, Gallagher's f21 0.90 -> 0.82, f22 0.99 -> 0.94; a
shifted start draws one more seed, so the runs after it differ too); every second perturbed
start shifted (``SHIFT_EVERY`` 2): 0.804, with ``FRACTION`` 1 0.799 (f17 0.50, f3 0.80 /
0.74).

Measured on 2026-11-27 after the adoption (records ``d2-adapt*``, ``d2-scale-*``,
``d2-min-move-*``, ``d2-tie*``, ``d2-widened-*``; against 0.808, mean 0.803), not kept:
``ADAPT`` (plain or shifted by each kind's record of lower answers) 0.797 / with ``FRACTION``
1 0.797 (f3 0.84 -> 0.78 / 0.73: a shifted run near the best lowers its last digits and
counts as a success; with ``LOWER_BY`` 1e-9 f3 still 0.71 on single calls, rng 0-5); ``SCALE``
1 / 10 (not shifted, the run's length scale ``r`` / ``10 r``) 0.796 / 0.808, f17 unchanged:
the shift's gain on f17 is not its first step; ``MIN_MOVE`` 0.1 with ``REFINE`` "keep" /
"fail" 0.808 / 0.808 (means 0.803 / 0.802: such refinements are rare); ``TIE`` 1e-10
(shifted only after two answers with equal values ``1e-6 (1 + |x|)`` apart: Schaffer's f17
and f18 end on rings of equal ``f``, at ``(k pi / 50)^5`` above ``f*``, and a plain run from
near one returns to the same ring; Rastrigin's do not tie) 0.802, with ``FRACTION`` 1 0.806
(mean 0.809), over 21 seeds 0.802 against 0.804 (10 seeds ahead, 10 behind): f17 0.47
only, the step ellipsoid's plateaus tie too (f7 0.97 -> 0.93); ``WIDENED`` 0.5 / 0.25 (BIPOP's
widened runs as a third regime) 0.740 / 0.740: f17 0.44 -> 0.61, but a widened run takes the
budget left (1 300 to 1 700 evaluations) and f3 0.84 -> 0.50, f15, f19, f20, f22 lose.
``FIRST_CAP`` 0.5 (the first run's ``maxfev`` half the budget) was traced only: on
Weierstrass's f16 the second run crawls as the first did (999 of 1 000 evaluations).

Adopted at d = 2 with ``SHARE`` 0.5 and ``FRACTION`` 0.5 (`zovh_opt._new_starts.BasinHops`;
``{"SHARE": 0.5, "UP_TO": 2}`` repeats its runs bit for bit). Run through ``variant.py``;
not a part of zovh_opt.
"""

import contextlib
import math

import numpy as np
from _starts import first_run
from new_starts_elsewhere import griewank, levy, rastrigin

from zovh_opt import _new_starts as ns
from zovh_opt._backend import to_numpy

UP_TO = 3
FRACTION = 0.5
SHRINK = 0.5
AFTER = 2
GROW = 1.0  # after a success the radius is GROW times the distance moved
SHARE = 1.0  # perturbed starts where they have spent at most SHARE times the local ones
GIVE_UP = None  # after this many perturbed runs in a row without a lower answer, none (None: go on)
RESET = False  # a local run's lower answer: the radius is learned again (and the count restarts)
# a perturbed run minimizes y -> f(x_best + y) from y0 = x0 - x_best: its length scale (the first
# step, the phase's differences) is the perturbation's, not |x|'s
SHIFT = False
SHIFT_BELOW = None  # with SHIFT: only where r < SHIFT_BELOW |x_best| (None: always)
SHIFT_EVERY = 1  # with SHIFT: only every SHIFT_EVERY-th perturbed start
# with SHIFT: the kind (plain or shifted) chosen by its record: the first perturbed start plain,
# the second shifted, then the kind with the larger (lower answers + 1) / (runs + 2)
ADAPT = False
# a perturbed run's length scale l (its first step 0.1 l, the phase's differences) SCALE times the
# radius r, in the user's coordinates (no shift); None: |x|'s as the package (no bounds only)
SCALE = None
# a perturbed run's lower answer less than MIN_MOVE r from the centre refines the centre's basin:
# a success (the radius follows), REFINE "keep" (the radius stays) or "fail" (a failure)
MIN_MOVE = 0.0
REFINE = "success"
# with SHIFT: perturbed runs shifted only once a run's answer tied with the best so far (values
# within TIE (1 + |f|)) at least SEPARATE (1 + |x_best|) away from it: a valley of equal values
# (Schaffer's rings), not a basin's point found again (None: SHIFT as set)
TIE = None
SEPARATE = 1e-6
# up to d = UP_TO the first run's maxfev FIRST_CAP times the budget; one that reaches it counts as
# converged (None: the whole budget)
FIRST_CAP = None
# with ADAPT: a kind's run counts as a lower answer only where lower by over LOWER_BY (1 + |f|)
LOWER_BY = 0.0
# up to d = UP_TO a third regime, BIPOP's widened runs (`zovh_opt._new_starts`), where they have
# spent at most WIDENED times the local ones (before the perturbed ones; None: none)
WIDENED = None


def _answer(result):
    return np.asarray(to_numpy(result.x), dtype=np.float64)


def _best(results):
    def rank(i):
        return not math.isfinite(results[i].fun), results[i].fun

    return min(range(len(results)), key=rank)


def loop(x0, method, new_starts, *, bounds, options, tol, rng, run):
    """`zovh_opt._new_starts.minimize_with_new_starts` with perturbed starts."""
    capped = options
    if FIRST_CAP is not None and len(x0) <= UP_TO and options.get("maxfev") is not None:
        capped = {**options, "maxfev": max(1, int(FIRST_CAP * options["maxfev"]))}
    began, curvature, results, draws, pairs = first_run(
        x0, method, bounds=bounds, options=capped, tol=tol, rng=rng, run=run
    )
    if capped is not options and results[0].status == 1:  # maxfev: as if converged
        results[0].status = ns.SUCCESS
    regimes = ["first"]
    d = results[0].x.shape[0]
    radius, failures = None, 0
    record = {False: [0, 0], True: [0, 0]}  # shifted?: [lower answers, runs]
    tied = False
    for k in range(1, new_starts + 1):
        if results[-1].status not in (ns.SUCCESS, ns.FAILED):
            break
        if d > UP_TO:
            local = ns._regime(results, regimes) == "local"
            regime = "local" if local else "widened"
        else:
            spent = ns.spent_by_regime(results, regimes)
            perturb = len(results) >= AFTER and spent["perturbed"] <= SHARE * spent["local"]
            perturb = perturb and (GIVE_UP is None or failures < GIVE_UP)
            regime = "perturbed" if perturb else "local"
            if WIDENED is not None and len(results) >= AFTER:
                if spent["widened"] <= WIDENED * spent["local"]:
                    regime = "widened"
        more = ns._options_of(options, regime != "widened", curvature, results, began)
        if more is None:
            break
        if regime == "perturbed":
            i = _best(results)
            best = _answer(results[i])
            if radius is None:
                others = [
                    np.linalg.norm(_answer(r) - best) for j, r in enumerate(results) if j != i
                ]
                others = [o for o in others if o > 1e-8 * (1 + np.linalg.norm(best))]
                radius = FRACTION * min(others) if others else None
            if radius is None:
                regime = "local"
        widening = ns.widening_of(regimes.count("widened") + 1) if regime == "widened" else None
        if regime == "perturbed":
            step = radius / math.sqrt(d)
            package_start = ns._start

            def start(x0_, bounds_, k_, draws_, near=None, best=best, step=step):
                point = best + step * draws_.standard_normal(d)
                if bounds_ is not None:
                    lower, upper = ns.host_bounds(bounds_, d)
                    point = np.clip(point, lower, upper)
                space = ns.ArraySpace(x0_)
                return space.to_user(space.from_host(point))

            ns._start = start
            try:
                with _length_scale(None if SCALE is None or bounds is not None else SCALE * radius):
                    optimizer = ns.new_start(x0, method, k, draws, bounds, more, tol)
            finally:
                ns._start = package_start
            fine = SHIFT_BELOW is None or radius < SHIFT_BELOW * np.linalg.norm(best)
            fine = fine and (regimes.count("perturbed") + 1) % SHIFT_EVERY == 0
            if ADAPT:
                fine = _shift_by_record(record)
            if TIE is not None:
                fine = tied
            if SHIFT and fine and optimizer is not None and bounds is None:
                optimizer = _shifted(optimizer, best, x0, method, more, tol, draws)
        else:
            optimizer = ns.new_start(x0, method, k, draws, bounds, more, tol, widening, pairs)
        if optimizer is None:
            break
        before = results[_best(results)].fun
        shifted = isinstance(optimizer, tuple)  # (optimizer, centre): a shifted run
        if shifted:
            results.append(_run_shifted(run, *optimizer))
        else:
            results.append(run(optimizer))
        regimes.append(regime)
        if TIE is not None and not tied:
            i = _best(results[:-1])
            apart = np.linalg.norm(_answer(results[-1]) - _answer(results[i]))
            close = abs(results[-1].fun - before) <= TIE * (1 + abs(before))
            tied = close and apart >= SEPARATE * (1 + np.linalg.norm(_answer(results[i])))
        if regime == "perturbed":
            record[shifted][0] += results[-1].fun < before - LOWER_BY * (1 + abs(before))
            record[shifted][1] += 1
            moved = float(np.linalg.norm(_answer(results[-1]) - best))
            refined = results[-1].fun < before and moved < MIN_MOVE * radius
            if refined and REFINE == "keep":
                pass
            elif results[-1].fun < before and not (refined and REFINE == "fail"):
                radius, failures = max(GROW * moved, 1e-12), 0
            else:
                radius, failures = radius * SHRINK, failures + 1
        elif RESET and results[-1].fun < before:
            radius, failures = None, 0
    return ns._combined(results)


@contextlib.contextmanager
def _length_scale(length):
    """Runs made inside have the length scale ``length`` (None: their own)."""
    from zovh_opt._coordinates import Coordinates

    package = Coordinates.start.__func__

    def start(cls, *args, **kwargs):
        coordinates, z0, scale = package(cls, *args, **kwargs)
        return coordinates, z0, scale if length is None else length / coordinates.unit

    Coordinates.start = classmethod(start)
    try:
        yield
    finally:
        Coordinates.start = classmethod(package)


def _shift_by_record(record):
    """Whether the next perturbed run is shifted, by the kinds' records (`ADAPT`)."""
    if record[False][1] == 0:
        return False
    if record[True][1] == 0:
        return True

    def rate(kind):
        return (record[kind][0] + 1) / (record[kind][1] + 2)

    return rate(True) > rate(False)


def _shifted(optimizer, centre, x0, method, options, tol, draws):
    """The perturbed start's optimizer again, in coordinates ``y = x - centre``."""
    from zovh_opt._optimizer import Optimizer

    y0 = np.asarray(to_numpy(optimizer.x), dtype=np.float64) - centre
    seed = int(draws.integers(2**63))
    return Optimizer(y0, method, options=options, tol=tol, rng=seed), centre


def _run_shifted(run, optimizer, centre):
    """``run(optimizer)`` on ``y -> f(centre + y)``: the user's ``fun`` taken from ``run``'s
    closure (`zovh_opt._minimize.minimize`); the result's ``x`` back in ``x``."""
    names, cells = run.__code__.co_freevars, run.__closure__
    cells = dict(zip(names, (c.cell_contents for c in cells), strict=True))
    fun, args = cells["fun"], cells["args"]
    result = optimizer.run(lambda y, *a: fun(centre + y, *a), args)
    result.x = centre + np.asarray(result.x)
    return result


def patch():
    import zovh_opt._minimize as m

    m.minimize_with_new_starts = loop


# Problems that are not COCO's, d = 2: name, f, f*, half-width of the box, the box as bounds
# (Rastrigin, Griewank and Levy as `new_starts_elsewhere` has them)
def _ackley(x):
    return float(
        -20 * np.exp(-0.2 * np.sqrt(np.mean(x * x))) - np.exp(np.mean(np.cos(2 * np.pi * x)))
        + 20 + np.e
    )  # fmt: skip


def _schwefel(x):
    return float(418.9828872724338 * len(x) - np.sum(x * np.sin(np.sqrt(np.abs(x)))))


def _styblinski_tang(x):
    return float(np.sum(x**4 - 16 * x**2 + 5 * x) / 2)


def _schaffer2(x):
    s = x[0] ** 2 + x[1] ** 2
    return float(0.5 + (np.sin(x[0] ** 2 - x[1] ** 2) ** 2 - 0.5) / (1 + 0.001 * s) ** 2)


def _drop_wave(x):
    s = x[0] ** 2 + x[1] ** 2
    return float(-(1 + np.cos(12 * np.sqrt(s))) / (0.5 * s + 2))


def _eggholder(x):
    a, b = x[0], x[1]
    return float(
        -(b + 47) * np.sin(np.sqrt(abs(a / 2 + b + 47))) - a * np.sin(np.sqrt(abs(a - b - 47)))
    )


def _holder_table(x):
    r = np.sqrt(x[0] ** 2 + x[1] ** 2)
    return float(-abs(np.sin(x[0]) * np.cos(x[1]) * np.exp(abs(1 - r / np.pi))))


def _shubert(x):
    k = np.arange(1, 6)
    return float(np.prod([np.sum(k * np.cos((k + 1) * xi + k)) for xi in x]))


def _cross_in_tray(x):
    r = np.sqrt(x[0] ** 2 + x[1] ** 2)
    inner = abs(np.sin(x[0]) * np.sin(x[1]) * np.exp(abs(100 - r / np.pi))) + 1
    return float(-0.0001 * inner**0.1)


ELSEWHERE = [
    ("Rastrigin", rastrigin, 0.0, 4.0, False),
    ("Rastrigin, box", rastrigin, 0.0, 5.12, True),
    ("Ackley", _ackley, 0.0, 32.768, False),
    ("Griewank", griewank, 0.0, 600.0, False),
    ("Schwefel, box", _schwefel, 0.0, 500.0, True),
    ("Levy", levy, 0.0, 10.0, False),
    ("Styblinski-Tang, box", _styblinski_tang, -39.16616570377142 * 2, 5.0, True),
    ("Schaffer N.2", _schaffer2, 0.0, 100.0, False),
    ("Drop-wave", _drop_wave, -1.0, 5.12, False),
    ("Eggholder, box", _eggholder, -959.6406627208506, 512.0, True),
    ("Holder table, box", _holder_table, -19.20850256788675, 10.0, True),
    ("Shubert", _shubert, -186.7309088310239, 10.0, False),
    ("Cross-in-tray", _cross_in_tray, -2.062611870822739, 10.0, False),
]


def main(seeds=20):
    """The package's option at d = 2 with and without its perturbed new starts on
    `ELSEWHERE`, ``maxfev = 2000``, ``new_starts = 100``, from ``seeds`` points uniform in
    each box: the median final ``f - f*`` and the seeds within ``1e-6`` of ``f*``."""
    import statistics
    import warnings

    import zovh_opt

    for name, f, f_star, half, box in ELSEWHERE:
        row = []
        for label, dims in (("without", 0), ("perturbed", 2)):
            ns.PERTURBED_DIMENSIONS = dims
            gaps = []
            for seed in range(seeds):
                x0 = np.random.default_rng(seed).uniform(-half, half, 2)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = zovh_opt.minimize(
                        f, x0, rng=seed, bounds=[(-half, half)] * 2 if box else None,
                        options={"maxfev": 2000, "new_starts": 100},
                    )  # fmt: skip
                gaps.append(max(res.fun - f_star, 0.0))
            solved = sum(g <= 1e-6 for g in gaps)
            row.append(f"{label} {statistics.median(gaps):.2g} ({solved}/{seeds})")
        ns.PERTURBED_DIMENSIONS = 2
        print(f"{name}: " + " | ".join(row), flush=True)


if __name__ == "__main__":
    main()
