"""Backend selection: every test that takes ``xp`` runs once per selected array library.

Select with the environment variable ``ZOVH_ARRAY_BACKENDS``, a comma-separated list of
``numpy``, ``array_api_strict``, ``torch``, ``cupy`` (or ``all``); the default is
``numpy,array_api_strict,torch``. A selected backend that is not installed, or ``cupy`` without
a CUDA device, is skipped with the reason. ``ZOVH_TORCH_DEVICE`` (default ``cpu``) picks the
device for torch tensors, e.g. ``cuda``. array-api-strict's arrays live on its second device,
which refuses implicit host conversions and mixed devices as a GPU does, so the CPU suite
catches what only a GPU run found before.
"""

from __future__ import annotations

import os
import signal
from typing import Any

import numpy as np
import pytest

import zovh_opt

# Tests of 2 s or more each (serial, `--durations`, a fresh environment without PyTorch on the
# project's 2-core machine, 2026-11-27) that CI's slow run takes (`bash .ci/run` runs
# `pytest -m slow` too), so that the README's `python -m pytest` stays under two minutes when
# the shared cores are slow: a node id, or its start.
HEAVY = (
    "tests/test_peers.py::test_gradient_estimates_are_unbiased_on_a_quadratic",
    "tests/test_ask_tell.py::test_resume_from_a_checkpoint_is_bit_identical"
    "[array_api_strict-ask-and-tell-zovh-options2]",
    "tests/test_ask_tell.py::test_resume_from_a_checkpoint_is_bit_identical"
    "[array_api_strict-tell-and-ask-zovh-options2]",
    "tests/test_new_starts.py::test_restarts_spend_the_budget_and_return_the_best_run",
    "tests/test_new_starts.py::test_above_d_3_new_starts_alternate_by_the_evaluations",
    "tests/test_noise_detection.py::test_pairs_an_outlier_hit_leave_the_batch",
    "tests/test_noise_detection.py::test_outlier_pairs_are_found_by_their_residuals",
    "tests/test_row_streams.py::test_the_default_at_1e5_is_the_held_run_bit_for_bit",
    "tests/test_row_streams.py::test_without_held_directions_the_peak_is_a_small_multiple_of_d",
    "tests/test_edges.py::test_a_start_on_a_face_of_the_box_converges[100-zo-sgd]",
    "tests/test_history.py::test_seeds_and_vectors_storage_are_bit_identical[zovh-options5-",
    "tests/test_history.py::test_seeds_and_vectors_storage_are_bit_identical[zovh-options6-",
    "tests/test_history.py::test_memory_of_an_iteration_with_the_curvature_model",
    "tests/test_benchmarks.py::test_hessian_error_quick",
    "tests/test_benchmarks.py::test_the_smooth_benchmarks_quick_run",
    "tests/test_benchmarks.py::test_memory_quick",
    "tests/test_step_rule.py::test_every_scale_of_f_reaches_1e_8_with_the_same_evaluations",
    "tests/test_quasi_newton_phase.py::test_noisy_false_with_noise_at_the_origin_moves_the_run",
    "tests/test_properties.py::test_minimize_never_returns_a_nonfinite_x",
    "tests/test_full_curvature.py::test_the_learned_inverse_hessian_is_the_true_one_on_rotated",
    "tests/test_examples.py::test_example_runs[newsvendor.py]",
    "tests/test_theory.py::test_unbiased_on_quadratic[stein_three]",
)


@pytest.hookimpl(tryfirst=True)  # before `-m 'not slow'` deselects
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid.startswith(HEAVY):
            item.add_marker(pytest.mark.slow)


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
        if name == "array_api_strict":  # a device of its own: no implicit host conversion
            self.device = module.Device("device1")
        self.xp = array_api_compat.array_namespace(self.asarray(np.zeros(1)))

    def asarray(self, a, dtype=None):
        a = np.asarray(a, dtype=dtype)
        if self.name == "numpy":
            return a
        if self.name in ("torch", "array_api_strict"):
            return self.module.asarray(a, device=self.device)
        return self.module.asarray(a)

    def to_numpy(self, a) -> np.ndarray:
        if self.name == "torch":
            return a.detach().cpu().numpy()
        if self.name == "cupy":
            return a.get()
        if self.name == "array_api_strict":
            return np.asarray(self.module.asarray(a, device=self.module.Device("CPU_DEVICE")))
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
            final = opt.stage == "final"
            values = [f(p) for p in points]
            opt.tell(values)
            if final:
                end.append((points, values))
        return opt.result(), end

    return run


@pytest.fixture
def python_sigint():
    """Python's own SIGINT handler (``KeyboardInterrupt``) for a test that sends SIGINT, as a
    user's Ctrl-C does: a process started in the background by a non-interactive shell
    (``pytest &``) inherits SIGINT ignored, and Python leaves it so."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture
def tune():
    """``tune("quasi_newton", MAX_EXPANSIONS=0)``: the rest of the test runs with that field of
    `zovh_opt.tuning` changed (as an experiment varies it, through `zovh_opt.tuning.using`)."""
    import contextlib
    import dataclasses

    from zovh_opt import tuning

    with contextlib.ExitStack() as stack:

        def change(part: str, **fields: Any) -> None:
            now = tuning.active()
            new = dataclasses.replace(getattr(now, part), **fields)
            stack.enter_context(tuning.using(dataclasses.replace(now, **{part: new})))

        yield change
