"""Item 7 of the driver issue: the ``disp`` table, the progress bar and ``trace``."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import zovh_opt
from zovh_opt._methods.zovh_preconditioned import default_pairs
from zovh_opt._noise.monitor import measurements
from zovh_opt.tuning import DEFAULT

D = 40


def sphere(x):
    return float(x @ x)


def test_disp_prints_a_table_then_a_summary(capsys):
    options = {"maxiter": 40, "disp": True, "quasi_newton": False}  # the method's rows
    zovh_opt.minimize(sphere, np.ones(D), rng=0, options=options)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["nit", "nfev", "f", "estimate", "step", "norm", "lr", "time", "s"]
    rows = [line.split() for line in lines[1:] if line.split()[0].isdigit()]
    assert [int(r[0]) for r in rows] == [1, 2, 4, 6] + list(range(8, 41, 2))  # 40 // 20 = 2
    n = 2 * default_pairs(D)  # points per iteration
    assert [int(r[1]) for r in rows][:2] == [DEFAULT.noise.PROBE + n, DEFAULT.noise.PROBE + 2 * n]
    assert any(line.startswith("Maximum number of iterations has been exceeded.") for line in lines)
    assert any(f"Function evaluations: {measurements(40) + 40 * n + 1}" in line for line in lines)


def test_disp_true_without_maxiter_prints_about_20_rows_of_the_budget(capsys):
    n = 2 * default_pairs(D)
    options = {"maxfev": 100 * n, "disp": True, "quasi_newton": False}  # the method's rows
    zovh_opt.minimize(sphere, np.ones(D), rng=0, options=options)
    rows = [ln.split() for ln in capsys.readouterr().out.splitlines() if ln[:8].strip().isdigit()]
    every = (100 * n - 1) // n // 20  # iterations maxfev pays for (1 final reserved), over 20
    assert [int(r[0]) for r in rows][1:4] == [every, 2 * every, 3 * every]


def test_disp_every_n_iterations(capsys):
    zovh_opt.minimize(sphere, np.ones(D), rng=0, options={"maxiter": 23, "disp": 10})
    rows = [ln.split() for ln in capsys.readouterr().out.splitlines() if ln[:8].strip().isdigit()]
    assert [int(r[0]) for r in rows] == [1, 10, 20, 23]


def test_disp_reports_restarts(capsys):
    zovh_opt.minimize(
        lambda x: float(x @ x),
        np.ones(1000),
        rng=0,
        options={"learning_rate": 1e-2, "maxiter": 60, "disp": 30},
    )
    out = capsys.readouterr().out
    assert "restart at nit" in out and "learning rate now 0.0025" in out


def test_disp_false_prints_nothing(capsys):
    zovh_opt.minimize(sphere, np.ones(D), options={"maxiter": 5})
    assert capsys.readouterr().out == ""


def test_progress_bar(capsys):
    pytest.importorskip("tqdm")
    zovh_opt.minimize(sphere, np.ones(D), options={"maxiter": 25, "progress": True})
    err = capsys.readouterr().err
    assert "25/25" in err


def test_progress_bar_without_tqdm_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    with pytest.raises(ImportError, match=r"pip install 'zovh-opt\[progress\]'"):
        zovh_opt.minimize(sphere, np.ones(D), options={"maxiter": 5, "progress": True})


def test_trace_records_every_iteration():
    opt = zovh_opt.Optimizer(np.ones(D), rng=0, options={"maxiter": 15, "learning_rate": 1e-3})
    means = []
    while not opt.done:
        points = opt.ask()
        values = [sphere(p) for p in points]
        if points.shape[0] == 3:
            means.append(sum(values) / 3)
        opt.tell(values)
    trace = opt.result().trace
    assert trace["nit"].tolist() == list(range(1, 16)) and trace["nit"].dtype == np.int64
    assert trace["nfev"].tolist() == list(range(3, 46, 3))
    np.testing.assert_allclose(trace["fun"], means, rtol=1e-15)


def test_step_norm_is_the_length_of_the_step():
    for method in ("zovh", "zo-sgd"):
        opt = zovh_opt.Optimizer(np.ones(D), method, rng=0, options={"learning_rate": 1e-3})
        for _ in range(6):
            before = np.array(opt.x, copy=True)
            points = opt.ask()
            opt.tell([sphere(p) for p in points])
            assert opt.step_norm == pytest.approx(np.linalg.norm(opt.x - before), rel=1e-9)


def test_disp_rows_count_again_when_the_quasi_newton_phase_hands_over(capsys):
    """The phase's iterations are gradients (d + 1 evaluations and a line search): from the
    method's first iteration on, the rows are a twentieth of the iterations the method's
    evaluations left pay for, counted from the hand-over."""
    q, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((D, D)))
    H = (q * np.linspace(1.0, 30.0, D)) @ q.T  # rotated: the phase takes a few dozen steps
    f = lambda x: float(x @ H @ x)  # noqa: E731
    options = {"maxfev": 20_000, "noisy": False}
    opt = zovh_opt.Optimizer(np.ones(D), rng=0, options=options)
    while opt._parts.quasi_newton is None or not opt._parts.quasi_newton.done:
        opt.tell([f(p) for p in opt.ask()])
    nit, told, per = opt.nit, opt._parts.told, opt._parts.method.points_per_iteration
    every = (nit + (20_000 - told - opt._parts.returned.reserve) // per) // 20
    res = zovh_opt.minimize(f, np.ones(D), rng=0, options={**options, "disp": True})
    assert (
        res.quasi_newton["nit"] == opt._parts.quasi_newton.steps and every < (20_000 // per) // 20
    )
    rows = [ln.split() for ln in capsys.readouterr().out.splitlines() if ln[:8].strip().isdigit()]
    after = [int(r[0]) for r in rows if int(r[0]) > nit]
    assert after[:3] == [every * k for k in range(after[0] // every, after[0] // every + 3)]
