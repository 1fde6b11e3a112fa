"""Backend selection: every test that takes ``xp`` runs once per selected array library.

Select with the environment variable ``ZOVH_ARRAY_BACKENDS``, a comma-separated list of
``numpy``, ``array_api_strict``, ``torch``, ``cupy`` (or ``all``); the default is
``numpy,array_api_strict,torch``. A selected backend that is not installed, or ``cupy`` without
a CUDA device, is skipped with the reason. ``ZOVH_TORCH_DEVICE`` (default ``cpu``) picks the
device for torch tensors, e.g. ``cuda``.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import zovh_opt

ALL_BACKENDS = ("numpy", "array_api_strict", "torch", "cupy")
DEFAULT_BACKENDS = ("numpy", "array_api_strict", "torch")


def selected_backends() -> list[str]:
    value = os.environ.get("ZOVH_ARRAY_BACKENDS", ",".join(DEFAULT_BACKENDS)).strip()
    names = ALL_BACKENDS if value == "all" else tuple(n.strip() for n in value.split(",") if n)
    unknown = set(names) - set(ALL_BACKENDS)
    if unknown:
        raise pytest.UsageError(f"ZOVH_ARRAY_BACKENDS: unknown backends {sorted(unknown)}")
    return list(names)


class Backend:
    """A namespace plus how to move NumPy reference data onto it and back."""

    def __init__(self, name: str):
        self.name = name
        if name == "cupy":
            cupy = pytest.importorskip("cupy", reason="cupy is not installed")
            try:
                if cupy.cuda.runtime.getDeviceCount() < 1:
                    pytest.skip("cupy: no CUDA device")
            except Exception as exc:  # no driver, no runtime
                pytest.skip(f"cupy: no CUDA device ({exc})")
        module = pytest.importorskip(name, reason=f"{name} is not installed")
        import array_api_compat

        self.module = module
        self.device = None
        if name == "torch":
            self.device = module.device(os.environ.get("ZOVH_TORCH_DEVICE", "cpu"))
            if self.device.type == "cuda" and not module.cuda.is_available():
                pytest.skip("torch: no CUDA device")
        self.xp = array_api_compat.array_namespace(self.asarray(np.zeros(1)))

    def asarray(self, a, dtype=None):
        a = np.asarray(a, dtype=dtype)
        if self.name == "numpy":
            return a
        if self.name == "torch":
            return self.module.asarray(a, device=self.device)
        return self.module.asarray(a)

    def to_numpy(self, a) -> np.ndarray:
        if self.name == "torch":
            return a.detach().cpu().numpy()
        if self.name == "cupy":
            return a.get()
        return np.asarray(a)


@pytest.fixture(params=selected_backends())
def backend(request) -> Backend:
    return Backend(request.param)


@pytest.fixture
def xp(backend):
    return backend.xp


def pytest_report_header(config):
    import importlib.util

    found = [n for n in selected_backends() if importlib.util.find_spec(n) is not None]
    missing = [n for n in selected_backends() if n not in found]
    line = f"zovh array backends: {', '.join(found) or 'none'}"
    return line + (f" (not installed, skipped: {', '.join(missing)})" if missing else "")


@pytest.fixture
def drive_pairs():
    """``drive_pairs(opt, f, iterations, model_state)``: ask and tell ``iterations`` times with
    ``f`` (vectorized), and return each iteration's ``(W, delta, centre)`` (the points'
    directions ``(points - x) / mu``, the central differences, the centre) and
    ``model_state(opt)`` taken before the last ask (what formed the last direction)."""

    def drive(opt, f, iterations, model_state):
        mu, batches, state = opt.smoothing, [], None
        for _ in range(iterations):
            x, state = opt.x, model_state(opt)
            points = opt.ask()
            values = f(points)
            (plus, _), (up, down) = opt.pair_split(points), opt.pair_split(values)
            batches.append(((plus - x) / mu, (up - down) / (2 * mu), x))
            opt.tell(values)
        return batches, state

    return drive


@pytest.fixture
def run_to_end():
    """``run_to_end(f, x0, rng, options)``: an `Optimizer` loop (``minimize``'s asks, in
    order) with the scalar ``f``; the result and the end's asks, each ``(points, values)``:
    a noisy run's comparison (``final_evaluations`` values at the final iterate, then at the
    average of the centres where there is one), the rounds a close comparison with ``x0``
    adds (half at the candidate, half at ``x0``), and the fresh values at ``x``, last."""

    def run(f, x0, rng, options):
        opt, end = zovh_opt.Optimizer(x0, rng=rng, options=options), []
        while not opt.done:
            points = np.asarray(opt.ask())
            final = opt._pending == "final"
            values = [f(p) for p in points]
            opt.tell(values)
            if final:
                end.append((points, values))
        return opt.result(), end

    return run
