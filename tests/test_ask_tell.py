"""Item 5 of the driver issue: the ask/tell object, its result, and bit-identical resumes."""

from __future__ import annotations

import numpy as np
import pytest

import zovh_opt
from zovh_opt import Optimizer
from zovh_opt._methods.zovh_preconditioned import default_pairs
from zovh_opt._noise.monitor import measurements  # x0's and the best point's values
from zovh_opt.problems import rosenbrock

D = 40


def drive(opt, fun, iterations=None, xp=None):
    """Run ``opt`` for ``iterations`` ask/tell rounds (None: until done)."""
    n = 0
    while not opt.done and (iterations is None or n < iterations):
        points = opt.ask()
        opt.tell([float(fun(points[i, ...])) for i in range(points.shape[0])])
        n += 1
    return opt


def assert_same_result(a, b, xp):
    assert bool(xp.all(a.x == b.x))
    for key in ("fun", "nit", "nfev", "status", "message", "learning_rate", "restarts"):
        assert a[key] == b[key], key
    for key in ("nit", "nfev", "fun"):
        assert a.trace[key].dtype == b.trace[key].dtype, key
        assert np.array_equal(a.trace[key], b.trace[key]), key


@pytest.mark.parametrize(
    "method, options",
    [
        ("zovh", {}),
        ("zovh", {"directions": "seeds", "inverse": "exact"}),
        ("zovh", {"product": "decoupled", "history": 2}),
        ("zovh", {"learning_rate": "auto"}),
        ("zovh", {"noisy": True}),
        ("zo-sgd", {"learning_rate": 1e-5}),
    ],
)
def test_ask_tell_loop_is_minimize(method, options):
    opts = {"maxiter": 60, "learning_rate": 1e-6, **options}
    x0 = np.random.default_rng(0).standard_normal(D)
    res = zovh_opt.minimize(rosenbrock, x0, method=method, rng=4, options=opts)
    loop = drive(Optimizer(x0, method, rng=4, options=opts), rosenbrock).result()
    assert_same_result(res, loop, np)


@pytest.mark.parametrize(
    "method, options",
    [
        ("zovh", {}),
        ("zovh", {"directions": "seeds"}),
        ("zovh", {"learning_rate": "auto"}),
        ("zovh", {"learning_rate": 3e-5}),  # diverges: restarts on the way
        ("zo-sgd", {"learning_rate": 1e-5}),
        ("zoar", {"directions": "seeds"}),
        ("hizoo", {"hessian_smoothing": 0.1}),
        ("mezo", {}),
    ],
)
@pytest.mark.parametrize("between", ["tell-and-ask", "ask-and-tell"])
def test_resume_from_a_checkpoint_is_bit_identical(method, options, between, tmp_path, backend):
    xp = backend.xp
    opts = {"maxiter": 80, "learning_rate": 1e-6, **options}
    x0 = backend.asarray(np.random.default_rng(0).standard_normal(D))
    whole = drive(Optimizer(x0, method, rng=11, options=opts), rosenbrock).result()

    first = drive(Optimizer(x0, method, rng=11, options=opts), rosenbrock, iterations=33)
    pending = None
    if between == "ask-and-tell":
        pending = first.ask()
    first.save(tmp_path / "run.npz")
    del first
    resumed = Optimizer.load(tmp_path / "run.npz")
    if pending is not None:
        resumed.tell([float(rosenbrock(pending[i, ...])) for i in range(pending.shape[0])])
    second = drive(resumed, rosenbrock).result()
    if options.get("learning_rate") == 3e-5:
        assert whole.restarts, "this case must exercise the safeguard"
    assert_same_result(whole, second, xp)


def test_result_before_the_end_is_the_best_so_far():
    opt = Optimizer(np.ones(D), rng=0, options={"maxiter": 10, "learning_rate": 1e-3})
    assert np.isnan(opt.result().fun) and opt.result().status == -1
    drive(opt, lambda x: float(x @ x), iterations=4)
    res = opt.result()
    assert res.status == -1 and not res.success and res.nit == 4 and res.nfev == 12
    assert res.fun == float(res.x @ res.x)


def test_protocol_errors():
    opt = Optimizer(np.zeros(D), rng=0, options={"maxiter": 1})
    with pytest.raises(RuntimeError, match="preceding ask"):
        opt.tell(np.zeros(3))
    assert opt.ask().shape == (2, D)  # x0 twice: is the objective noisy (noisy="auto")?
    opt.tell([0.0, 0.0])  # no
    n = opt.ask().shape[0]
    with pytest.raises(RuntimeError, match="twice"):
        opt.ask()
    with pytest.raises(ValueError, match=f"expects {n} values"):
        opt.tell(np.zeros(n + 1))
    with pytest.raises(TypeError, match="values must be a sequence of real numbers"):
        opt.tell(3.0)
    opt.tell(np.zeros(n))
    final = opt.ask()
    assert final.shape == (1, D)  # the final evaluation at the iterate
    opt.tell([0.0])
    assert opt.done
    with pytest.raises(RuntimeError, match="the run has ended"):
        opt.ask()


def test_elapsed_time_carries_over_a_checkpoint(tmp_path):
    opt = Optimizer(np.ones(D), rng=0)
    opt._parts.clock_start(100.0)  # as if it had run for 100 s
    opt.save(tmp_path / "run.npz")
    assert Optimizer.load(tmp_path / "run.npz").elapsed >= 100.0


def test_minimize_resumes_through_run(tmp_path):
    opts = {"maxiter": 50, "learning_rate": 1e-3}
    whole = zovh_opt.minimize(lambda x: float(x @ x), np.ones(D), rng=2, options=opts)
    opt = drive(Optimizer(np.ones(D), rng=2, options=opts), lambda x: float(x @ x), 20)
    opt.save(tmp_path / "run.npz")
    res = Optimizer.load(tmp_path / "run.npz").run(lambda x: float(x @ x))
    assert_same_result(whole, res, np)


@pytest.mark.parametrize("mode", ["serial", "vectorized", "map-like"])
def test_fun_may_write_into_its_argument(mode):
    """0.1.0 gave res.fun = 9.76 and f(res.x) = 0 here: fun received the optimizer's rows."""

    def vandal(x):
        value = np.sum(x * x, axis=-1)
        x[...] = 0.0
        return value

    kwargs = {"vectorized": True} if mode == "vectorized" else {}
    if mode == "map-like":
        kwargs = {"workers": lambda func, xs: [func(x) for x in xs]}
    res = zovh_opt.minimize(vandal, np.ones(D), rng=0, options={"maxiter": 30}, **kwargs)
    clean = zovh_opt.minimize(  # the same sums (a batch's rows round as the batch's sum does)
        (lambda x: np.sum(x * x, axis=-1))
        if mode == "vectorized"
        else (lambda x: float(np.sum(x * x))),
        np.ones(D),
        rng=0,
        options={"maxiter": 30},
        vectorized=mode == "vectorized",
    )
    assert res.fun == float(np.sum(res.x * res.x)) and np.array_equal(res.x, clean.x)


def test_fun_may_keep_its_arguments():
    kept, values = [], []

    def collector(x):
        kept.append(x)
        values.append(float(x @ x))
        return values[-1]

    zovh_opt.minimize(collector, np.ones(D), rng=0, options={"maxiter": 20})
    assert len({id(x) for x in kept}) == len(kept)  # each call had its own array
    assert [float(x @ x) for x in kept] == values  # and none was written to afterwards


def test_nothing_handed_out_is_aliased_to_the_run():
    x0 = np.ones(D)
    clean = drive(Optimizer(np.ones(D), rng=0, options={"maxiter": 20}), rosenbrock).result()
    opt = Optimizer(x0, rng=0, options={"maxiter": 20})
    x0[...] = 5.0  # the caller's array is theirs again
    for _ in range(10):
        points = opt.ask()
        values = [float(rosenbrock(p)) for p in points]
        points[...] = 0.0  # so are the points asked
        opt.tell(values)
        opt.x[...] = 7.0  # and the iterate and the result
        opt.result().x[...] = 9.0
    assert_same_result(drive(opt, rosenbrock).result(), clean, np)
    assert clean.fun == float(rosenbrock(clean.x))


def test_pending_gives_the_asked_points_again():
    for method in sorted(zovh_opt.METHODS):
        opt = Optimizer(np.linspace(0, 1, D), method, rng=1, options={"maxiter": 5})
        assert opt.pending is None
        points = opt.ask()
        again = opt.pending
        assert again is not points and np.array_equal(again, points)
        assert [np.array_equal(opt._point(i), points[i]) for i in range(len(points))] == [
            True
        ] * len(points)


def test_torch_x0_with_gradients_is_detached():
    """0.1.0 built an autograd chain as deep as nit, and fun received tensors attached to it."""
    torch = pytest.importorskip("torch")
    x0 = torch.ones(D, dtype=torch.float64, requires_grad=True)
    seen = []

    def f(x):
        seen.append(x.requires_grad or x.grad_fn is not None)
        return float((x * x).sum())

    res = zovh_opt.minimize(f, x0, rng=0, options={"maxiter": 20})
    assert not any(seen) and not res.x.requires_grad and res.x.grad_fn is None
    assert x0.grad is None and bool((x0 == 1).all())


def test_the_result_prints_in_a_few_lines():
    """0.1.0 printed 30 to 318 KB after a 30 000-evaluation run: the whole trace, as lists."""
    res = zovh_opt.minimize(
        lambda x: float(x @ x),
        np.ones(1000),
        rng=0,
        options={"maxfev": 30_001, "maxiter": 10**6, "quasi_newton": False},  # counts: the method's
    )
    per_iteration = 2 * default_pairs(1000)  # 24 points, then 1 final evaluation
    nit = res.nit
    assert res.nfev == measurements(nit) + nit * per_iteration + 1 > 30_001 - per_iteration
    assert len(res.trace["fun"]) == nit
    assert len(repr(res)) < 2000 and len(str(res).splitlines()) < 25


def test_a_stop_between_an_ask_and_its_tell_holds():
    """``stop`` with an ask pending: its values still count, and the next ask is the final one."""
    opt = Optimizer(np.ones(D), rng=0, options={"quasi_newton": False, "noisy": False})
    opt.tell([float(p @ p) for p in opt.ask()])
    points = opt.ask()
    opt.stop(5, "stopped by the caller")
    opt.tell([float(p @ p) for p in points])
    assert opt.stage == "final" and opt.nit == 2 and opt.message == "stopped by the caller"
    final = opt.ask()
    opt.tell([float(p @ p) for p in final])
    assert opt.done and opt.result().status == 5
