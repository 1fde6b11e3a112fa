"""Checkpoints are arrays and plain data: safe to load, checked on load, written atomically."""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import pickle
import zipfile

import numpy as np
import pytest

import zovh_opt
from zovh_opt import CheckpointError, Optimizer
from zovh_opt._driver import checkpoint
from zovh_opt.problems import rosenbrock

D = 30


def sphere(x):
    return float(x @ x)


def mid_run(**options):
    """A ZoVH run saved between an ask and its tell, with one value of the ask obtained."""
    opt = Optimizer(np.linspace(-1, 1, D), rng=3, options={"learning_rate": 1e-3, **options})
    for _ in range(7):
        points = opt.ask()
        opt.tell([sphere(p) for p in points])
    opt.ask()
    opt._partial[0] = 1.5  # as `run` leaves it when fun raised at the second point
    return opt


def tree(opt):
    """The state a checkpoint of ``opt`` holds, detached from the live run."""
    state = copy.deepcopy(opt._state())
    del state["elapsed"]
    return state


def assert_same_tree(a, b, where="state"):
    if isinstance(a, dict):
        assert isinstance(b, dict) and sorted(a) == sorted(b), where
        for k in a:
            assert_same_tree(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), where
        for i, (u, v) in enumerate(zip(a, b, strict=True)):
            assert_same_tree(u, v, f"{where}[{i}]")
    elif hasattr(a, "shape") or hasattr(a, "typecode"):
        u, v = np.asarray(a), np.asarray(b)
        assert u.dtype == v.dtype and np.array_equal(u, v, equal_nan=True), where
    elif isinstance(a, float) and a != a:
        assert b != b, where
    else:
        assert a == b, where


@pytest.mark.parametrize(
    "method, options",
    [
        ("zovh", {}),
        ("zovh", {"directions": "seeds", "product": "decoupled", "history": 2, "disp": True}),
        ("zovh", {"learning_rate": "auto", "maxiter": 40}),
        ("zovh", {"learning_rate": "auto", "directions": "seeds", "history": 3}),
        ("hizoo", {"hessian_smoothing": 0.1}),
        ("zoar", {}),
    ],
)
def test_a_checkpoint_loads_to_the_state_saved(method, options, tmp_path):
    opt = Optimizer(
        np.linspace(-1, 1, D), method, rng=3, options={"learning_rate": 1e-3, **options}
    )
    for _ in range(25):  # with "auto": in the middle of the learning-rate search
        points = opt.ask()
        opt.tell([sphere(p) for p in points])
    opt.ask()
    opt.save(tmp_path / "run.npz")
    assert_same_tree(tree(opt), tree(Optimizer.load(tmp_path / "run.npz")))


def test_the_file_is_an_npz_with_a_json_header_and_a_checksum(tmp_path):
    mid_run().save(tmp_path / "run.npz")
    with np.load(tmp_path / "run.npz", allow_pickle=False) as npz:
        header = json.loads(npz["header.json"])
        ring = npz[header["state"]["step"]["queries"]["ring"]["$array"]]
    assert header["format"] == "zovh-opt checkpoint" and header["version"] == 1
    assert header["zovh_opt"] == zovh_opt.__version__
    assert header["state"]["space"] == {
        "namespace": "numpy",
        "device": "cpu",
        "dtype": "float64",
        "dim": D,
    }
    assert ring.shape == (12, D) and ring.dtype == np.float64
    comment = zipfile.ZipFile(tmp_path / "run.npz").comment
    assert len(comment) == 64 and int(comment, 16) >= 0  # the SHA-256 of the bytes before it
    (tmp_path / "plain").write_bytes(b"")  # the permissions any new file gets (the umask's)
    assert os.stat(tmp_path / "run.npz").st_mode == os.stat(tmp_path / "plain").st_mode


def test_a_pickle_is_refused_without_running_its_code(tmp_path):
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    path = tmp_path / "old.pkl"
    path.write_bytes(pickle.dumps(Payload()))
    with pytest.raises(CheckpointError, match="is a pickle, as zovh-opt 0.1 wrote"):
        Optimizer.load(path)
    assert not marker.exists()


def test_every_flipped_bit_and_every_truncation_is_detected(tmp_path):
    """Thousands of damaged copies: each loads to the state saved or raises CheckpointError."""
    opt = mid_run()
    original = tmp_path / "run.npz"
    opt.save(original)
    expected = tree(opt)
    data = original.read_bytes()
    rng = np.random.default_rng(0)
    damaged = tmp_path / "damaged.npz"
    outcomes = {"error": 0, "same": 0}

    def check(blob):
        damaged.write_bytes(blob)
        try:
            loaded = Optimizer.load(damaged)
        except CheckpointError:
            outcomes["error"] += 1
            return
        assert_same_tree(expected, tree(loaded))
        outcomes["same"] += 1

    for position in rng.integers(0, len(data), size=3000):
        blob = bytearray(data)
        blob[position] ^= 1 << int(rng.integers(8))
        check(bytes(blob))
    for length in range(0, len(data), 7):
        check(data[:length])
    check(data + b"\0")
    assert outcomes["error"] >= 3000  # only a flipped letter case in the checksum can load


def rewrite(path, edit):
    """``path`` with its header edited by ``edit`` and a valid checksum: a crafted file."""
    with zipfile.ZipFile(path) as archive:
        members = {info.filename: archive.read(info) for info in archive.infolist()}
    header = json.loads(members["header.json"])
    edit(header)
    members["header.json"] = json.dumps(header).encode()
    with open(path, "w+b") as file:
        with zipfile.ZipFile(file, "w") as archive:
            archive.comment = b"0" * 64
            for name, data in members.items():
                archive.writestr(name, data)
        size = file.tell()
        digest = checkpoint._sha256(file, size - 64)
        file.seek(size - 64)
        file.write(digest.encode())


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda h: h.update(version=2), "format version 2; this zovh-opt .* reads version 1"),
        (lambda h: h.update(format="other"), "is not a zovh-opt checkpoint"),
        (lambda h: h["state"].update(method="newton"), "inconsistent state: method must be"),
        (  # cupy where it is installed has no device "cpu"
            lambda h: h["state"]["space"].update(namespace="cupy"),
            "no device 'cpu'" if importlib.util.find_spec("cupy") else "arrays of cupy",
        ),
        (lambda h: h["state"]["space"].update(device="tpu:3"), "no device 'tpu:3'"),
        (lambda h: h["state"]["space"].update(namespace="this"), "unknown array library 'this'"),
        (lambda h: h["state"]["space"].update(dim=D + 1), "inconsistent state: expected shape"),
        (lambda h: h["state"]["step"].update(x={"$array": "a99"}), "not a valid zovh-opt"),
        (lambda h: h["state"].update(pending=None), "pending ask and its values disagree"),
        (lambda h: h["state"].pop("anchor"), "inconsistent state: 'anchor' is missing"),
        (lambda h: h["state"]["options"].update(maxiter=0), "maxiter must be an integer"),
        (lambda h: h["state"]["step"]["queries"].update(order=[0, 0]), "history's blocks"),
        (lambda h: h["state"]["step"].update(asked=False), "ask and the query history disagree"),
    ],
)
def test_a_crafted_file_with_a_valid_checksum_is_checked(edit, match, tmp_path):
    path = tmp_path / "run.npz"
    mid_run().save(path)
    rewrite(path, edit)
    with pytest.raises(CheckpointError, match=match):
        Optimizer.load(path)


def test_a_cuda_checkpoint_without_cuda_says_so(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    path = tmp_path / "run.npz"
    mid_run().save(path)
    rewrite(path, lambda h: h["state"]["space"].update(namespace="torch", device="cuda:0"))
    with pytest.raises(CheckpointError, match="torch has no device 'cuda:0' in this process"):
        Optimizer.load(path)


def test_not_a_checkpoint(tmp_path):
    for name, data in [("empty", b""), ("text", b"x = 1\n"), ("zip", b"PK\x03\x04" + bytes(99))]:
        (tmp_path / name).write_bytes(data)
        with pytest.raises(CheckpointError):
            Optimizer.load(tmp_path / name)
    with pytest.raises(FileNotFoundError):
        Optimizer.load(tmp_path / "missing.npz")


def test_an_interrupted_save_leaves_the_previous_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "run.npz"
    opt = mid_run()
    opt.save(path)
    saved = tree(opt)
    opt.tell([1.0, 2.0, 3.0])
    calls = []
    write_array = np.lib.format.write_array

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt  # Ctrl-C in the middle of the arrays
        return write_array(*args, **kwargs)

    monkeypatch.setattr(np.lib.format, "write_array", interrupted)
    with pytest.raises(KeyboardInterrupt):
        opt.save(path)
    assert os.listdir(tmp_path) == ["run.npz"]  # no temporary file left behind
    assert_same_tree(saved, tree(Optimizer.load(path)))


@pytest.mark.parametrize(
    "d, opts",
    [
        (D, {"learning_rate": 1e-6, "maxiter": 40}),  # the paper's iteration
        (D, {"maxiter": 40}),  # the full model
        # the diagonal model without held directions: the crash at the 50th call (x0's 2, 3
        # iterations of 16) is mid-ask, with the first pair's norm known and 3 kept
        # iterations to draw again
        (60, {"maxiter": 12, "directions": "seeds"}),
    ],
)
def test_a_run_resumed_from_a_checkpoint_after_an_exception_is_the_same_run(d, opts, tmp_path):
    opts = {**opts, "quasi_newton": False}  # the exception in the method's ask (the phase's:
    # tests/test_quasi_newton_phase.py)
    x0 = np.random.default_rng(0).standard_normal(d)
    whole = zovh_opt.minimize(rosenbrock, x0, rng=5, options=opts)
    calls = []

    def crashes_once(x):
        calls.append(1)
        if len(calls) == 50:
            raise RuntimeError("node lost")
        return rosenbrock(x)

    opt = Optimizer(x0, rng=5, options=opts)
    with pytest.raises(RuntimeError, match="node lost"):
        opt.run(crashes_once)
    assert opt._parts.method.asked
    opt.save(tmp_path / "run.npz")
    res = Optimizer.load(tmp_path / "run.npz").run(rosenbrock)
    assert np.array_equal(res.x, whole.x) and res.fun == whole.fun
    assert (res.nit, res.nfev) == (whole.nit, whole.nfev)
    assert all(np.array_equal(res.trace[k], whole.trace[k]) for k in whole.trace)


def test_a_checkpoint_keeps_a_non_default_device(tmp_path):
    """array-api-strict's second device stands in for a GPU: it is recorded, and the loaded
    run computes there and gives the uninterrupted run's result."""
    xps = pytest.importorskip("array_api_strict")
    device = xps.Device("device1")
    x0 = xps.asarray(np.linspace(-1, 1, D), device=device)

    def fun(x):
        assert x.device == device
        return float(xps.sum(x * x))

    opts = {"maxiter": 12, "learning_rate": 1e-3}
    whole = zovh_opt.minimize(fun, x0, rng=0, options=opts)
    opt = Optimizer(x0, rng=0, options=opts)
    for _ in range(5):
        points = opt.ask()
        opt.tell([fun(points[i, ...]) for i in range(points.shape[0])])
    opt.ask()
    opt.save(tmp_path / "run.npz")
    loaded = Optimizer.load(tmp_path / "run.npz")
    assert loaded._state()["space"]["device"] == str(device)
    res = loaded.run(fun)
    assert res.x.device == device and res.fun == whole.fun
    assert bool(xps.all(res.x == whole.x)) and res.nfev == whole.nfev


@pytest.mark.parametrize("options", [{}, {"learning_rate": 1e-3, "xtol": 1e-9}])
def test_a_loaded_run_stops_on_the_same_xtol_scale(options, tmp_path):
    """The length scale of x0 that xtol multiplies comes back with the run (a checkpoint is
    loaded through an optimizer built at x0 = 0, whose own scale would be sqrt(d))."""
    opt = zovh_opt.Optimizer(np.full(50, 7.0), rng=0, options=options)
    for _ in range(3):
        opt.tell([float(p @ p) for p in opt.ask()])
    opt.save(tmp_path / "run.npz")
    loaded = zovh_opt.Optimizer.load(tmp_path / "run.npz")
    scales = [o._parts.stopping.length_scale(o._parts.method.control) for o in (loaded, opt)]
    assert scales[0] == scales[1] == pytest.approx(7.0 * 50**0.5)
