"""Checkpoints written before the driver was split into parts (issue #28) still load, and the
runs they hold go on exactly as a run of today's code started from scratch.

``tests/data/before_split_*.npz`` were written by zovh-opt at commit a3691dc (the driver as one
class) with the cases below: an 8-dimensional weighted quadratic, ``rng=3``, ``x0 = 0.9``,
``tells`` iterations told, then saved (``pending``: with an ask awaiting its values). Their
``curvature="auto"`` was the diagonal model, which today's run is told explicitly (``"auto"``
takes the full model at d = 8 since issue #29), and so is ``noisy=False`` (``"auto"`` since
issue #30 measures ``x0`` first); the step rule's trust radius started infinite then (at twice
the first step since 2026-11-26), and today's run is given that start.

The files hold the floats of the machine that wrote them. NumPy's kernels (their SIMD width
and summation order) differ between processors in the last bits, so on another machine a
fresh run's state at the save point agrees with the file's to rounding, not bit for bit
(1e-14 relative, measured on an AMD EPYC without AVX-512), and the runs' ends are compared to
a tolerance; every decision of the run (iterations, evaluations, status, message, restarts)
must be the same. Runs saved and loaded on one machine continue bit for bit
(``tests/test_checkpoints.py``).
"""

from __future__ import annotations

import math
import pathlib
import warnings

import numpy as np
import pytest

import zovh_opt

DATA = pathlib.Path(__file__).parent / "data"

CASES = {
    "default_bounds": dict(options={"maxfev": 800}, bounds=[(0, 1)] * 8, tells=30),
    "fixed_rate_pending": dict(
        options={"learning_rate": 1e-3, "maxiter": 60}, bounds=None, tells=20, pending=True
    ),
    "windows_default": dict(options={"maxfev": 4000}, bounds=None, tells=70),
    "noisy_comparing": dict(
        options={"maxfev": 400, "noisy": True, "final_evaluations": 4},
        bounds=[(None, 2)] * 8,
        tells=200,
        noisy=True,
    ),
}


def quadratic(x):
    return float(np.sum(np.arange(1, x.shape[0] + 1) * (x - 0.3) ** 2))


def objective(noisy):
    """The fixture's objective; with noise, a fresh stream of the one it was written with."""
    if not noisy:
        return quadratic
    rng = np.random.default_rng(7)
    return lambda x: quadratic(x) + 0.01 * rng.standard_normal()


def tell_until_saved(opt, fun, case):
    """Drive ``opt`` as the fixture's run was driven before it was saved."""
    for _ in range(case["tells"]):
        if opt.stage != "iterate":
            break
        opt.tell([fun(p) for p in opt.ask()])
    if case.get("pending"):
        opt.ask()


def finish(opt, fun):
    if opt.pending is not None:
        opt.tell([fun(p) for p in opt.pending])
    while not opt.done:
        opt.tell([fun(p) for p in opt.ask()])
    return opt.result()


def legacy_noisy_ending(name, case):
    """A noisy=True run written before x0 was measured at the start ends as it would have:
    the final iterate and x0 side by side, then the chosen point."""
    loaded = zovh_opt.Optimizer.load(DATA / f"before_split_{name}.npz")
    fun, n = objective(True), loaded.options["final_evaluations"]
    sizes = []
    if loaded.pending is not None:
        sizes.append(len(loaded.pending))
        loaded.tell([fun(p) for p in loaded.pending])
    while not loaded.done:
        points = loaded.ask()
        sizes.append(len(points))
        loaded.tell([fun(p) for p in points])
    assert sizes[-1] == n and loaded._parts.returned.start_values is None  # compared at the end
    assert math.isfinite(loaded.result().fun_std_error)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_checkpoint_written_before_the_split_goes_on_as_an_uninterrupted_run(name):
    case = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the small d's OptimizeWarning
        # noisy's default before "auto"; no quasi-Newton phase before it existed
        options = {"noisy": False, "quasi_newton": False, **case["options"]}
        if "learning_rate" not in options:  # what "auto" was when the file was written
            options = {**options, "curvature": "diagonal"}
        if options["noisy"]:
            return legacy_noisy_ending(name, case)
        fresh = zovh_opt.Optimizer(np.full(8, 0.9), bounds=case["bounds"], options=options, rng=3)
        if hasattr(
            fresh._parts.method, "_row_layout"
        ):  # the curvature model drew a block at a time
            fresh._parts.method._row_layout = "block"
        control = fresh._parts.method.control
        if control is not None and control.ceiling is not None:  # its trust radius started
            control.trust_radius = math.inf  # infinite (the file holds the radius it reached)
        fun = objective(case.get("noisy", False))
        tell_until_saved(fresh, fun, case)
        loaded = zovh_opt.Optimizer.load(DATA / f"before_split_{name}.npz")
        # the loaded run goes on with the same noise as the fresh one: a twin stream, advanced
        twin = objective(case.get("noisy", False))
        for _ in range(fresh.nfev):
            if case.get("noisy", False):
                twin(np.zeros(8))
        assert (loaded.nit, loaded.nfev, loaded.stage) == (fresh.nit, fresh.nfev, fresh.stage)
        assert np.allclose(loaded._parts.method._x, fresh._parts.method._x, rtol=1e-12, atol=0)
        expected, got = finish(fresh, fun), finish(loaded, twin)
    assert np.allclose(got.x, expected.x, rtol=1e-9, atol=0)
    # a checkpoint without the transport formed a step ahead forms it from the rows: the same
    # run up to rounding, which a run converged to f ~ 1e-21 shows in f's leading digits; the
    # absolute term is what the tolerance on x allows near the optimum (sum i 2|x_i - 0.3|
    # 0.3e-9, |x_i - 0.3| < 1e-8 there)
    assert math.isclose(got.fun, expected.fun, rel_tol=1e-9, abs_tol=1e-15)
    assert (got.nit, got.nfev, got.status, got.message) == (
        expected.nit,
        expected.nfev,
        expected.status,
        expected.message,
    )
    assert all(np.allclose(got.trace[k], expected.trace[k], rtol=1e-9) for k in expected.trace)
    assert [r["reason"] for r in got.restarts] == [r["reason"] for r in expected.restarts]
