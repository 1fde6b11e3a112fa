"""ZoVH on a GPU with PyTorch (CUDA) and CuPy, whichever is installed.

The objective is a quadratic in d = 1e6 evaluated for all points of an iteration at once
(``vectorized=True``), minimized by the default (the diagonal curvature model, 44 points an
iteration at this d). Everything stays on the device: the directions are drawn there, and
``res.x`` comes back as a tensor (or CuPy array) on the same device with the dtype of ``x0``.

On a machine without an NVIDIA GPU, or without PyTorch and CuPy, it says so and exits with
status 0.

Run:  python examples/gpu.py            (d = 1e6, 1000 iterations per backend)
      python examples/gpu.py --quick    (d = 1e5, 100 iterations, for CI)
"""

import argparse
import importlib.util
import time

import zovh_opt

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--quick", action="store_true", help="a small, short run")
args = parser.parse_args()
d, maxiter = (100_000, 100) if args.quick else (1_000_000, 1000)


def available_backends():
    """(name, x0) for each GPU backend present, x0 ~ N(0, I) in float32 on the GPU."""
    found = []
    if importlib.util.find_spec("torch") is not None:
        import torch

        if torch.cuda.is_available():
            g = torch.Generator(device="cuda").manual_seed(1)
            found.append(("torch", torch.randn(d, device="cuda", generator=g)))
    if importlib.util.find_spec("cupy") is not None:
        import cupy

        try:
            if cupy.cuda.runtime.getDeviceCount() > 0:
                rng = cupy.random.default_rng(1)
                found.append(("cupy", rng.standard_normal(d, dtype=cupy.float32)))
        except cupy.cuda.runtime.CUDARuntimeError:
            pass
    return found


def quadratic(points):
    """Half the squared norm of each row: (n_points, d) -> (n_points,), on the device."""
    return (points * points).sum(axis=1) / 2


backends = available_backends()
if not backends:
    print("No CUDA GPU with PyTorch or CuPy found: skipping (nothing to run on this machine).")
    raise SystemExit(0)

for name, x0 in backends:
    f0 = float(quadratic(x0[None, :])[0])
    start = time.perf_counter()
    res = zovh_opt.minimize(
        quadratic,
        x0,
        rng=0,
        vectorized=True,
        options={"maxiter": maxiter},
    )
    seconds = time.perf_counter() - start
    device = res.x.device
    if type(res.x) is not type(x0) or res.x.dtype != x0.dtype or str(device) != str(x0.device):
        raise SystemExit(f"{name}: the result left the device or changed dtype")
    print(
        f"{name:6s} d = {d}  f: {f0:.4g} -> {res.fun:.4g}  {res.nit} iterations  "
        f"{1000 * seconds / res.nit:.2f} ms/iteration  x on {device}, {res.x.dtype}"
    )
