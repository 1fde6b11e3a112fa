"""Checks of the noise handling quoted in the docs (theory page, *Noise*), outside the tests.

    python experiments/noise_checks.py sphere [N]   # issue #30's noisy sphere, against ZoAR's grid
    python experiments/noise_checks.py arange       # the non-negative function reported negative
    python experiments/noise_checks.py coverage     # how often fun misses 3 standard errors
    python experiments/noise_checks.py relapse      # a Cauchy run's step rule every 400 evaluations
    python experiments/noise_checks.py average-cost # the average's time an iteration, d = 1e6

``sphere``: ``|x|^2 + N(0, 1)``, d = 1000, ``x0 = 0.7 N(0, I)`` (f0 about 490), 30 000
evaluations, seeds 0 to N - 1 (3 unless given): the true f of the returned point for the
default, ``noisy=False`` (the rule before), and ZoAR with ``noisy=True`` at each learning rate
of the grid
``1, 2, 5 x 10^-6 ... 10^0`` (the best of them is the oracle). ``arange``:
``sum((x - arange(6))**2) + 5 N(0, 1)`` from 0, default budget, seeds 0-5: the reported
``fun``, its standard error, the true value at ``x`` and the status, for the default and
``noisy=False``.
``coverage``: no run of zovh: how often the mean of ``n`` values is more than three of its
standard errors (the sample's, as ``fun_std_error`` is) from the true mean, over 20 000 samples
per row, for normal values, the noise benchmark's severe multiplicative models (``gaussian``:
``exp(N(0, 1))``, lognormal; ``uniform``: ``U max(1, (1e9 / g)^(alpha U'))`` at d = 20, for a
gap ``g`` of 1e3 and 1e-2) and Student's t with 3 degrees of freedom.
``relapse``: the noise benchmark's Cauchy model on f1 (instance 5, d = 20, ``1000 d``), an
``Optimizer`` loop with ``rng=0`` (``relapse 3``: 3), whose runs differ from the benchmark's:
every 400 evaluations the true gap of ``x`` over the start's (log10), the step rule's radius
level, ``mu``, running step length and noise variance.
``average-cost``: ``CentreAverage.add`` at d = 1e6 (NumPy, float64), the mean of 50 calls,
beside the driver's own time an iteration (evaluations excluded) of a ``noisy=True`` run on
the sphere at d = 1e6 over 15 iterations.
"""

import sys

import numpy as np

import zovh_opt

RATES = tuple(m * 10.0**k for k in range(-6, 0) for m in (1, 2, 5)) + (1.0,)


def sphere_run(seed, method="zovh", **options):
    noise = np.random.default_rng(5 + seed)
    x0 = 0.7 * np.random.default_rng(seed).standard_normal(1000)
    res = zovh_opt.minimize(
        lambda x: float(x @ x) + noise.standard_normal(),
        x0,
        method=method,
        rng=seed,
        options={"maxfev": 30_000, **options},
    )
    return float(res.x @ res.x)


def sphere(n=3):
    seeds = range(n)
    rows = {
        "zovh (default)": [sphere_run(s) for s in seeds],
        "zovh noisy=False": [sphere_run(s, noisy=False) for s in seeds],
    }
    for rate in RATES:
        rows[f"zoar lr={rate:g}"] = [
            sphere_run(s, "zoar", learning_rate=rate, noisy=True) for s in seeds
        ]
    oracle = min((k for k in rows if k.startswith("zoar")), key=lambda k: np.median(rows[k]))
    for name, values in rows.items():
        mark = "  <- the oracle" if name == oracle else ""
        print(f"{name:18} true f median {np.median(values):8.3g}  {np.round(values, 2)}{mark}")


def arange():
    target = np.arange(6.0)
    for noisy in ("auto", False):
        for seed in range(6):
            noise = np.random.default_rng(100 + seed)

            def f(x, noise=noise):
                return float(np.sum((x - target) ** 2) + 5 * noise.standard_normal())

            res = zovh_opt.minimize(f, np.zeros(6), rng=seed, options={"noisy": noisy})
            truth = float(np.sum((res.x - target) ** 2))
            error = res.get("fun_std_error", float("nan"))
            print(
                f"noisy={noisy!s:5} seed {seed}: fun {res.fun:8.3f} (std error {error:.3f}) "
                f"true {truth:.4f}  status {res.status} success {res.success}"
            )


def coverage():
    rng = np.random.default_rng(0)
    alpha = 0.49 + 1 / 20  # the uniform model's at d = 20

    def uniform(g):
        def draw(shape):
            return g * rng.random(shape) * np.maximum(1, (1e9 / g) ** (alpha * rng.random(shape)))

        c = 1e9 / g
        return draw, g * 0.5 * (c**alpha - 1) / (alpha * np.log(c))

    laws = {
        "normal": (rng.standard_normal, 0.0),
        "lognormal (gaussian model)": (lambda s: np.exp(rng.standard_normal(s)), np.exp(0.5)),
        "uniform model, g = 1e3": uniform(1e3),
        "uniform model, g = 1e-2": uniform(1e-2),
        "Student t, 3 dof": (lambda s: rng.standard_t(3, s), 0.0),
    }
    sizes = (10, 30, 100, 200, 1000)
    print(f"{'values':28}" + "".join(f"   n = {n:<4}" for n in sizes))
    for name, (draw, mean) in laws.items():
        cells = []
        for n in sizes:
            x = draw((20_000, n))
            error = x.std(axis=1, ddof=1) / np.sqrt(n)
            cells.append(f"{np.mean(np.abs(x.mean(axis=1) - mean) > 3 * error):10.3f}")
        print(f"{name:28}" + " ".join(cells))


def relapse(seed=0):
    import warnings

    from zovh_opt.benchmarks import noise

    problem = noise._problem({"suite": "bbob", "dim": 20}, 1, 5, "cauchy")
    x0 = np.asarray(problem.problem.initial_solution, dtype=float)
    gap0 = problem.gap(x0)
    opt = zovh_opt.Optimizer(x0, rng=seed, options={"maxfev": 20_000})
    shown = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        while not opt.done:
            opt.tell([problem(p) for p in opt.ask()])
            control = opt._parts.method.control
            if problem.calls - shown >= 400 and control is not None:
                shown = problem.calls
                gap = np.log10(problem.gap(np.asarray(opt.x)) / gap0)
                print(
                    f"{problem.calls:6d} gap {gap:6.2f}  level {control.level:3d}"
                    f"  mu {control.smoothing:.2e}  step {control.step_length:.2e}"
                    f"  noise variance {control.noise_variance:.2e}",
                    flush=True,
                )


def average_cost():
    import time

    from zovh_opt._noise.centre_average import CentreAverage

    d = 10**6
    centre, average = np.ones(d), CentreAverage()
    average.add(centre)
    start = time.perf_counter()
    for _ in range(50):
        average.add(centre)
    add = (time.perf_counter() - start) / 50
    noise = np.random.default_rng(0)
    opt = zovh_opt.Optimizer(np.ones(d), rng=0, options={"maxfev": 10**7, "noisy": True})
    while opt.nit < 3:
        opt.tell([float(p @ p) + noise.standard_normal() for p in opt.ask()])
    own, first = 0.0, opt.nit
    while opt.nit < first + 15:
        start = time.perf_counter()
        points = opt.ask()
        asked = time.perf_counter()
        values = [float(p @ p) + noise.standard_normal() for p in points]
        start += time.perf_counter() - asked  # the evaluations are not the driver's
        opt.tell(values)
        own += time.perf_counter() - start
    print(f"CentreAverage.add at d = 1e6: {1e3 * add:.2f} ms")
    print(f"an iteration's own time there ({len(points)} points): {1e3 * own / 15:.1f} ms")


if __name__ == "__main__":
    if sys.argv[1] in ("relapse", "sphere"):
        {"relapse": relapse, "sphere": sphere}[sys.argv[1]](*(int(a) for a in sys.argv[2:]))
    else:
        checks = {"sphere": sphere, "arange": arange, "coverage": coverage}
        checks["average-cost"] = average_cost
        checks[sys.argv[1]]()
