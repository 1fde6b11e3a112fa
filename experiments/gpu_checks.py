"""Checks on an NVIDIA GPU that the test suite does not make, quoted in the GPU guide.

    python experiments/gpu_checks.py memory    # the default at d = 1e6, 1e7: held directions or not
    python experiments/gpu_checks.py memory=cupy  # one backend
    python experiments/gpu_checks.py quality   # the same problems on NumPy, CUDA PyTorch and CuPy
    python experiments/gpu_checks.py features  # the run's later parts on each backend
    python experiments/gpu_checks.py noisy     # the centres' average on the device, d = 1e6

``memory``: the default `zovh_opt.minimize` on the sphere, evaluated point by point (as the
CPU's memory benchmark does) and in one batch on the device (``vectorized=True``: the batch
and the objective's temporaries, ``2 P d`` floats each, count too), float32, from ``x0 = 1``,
for a fixed number of iterations, with ``directions="vectors"`` and ``"seeds"``; for each: the
peak device memory allocated during the run beyond ``x0`` in units of ``d`` floats (PyTorch's
``max_memory_allocated``; for CuPy the peak of the bytes its memory pool hands out, traced by
a memory hook), the time per iteration (synchronized, the objective included), whether the
two storages and a rerun of the same seed give the same ``x`` bit for bit, and what
``directions="auto"`` chose.
``quality``: default runs on a rotated ellipsoid (d = 10, condition 1e6; the full model),
Rosenbrock (d = 10) and a diagonal ellipsoid (d = 1000, condition 1e4; the diagonal model),
``1000 d`` evaluations (100 d at d = 1000), 3 seeds, on each backend: the final ``f`` and
``nfev``. A GPU draws its own directions, so the runs differ from the CPU's; the question is
whether they are as good.
``features``: the parts of a run that the quality problems do not reach, on each backend,
default runs of ``1000 d`` evaluations, seeds 0-1, float64: basin hopping (Rastrigin,
d = 2), ``new_starts`` (Rastrigin, d = 5), noise on the sphere (d = 20: the noise
benchmark's Cauchy outliers, and additive noise of sd 0.2), a start on a bound (d = 10); the
true ``f`` of ``res.x``, ``nfev``, the seconds, and whether ``res.x`` kept the namespace,
dtype and device of ``x0``.
``noisy``: a ``noisy=True`` run on the sphere plus ``N(0, 1)`` at ``d = 10^6``, float32, the
batch evaluated on the device (``vectorized=True``, the noise drawn on the host, one value a
point), 40 iterations: the median of the driver's own time an ask and tell (synchronized,
evaluations excluded), ``CentreAverage.add``'s time there (the mean of 50 synchronized
calls), the count of centres averaged, the true ``f(x) / f(x0)`` of the answer (below 1:
the run descended; a float32 run that read its noise in the user's unit of ``f`` went uphill
and answered ``x0``), and whether ``res.x`` kept ``x0``'s namespace, dtype and device.

Needs PyTorch with CUDA or CuPy; prints what it skips.
"""

from __future__ import annotations

import importlib.util
import sys
import time
import warnings

import numpy as np

import zovh_opt
from zovh_opt._arrays.backend import to_numpy


def backends():
    """(name, to_device(numpy array), synchronize) for each GPU backend present."""
    found = []
    if importlib.util.find_spec("torch") is not None:
        import torch

        if torch.cuda.is_available():
            found.append(
                ("torch-cuda", lambda a: torch.asarray(a, device="cuda"), torch.cuda.synchronize)
            )
    if importlib.util.find_spec("cupy") is not None:
        import cupy

        try:
            if cupy.cuda.runtime.getDeviceCount() > 0:
                found.append(("cupy", cupy.asarray, cupy.cuda.Device().synchronize))
        except cupy.cuda.runtime.CUDARuntimeError:
            pass
    if not found:
        print("no CUDA GPU with PyTorch or CuPy: nothing to check")
    return found


class _CupyPeak:
    """Peak bytes handed out by CuPy's memory pool while active (a memory hook)."""

    def __enter__(self):
        import cupy

        class Hook(cupy.cuda.MemoryHook):
            name = "peak"

            def __init__(self):
                self.now = self.peak = 0

            def malloc_postprocess(self, device_id, size, mem_size, mem_ptr, pmem_id):
                self.now += mem_size
                self.peak = max(self.peak, self.now)

            def free_postprocess(self, device_id, mem_size, mem_ptr, pmem_id):
                self.now -= mem_size

        self.hook = Hook()
        self.hook.__enter__()
        return self.hook

    def __exit__(self, *exc):
        self.hook.__exit__(*exc)


def _sphere_rows(points):
    return (points * points).sum(axis=1)


def _sphere(x):
    return float(x @ x)


def _memory_run(name, to_device, sync, d, storage, iterations, vectorized):
    x0 = to_device(np.ones(d, dtype=np.float32))
    options = {"maxiter": iterations, "directions": storage}
    f = _sphere_rows if vectorized else _sphere
    sync()
    if name == "torch-cuda":
        import torch

        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        start = time.perf_counter()
        res = zovh_opt.minimize(f, x0, rng=0, vectorized=vectorized, options=options)
        sync()
        seconds = time.perf_counter() - start
        peak = torch.cuda.max_memory_allocated() - base
    else:
        with _CupyPeak() as hook:
            start = time.perf_counter()
            res = zovh_opt.minimize(f, x0, rng=0, vectorized=vectorized, options=options)
            sync()
            seconds = time.perf_counter() - start
        peak = hook.peak
    return res, peak / (4 * d), seconds / res.nit


def memory(dims=(1e6, 1e7), iterations=20, only=None):
    from zovh_opt._arrays.backend import ArraySpace
    from zovh_opt._methods.zovh_preconditioned import PreconditionedZoVH, default_pairs

    print(
        "| backend | d | P | evaluation | directions | peak device memory (d floats) "
        "| ms / iteration |"
    )
    print("|---|---:|---:|---|---|---:|---:|")
    for name, to_device, sync in backends():
        if only and name != only:
            continue
        for d in (int(v) for v in dims):
            space = ArraySpace(to_device(np.ones(1, dtype=np.float32)))
            auto = PreconditionedZoVH.storage_for(d, default_pairs(d), 4, space)
            _memory_run(name, to_device, sync, d, "vectors", 2, True)  # warm-up: kernels, pools
            for vectorized in (False, True):
                xs = {}
                for storage in ("vectors", "seeds"):
                    run = (name, to_device, sync, d, storage, iterations, vectorized)
                    res, peak, seconds = _memory_run(*run)
                    xs[storage] = to_numpy(res.x)
                    again = to_numpy(_memory_run(*run)[0].x)
                    same = bool(np.array_equal(xs[storage], again))
                    print(
                        f"| {name} | {d:.0e} | {default_pairs(d)} | "
                        f"{'one batch' if vectorized else 'serial'} | "
                        f"{storage}{' (auto)' if storage == auto else ''} | {peak:.1f} | "
                        f"{1e3 * seconds:.1f} |  rerun identical: {same}, f {res.fun:.6g}",
                        flush=True,
                    )
                same = bool(np.array_equal(xs["vectors"], xs["seeds"]))
                print(f"|  | {d:.0e} | | | vectors == seeds bit for bit: {same} | | |", flush=True)


def _problems():
    rot = np.linalg.qr(np.random.default_rng(7).standard_normal((10, 10)))[0]
    H = rot @ np.diag(np.logspace(0, 6, 10)) @ rot.T
    scales = np.logspace(0, 4, 1000)

    def ellipsoid_rotated(x, xp):
        Hx = xp.asarray(H, dtype=x.dtype, device=getattr(x, "device", None))
        return float(x @ (Hx @ x)) / 2

    def rosenbrock(x, xp):
        return float(xp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2))

    def ellipsoid(x, xp):
        s = xp.asarray(scales, dtype=x.dtype, device=getattr(x, "device", None))
        return float(xp.sum(s * x * x)) / 2

    return [
        ("rotated ellipsoid d=10", ellipsoid_rotated, 10, 10_000),
        ("Rosenbrock d=10", rosenbrock, 10, 10_000),
        ("ellipsoid d=1000", ellipsoid, 1000, 100_000),
    ]


def quality(seeds=(0, 1, 2)):
    import array_api_compat

    spaces = [("numpy", lambda a: a, lambda: None)] + backends()
    print("| problem | backend | f (median over seeds) | f (each) | nfev (each) |")
    print("|---|---|---:|---|---|")
    for title, f, d, budget in _problems():
        for name, to_device, _ in spaces:
            finals, nfevs = [], []
            for seed in seeds:
                x0 = to_device(np.random.default_rng(100 + seed).standard_normal(d))
                xp = array_api_compat.array_namespace(x0)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = zovh_opt.minimize(
                        lambda x, xp=xp, f=f: f(x, xp), x0, rng=seed, options={"maxfev": budget}
                    )
                finals.append(res.fun)
                nfevs.append(res.nfev)
            each = ", ".join(f"{v:.2g}" for v in finals)
            print(f"| {title} | {name} | {np.median(finals):.3g} | {each} | {nfevs} |", flush=True)


def _rastrigin(x, xp):
    return float(10 * x.shape[0] + xp.sum(x * x - 10 * xp.cos(2 * np.pi * x)))


def _sphere_cauchy(seed):
    """The sphere under the noise benchmark's Cauchy model (``noise.NoisyProblem``)."""
    rng = np.random.default_rng(seed)

    def f(x, xp):
        outlier = rng.standard_normal() / (abs(rng.standard_normal()) + 1e-199)
        return float(xp.sum(x * x)) + max(0.0, 1000.0 + (outlier if rng.random() < 0.2 else 0.0))

    return f


def _like(x, x0):
    """Whether ``x`` has ``x0``'s namespace, dtype and device."""
    import array_api_compat

    return (
        array_api_compat.array_namespace(x) is array_api_compat.array_namespace(x0)
        and x.dtype == x0.dtype
        and str(array_api_compat.device(x)) == str(array_api_compat.device(x0))
    )


def features(seeds=(0, 1)):
    import array_api_compat
    import scipy.optimize

    def shifted(x, xp):
        return float(xp.sum((x - 0.3) ** 2))

    def sphere(x, xp):
        return float(xp.sum(x * x))

    def additive(seed):
        rng = np.random.default_rng(seed)
        return lambda x, xp: sphere(x, xp) + 0.2 * rng.standard_normal()

    bound = scipy.optimize.Bounds(0, 1)
    cases = [  # title, f(seed), x0, options, bounds, true f
        ("basin hopping, Rastrigin d=2", lambda s: _rastrigin, 2.5 * np.ones(2), {}, None),
        (
            "new_starts=8, Rastrigin d=5",
            lambda s: _rastrigin,
            2.5 * np.ones(5),
            {"new_starts": 8},
            None,
        ),
        ("Cauchy outliers, sphere d=20", _sphere_cauchy, np.ones(20), {}, None),
        ("additive noise, sphere d=20", additive, np.ones(20), {}, None),
        ("start on a bound, d=10", lambda s: shifted, np.zeros(10), {}, bound),
    ]
    truths = [_rastrigin, _rastrigin, sphere, sphere, shifted]
    spaces = [("numpy", lambda a: a, lambda: None)] + backends()
    print("| problem | backend | true f (each seed) | nfev | s (each) | x like x0 |")
    print("|---|---|---|---|---|---|")
    for (title, make, start, options, bounds), true in zip(cases, truths, strict=True):
        options = {"maxfev": 1000 * start.shape[0], **options}
        for name, to_device, sync in spaces:
            finals, nfevs, seconds, kept = [], [], [], True
            for seed in seeds:
                x0 = to_device(start.copy())
                xp = array_api_compat.array_namespace(x0)
                f = make(seed)
                begin = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = zovh_opt.minimize(
                        lambda x, f=f, xp=xp: f(x, xp), x0, bounds=bounds, rng=seed, options=options
                    )
                sync()
                seconds.append(time.perf_counter() - begin)
                finals.append(true(res.x, xp))
                nfevs.append(res.nfev)
                kept &= _like(res.x, x0)
            each = ", ".join(f"{v:.3g}" for v in finals)
            secs = ", ".join(f"{v:.1f}" for v in seconds)
            print(f"| {title} | {name} | {each} | {nfevs} | {secs} | {kept} |", flush=True)


def noisy(d=10**6, iterations=40):

    from zovh_opt._noise.centre_average import CentreAverage

    print(
        "| backend | own ms an ask and tell (median) | add ms | centres averaged "
        "| f(x) / f(x0) | x like x0 |"
    )
    print("|---|---|---|---|---|---|")
    for name, to_device, sync in backends():
        x0 = to_device(np.ones(d, dtype=np.float32))
        average = CentreAverage()
        average.add(x0)
        sync()
        start = time.perf_counter()
        for _ in range(50):
            average.add(x0)
        sync()
        add = (time.perf_counter() - start) / 50
        noise = np.random.default_rng(0)
        opt = zovh_opt.Optimizer(x0, rng=0, options={"noisy": True, "maxiter": iterations})
        times = []  # the driver's own seconds of each ask and tell
        while not opt.done:
            sync()
            start = time.perf_counter()
            points = opt.ask()
            sync()
            asked = time.perf_counter()
            values = to_numpy(_sphere_rows(points)) + noise.standard_normal(points.shape[0])
            start += time.perf_counter() - asked
            opt.tell(values)
            sync()
            times.append(time.perf_counter() - start)
        res = opt.result()
        kept = _like(res.x, x0)
        count = opt._parts.returned.average.count
        ratio = float(np.sum(to_numpy(res.x).astype(np.float64) ** 2)) / d
        print(
            f"| {name} | {1e3 * np.median(times):.2f} | {1e3 * add:.3f} | {count} "
            f"| {ratio:.6f} | {kept} |",
            flush=True,
        )


if __name__ == "__main__":
    which = sys.argv[1:] or ["memory", "quality"]
    for job in which:
        if job.startswith("memory="):  # memory=cupy: one backend
            memory(only=job.split("=", 1)[1])
        else:
            jobs = {"memory": memory, "quality": quality, "features": features, "noisy": noisy}
            jobs[job]()
        print()
