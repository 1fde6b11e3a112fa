"""Per-iteration cost of the ZoVH optimizer itself, the objective excluded.

For each dimension, history length, dtype and direction storage the table gives the time of one
``ask`` + ``tell`` of `zovh_opt.ZoVH` on a full history, beside the floor any K-direction
zeroth-order method pays (draw K directions, form the K query points, apply one update), their
ratio, and (NumPy only) the peak memory the optimizer allocates beyond ``x`` during an
iteration, measured with ``tracemalloc``.
"""

from __future__ import annotations

import argparse
import platform
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np

from .._backend import SeedSource, gaussian_direction
from .._methods import ZoVH


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dims", type=float, nargs="+", default=[1e4, 1e5, 1e6])
    parser.add_argument("--history", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float64"])
    parser.add_argument("--storage", nargs="+", default=["vectors", "seeds"])
    parser.add_argument("--directions", type=int, default=3, help="K")
    parser.add_argument("--repeat", type=int, default=10, help="timed iterations per row")
    parser.add_argument("--backend", choices=["numpy", "torch", "cupy"], default="numpy")
    parser.add_argument("--device", default="cpu", help="torch device, e.g. cuda")


def _backend(name: str, device: str) -> tuple[Callable[[np.ndarray], Any], Callable[[], None]]:
    """Return (to_backend, synchronize)."""
    if name == "torch":
        import torch

        dev = torch.device(device)
        sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
        return (lambda a: torch.asarray(a, device=dev)), sync
    if name == "cupy":
        import cupy

        return cupy.asarray, cupy.cuda.Device().synchronize
    return (lambda a: a), (lambda: None)


def _timed(fn: Callable[[], Any], sync: Callable[[], None], repeat: int) -> float:
    fn()
    sync()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - start)
    return best


def _floor(x: Any, K: int) -> Callable[[], Any]:
    """Draw K directions, form the K query points and apply one update: the unavoidable work.

    Uses the optimizer's own primitives, so the ratio measures only what ZoVH adds.
    """
    opt = ZoVH(x, rng=0, n_directions=K, history=1)
    seeds = SeedSource(0)

    def work() -> Any:
        rows = [gaussian_direction(s, x, seeds.native) for s in seeds.seeds(K)]
        points = opt._points(x, rows, 0.1)
        del points
        return x - 1e-3 * rows[0]

    return work


def _zovh_step(x: Any, K: int, N: int, storage: str, to_backend: Callable) -> Callable[[], Any]:
    """One ask + tell on a full history; the values are fixed random numbers."""
    opt = ZoVH(x, rng=0, n_directions=K, history=N, directions=storage, learning_rate=1e-12)
    values = to_backend(
        np.random.default_rng(1).standard_normal(K).astype(str(x.dtype).split(".")[-1])
    )

    def step() -> None:
        points = opt.ask()
        del points  # the caller would evaluate them, then let them go
        opt.tell(values)

    for _ in range(N):
        step()
    return step


def _peak_extra_bytes(x: Any, K: int, N: int, storage: str) -> int:
    """Peak memory the optimizer holds beyond ``x`` during a steady-state step (NumPy)."""
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    step = _zovh_step(x, K, N, storage, lambda a: a)
    tracemalloc.reset_peak()
    step()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return peak - x.nbytes  # the optimizer's own iterate stands in for the caller's x


def run(args: argparse.Namespace) -> int:
    to_backend, sync = _backend(args.backend, args.device)
    K = args.directions
    print(f"# step benchmark: {args.backend} ({args.device}), K = {K}, best of {args.repeat}")
    print(f"# numpy {np.__version__}, python {platform.python_version()}, {platform.machine()}")
    print()
    print("| d | N | dtype | storage | optimizer ms/it | floor ms/it | ratio | peak extra MB |")
    print("|---:|---:|---|---|---:|---:|---:|---:|")
    for d in (int(v) for v in args.dims):
        for N in args.history:
            for dtype in args.dtypes:
                x = to_backend(np.random.default_rng(0).standard_normal(d).astype(dtype))
                floor = _timed(_floor(x, K), sync, args.repeat)
                for storage in args.storage:
                    step = _zovh_step(x, K, N, storage, to_backend)
                    t = _timed(step, sync, args.repeat)
                    if args.backend == "numpy":
                        peak = f"{_peak_extra_bytes(x, K, N, storage) / 2**20:.1f}"
                    else:
                        peak = "n/a"
                    print(
                        f"| {d:.0e} | {N} | {dtype} | {storage} | {1e3 * t:.2f} | "
                        f"{1e3 * floor:.2f} | {t / floor:.2f} | {peak} |",
                        flush=True,
                    )
    return 0
