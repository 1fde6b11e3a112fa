"""One code path on every array library: namespace, dtype and device follow x0."""

from __future__ import annotations

import ast
import math
import pathlib

import numpy as np
import pytest

import zovh_opt
from zovh_opt.problems import rosenbrock

PACKAGE = pathlib.Path(zovh_opt.__file__).parent
# the adapters: the array libraries, and CuPy's kernel for directions
ADAPTERS = {PACKAGE / "_arrays/backend.py", PACKAGE / "_arrays/device_normals.py"}
ADAPTERS |= set((PACKAGE / "torch").glob("*.py"))  # zovh_opt.torch: torch's optimizers
# The O(M^2) algebra of an iteration (Gram matrix, function values, step coefficients) lives on
# the host in NumPy float64 by design; these modules hold it. Their d-sized arrays still go
# through the ArraySpace of _backend.py, which test_namespace_dtype_device_follow_x0 checks.
METHOD = {"quasi_newton": False}  # the method's estimates (the phase's: its jac alone)
HOST_ALGEBRA = {
    "_driver/reporting.py",  # the result's trace, NumPy arrays
    "_methods/history.py",
    "_methods/_base.py",
    "_methods/zovh_paper.py",
    "_methods/curvature_model.py",  # the pair coefficients and residuals
    "_methods/zovh_preconditioned.py",  # the pending directions' norms
    "_curvature/full.py",  # the P x P eigenproblems of an update
    "_curvature/fit.py",  # the least-squares fit's n x n filter, d <= 20
    "_methods/zovh_full.py",  # the fitted gradient's (N P, d) rows, d <= 20
    "_driver/new_starts.py",  # a new start's point, drawn on the host once per run
    "_driver/checkpoint.py",
    "_driver/stages.py",  # the told values, host floats
    "_driver/bounds.py",  # the bounds, read and checked once on the host
    "_driver/coordinates.py",  # the units' powers of two, from the dtype's range
    "_driver/run_options.py",  # x_scale read on the host, once
    "_noise/robust.py",  # medians of a batch's P host floats
    "_curvature/carried_transport.py",  # the kept rows' P products for the next step, host floats
    "_driver/lbfgs.py",  # hess_inv's compact form: the m x m matrices of the secant pairs
    "_driver/trust_region.py",  # the trust region's quadratic model, d <= 20
    "_driver/region_fit.py",  # its least-squares fit, (d + 1)(d + 2) / 2 unknowns, d <= 20
    "_driver/region_checkpoint.py",  # its checkpoints: those host arrays as saved
}


def test_only_the_adapter_imports_array_libraries():
    """Core modules get their namespace from their inputs; only the adapters know the libraries
    (and the host-algebra modules use NumPy for their small host arrays)."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path in ADAPTERS or "benchmarks" in path.parts:
            continue
        if str(path.relative_to(PACKAGE)) in HOST_ALGEBRA:
            offenders += [
                f"{path.relative_to(PACKAGE)}: torch"
                for _ in range(path.read_text().count("import torch"))
            ]
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            offenders += [
                f"{path.relative_to(PACKAGE)}: {n}"
                for n in names
                if n.split(".")[0] in {"numpy", "torch", "cupy", "jax"}
            ]
    assert not offenders, offenders


@pytest.mark.parametrize(
    "options",
    [{}, {"curvature": "diagonal"}, {"learning_rate": 1e-6}],
    ids=["full-model", "diagonal-model", "paper"],
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_namespace_dtype_device_follow_x0(backend, dtype, options):
    xp = backend.xp
    x0 = backend.asarray(np.linspace(-1, 1, 16), dtype=dtype)
    received = []

    def fun(x):
        received.append((type(x), x.dtype, x.shape))
        return rosenbrock(x)

    # the method's estimates (a run that ends in the quasi-Newton phase has its jac only)
    res = zovh_opt.minimize(fun, x0, rng=0, options={"maxiter": 5, **METHOD, **options})
    assert all(r == (type(x0), x0.dtype, (16,)) for r in received)
    arrays = [res.x, res.jac]
    if "learning_rate" not in options:  # the curvature model's inverse: (16, 16) or diagonal
        arrays += [res.hess_inv @ x0]
        arrays += [res.hess_inv.diagonal() if options else res.hess_inv]
    for arr in arrays:
        assert type(arr) is type(x0) and arr.dtype == x0.dtype
        assert xp.__name__ == zovh_opt._arrays.backend.namespace_of(arr).__name__
    assert isinstance(res.fun, float)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_quasi_newton_phase_follows_x0(backend, dtype):
    """The phase's asks (gradient blocks, line-search trials) and its jac are arrays like
    ``x0``; its gradient blocks arrive whole through ``ask``."""
    x0 = backend.asarray(np.linspace(-1, 1, 16), dtype=dtype)
    opt = zovh_opt.Optimizer(x0, rng=0, options={"maxfev": 200, "noisy": False})
    sizes, backward, first = set(), 0, True
    while not opt.done and opt.nit < 4:
        points = opt.ask()
        assert type(points) is type(x0) and points.dtype == x0.dtype and points.shape[1] == 16
        sizes.add(points.shape[0])
        backward += opt._parts.quasi_newton._retrying
        values = [rosenbrock(points[i, :]) for i in range(points.shape[0])]
        if first:  # the first gradient (its centre first, the probe last): one value fails
            values[3], first = math.nan, False
        opt.tell(values)
    assert {1, 16} <= sizes and backward == 1  # trials, gradients, the failed coordinate
    res = opt.result()
    assert res.quasi_newton["nit"] >= 2 and type(res.jac) is type(x0)
    assert res.jac.dtype == x0.dtype


@pytest.mark.parametrize("rate", ["auto", 1e-7], ids=["curvature-model", "paper"])
def test_trajectories_agree_across_cpu_backends(backend, rate):
    """Rosenbrock d = 1000, fixed seed: the same run as NumPy up to rounding (x within 1e-9
    of its largest entry after 50 iterations, entry by entry; the arithmetic differs only in
    summation order inside BLAS calls)."""
    x0 = np.random.default_rng(1).standard_normal(1000)
    opts = {"maxiter": 50, "learning_rate": rate}
    ref = zovh_opt.minimize(rosenbrock, x0, rng=11, options=opts)
    if backend.name == "cupy" or getattr(backend.device, "type", "cpu") != "cpu":
        pytest.skip("GPU generators draw other directions than NumPy's")
    res = zovh_opt.minimize(rosenbrock, backend.asarray(x0), rng=11, options=opts)
    scale = float(np.max(np.abs(ref.x)))
    np.testing.assert_allclose(backend.to_numpy(res.x), ref.x, rtol=1e-9, atol=1e-9 * scale)
    assert abs(res.fun - ref.fun) <= 1e-9 * abs(ref.fun)


def test_the_full_model_agrees_across_cpu_backends(backend):
    """Rosenbrock d = 20 with the full model (``"auto"`` there), 30 iterations: the same run
    as NumPy up to rounding."""
    x0 = np.random.default_rng(1).standard_normal(20)
    opts = {"maxiter": 30, **METHOD}  # (the phase's forward differences amplify rounding)
    ref = zovh_opt.minimize(rosenbrock, x0, rng=11, options=opts)
    assert ref.iteration.startswith("full")
    if backend.name == "cupy" or getattr(backend.device, "type", "cpu") != "cpu":
        pytest.skip("GPU generators draw other directions than NumPy's")
    res = zovh_opt.minimize(rosenbrock, backend.asarray(x0), rng=11, options=opts)
    scale = float(np.max(np.abs(ref.x)))
    np.testing.assert_allclose(backend.to_numpy(res.x), ref.x, rtol=1e-9, atol=1e-9 * scale)
    np.testing.assert_allclose(backend.to_numpy(res.hess_inv), ref.hess_inv, rtol=1e-8)


@pytest.mark.parametrize("directions", ["vectors", "seeds"])
def test_seeds_vectors_bit_identical_on_each_backend(backend, directions):
    x0 = backend.asarray(np.linspace(-1, 1, 64))
    opts = {"maxiter": 12, "learning_rate": 1e-6, "history": 3}
    a = zovh_opt.minimize(rosenbrock, x0, rng=2, options={**opts, "directions": "vectors"})
    b = zovh_opt.minimize(rosenbrock, x0, rng=2, options={**opts, "directions": directions})
    assert np.array_equal(backend.to_numpy(a.x), backend.to_numpy(b.x))


def test_mixed_namespaces_in_x0_like_inputs():
    torch = pytest.importorskip("torch")
    from zovh_opt._arrays.backend import namespace_of

    with pytest.raises(TypeError, match="numpy.*torch"):
        namespace_of(np.ones(3), torch.ones(3))


def test_objective_may_return_another_namespace_scalar():
    torch = pytest.importorskip("torch")
    x0 = torch.linspace(-1, 1, 8, dtype=torch.float64)
    res = zovh_opt.minimize(lambda x: np.float64(float(x @ x)), x0, rng=0, options={"maxiter": 5})
    assert isinstance(res.x, torch.Tensor)


def test_torch_generator_draws_natively():
    torch = pytest.importorskip("torch")
    x0 = torch.linspace(-1, 1, 8, dtype=torch.float64)
    a = zovh_opt.minimize(
        rosenbrock, x0, rng=torch.Generator().manual_seed(3), options={"maxiter": 5}
    )
    b = zovh_opt.minimize(
        rosenbrock, x0, rng=torch.Generator().manual_seed(3), options={"maxiter": 5}
    )
    assert torch.equal(a.x, b.x)
