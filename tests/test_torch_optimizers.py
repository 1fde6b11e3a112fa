"""`zovh_opt.torch`: ZoVH, MeZO and HiZOO fine-tuning a model in place (issue #69).

Each step is checked against an independent dense reference: the directions are read back from
the points the closure saw, and the update is the paper's formula written out in NumPy.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from zovh_opt.torch import HiZOO, MeZO, ZoVH  # noqa: E402

MU, LAM = 0.05, 0.5
# ZOVH_TORCH_DEVICE=cuda (nox -s tests_gpu) runs the models on a GPU
DEVICE = torch.device(os.environ.get("ZOVH_TORCH_DEVICE", "cpu"))
if DEVICE.type == "cuda" and not torch.cuda.is_available():
    pytest.skip("torch: no CUDA device", allow_module_level=True)


def small_model(dtype=torch.float64, seed=0):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    return model.to(device=DEVICE, dtype=dtype)


def flat(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).double().cpu().numpy()


class Recorder:
    """A closure: a fixed quadratic of the flat parameters, recording each point it sees."""

    def __init__(self, model, seed=1):
        self.model = model
        n = flat(model).size
        rng = np.random.default_rng(seed)
        B = rng.standard_normal((n, n)) / np.sqrt(n)
        self.A, self.b = B @ B.T + np.eye(n), rng.standard_normal(n)
        self.points = []

    def value(self, x):
        return 0.5 * x @ self.A @ x + self.b @ x

    def __call__(self):
        assert not torch.is_grad_enabled()
        x = flat(self.model)
        self.points.append(x)
        return torch.tensor(self.value(x))


def paper_direction(U, y, mu, lam):
    """Eq. (16) / (122) written out: p = sum_m mu nu_m (1/(lam(M-1)) - u_m.s_{-m}/(M-2) /
    (lam^2 (M-1) + lam nu_m |u_m|^2)) u_m, with nu_m = (y_m - mean y) / mu^2."""
    M = len(y)
    nu = (y - y.mean()) / mu**2
    p = np.zeros(U.shape[1])
    for m in range(M):
        s_without = sum(nu[j] * U[j] for j in range(M) if j != m)
        sq = U[m] @ U[m]
        coefficient = 1 / (lam * (M - 1)) - (U[m] @ s_without) / (M - 2) / (
            lam**2 * (M - 1) + lam * nu[m] * sq
        )
        p += mu * nu[m] * coefficient * U[m]
    return p


@pytest.mark.parametrize("history", [1, 2])
@pytest.mark.parametrize("chunk", [None, 5])
def test_zovh_steps_are_the_papers_product_over_the_kept_queries(history, chunk):
    model = small_model()
    closure = Recorder(model)
    opt = ZoVH(
        model.parameters(),
        lr=0.1,
        smoothing=MU,
        regularization=LAM,
        history=history,
        chunk=chunk,
        seed=3,
    )
    queries = []  # (direction, value) of every query, in order
    for _ in range(3):
        theta = flat(model)
        start = len(closure.points)
        loss = opt.step(closure)
        seen = closure.points[start:]
        assert len(seen) == 3
        U = np.array([(x - theta) / MU for x in seen])
        y = np.array([closure.value(x) for x in seen])
        assert loss == pytest.approx(y.mean(), rel=1e-12)
        # Gaussian directions, new at every step
        assert all(np.linalg.norm(u) > 1 for u in U)
        queries += list(zip(U, y, strict=True))
        kept = queries[-3 * history :]
        p = paper_direction(np.array([u for u, _ in kept]), np.array([v for _, v in kept]), MU, LAM)
        np.testing.assert_allclose(flat(model) - theta, -0.1 * p, rtol=1e-9, atol=1e-12)
    # standard Gaussian components (9 x 26 of them: mean square 1 +- 0.09), none drawn twice
    directions = np.array([u for u, _ in queries])
    assert abs(np.mean(directions**2) - 1) < 0.4
    distances = np.linalg.norm(directions[:, None] - directions[None], axis=-1)
    assert (distances + 10 * np.eye(len(directions)) > 1).all()


def test_mezo_steps_are_spsa_on_antithetic_pairs():
    model = small_model()
    closure = Recorder(model)
    opt = MeZO(model.parameters(), lr=0.05, smoothing=MU, n_directions=2, chunk=7, seed=1)
    for _ in range(3):
        theta = flat(model)
        start = len(closure.points)
        loss = opt.step(closure)
        seen = closure.points[start:]
        assert len(seen) == 4
        plus = [(seen[i] - theta) / MU for i in (0, 2)]
        minus = [(seen[i] - theta) / MU for i in (1, 3)]
        np.testing.assert_allclose(plus, [-m for m in minus], atol=1e-12)
        y = [closure.value(x) for x in seen]
        assert loss == pytest.approx(np.mean(y), rel=1e-12)
        g = sum((y[2 * k] - y[2 * k + 1]) / (2 * MU) * plus[k] for k in range(2)) / 2
        np.testing.assert_allclose(flat(model), theta - 0.05 * g, rtol=0, atol=1e-12)


def test_hizoo_steps_follow_its_preconditioned_update():
    model = small_model()
    closure = Recorder(model)
    alpha = 0.3  # large enough that Sigma moves and preconditions the later steps
    opt = HiZOO(model.parameters(), lr=0.02, smoothing=MU, alpha=alpha, seed=2)
    sigma = np.ones_like(flat(model))
    for _ in range(3):
        theta = flat(model)
        start = len(closure.points)
        loss = opt.step(closure)
        x0, xp, xm = closure.points[start:]
        np.testing.assert_allclose(x0, theta, atol=0)
        u = (xp - theta) / MU * np.sqrt(sigma)  # the query is theta + mu Sigma^{-1/2} u
        np.testing.assert_allclose((xm - theta) / MU * np.sqrt(sigma), -u, atol=1e-10)
        y0, yp, ym = (closure.value(x) for x in (x0, xp, xm))
        assert loss == pytest.approx(y0, rel=1e-12)
        estimate = sigma * (yp - 2 * y0 + ym) / (2 * MU**2) * u * u
        sigma = (1 - alpha) * sigma + alpha * np.abs(estimate)
        step = (yp - ym) / (2 * MU) * u / np.sqrt(sigma)
        np.testing.assert_allclose(flat(model), theta - 0.02 * step, rtol=0, atol=1e-10)
    hessian = torch.cat([opt.state[p]["hessian"].reshape(-1) for p in model.parameters()])
    np.testing.assert_allclose(hessian.cpu().numpy(), sigma, rtol=1e-10)


@pytest.mark.parametrize("method", [ZoVH, MeZO, HiZOO])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
def test_lr_0_leaves_every_parameter_within_its_dtypes_rounding(method, dtype):
    """Perturb and restore is not exact in floating point; the restore is rounded once, from
    float64, so a parameter moves only where a query crossed a power of two."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.Linear(32, 1))
    model.to(device=DEVICE, dtype=dtype)
    x = torch.randn(8, 32, dtype=dtype, device=DEVICE)
    before = flat(model)
    mu = 1e-3
    opt = method(model.parameters(), lr=0.0, smoothing=mu)
    for _ in range(100):
        opt.step(lambda: model(x).float().pow(2).mean())
    moved = np.abs(flat(model) - before)
    scale = np.abs(before) + mu
    eps = torch.finfo(dtype).eps
    assert (moved <= 16 * eps * scale).all(), (moved / scale).max() / eps
    if dtype == torch.float32:
        assert (moved <= 1e-5 * scale).all()


@pytest.mark.parametrize("method", [ZoVH, MeZO, HiZOO])
def test_frozen_parameters_and_groups(method):
    model = small_model(torch.float32)
    frozen = model[0].bias
    frozen.requires_grad_(False)
    still = frozen.detach().clone()
    groups = [{"params": [model[0].weight], "lr": 0.0}, {"params": list(model[2].parameters())}]
    fixed = model[0].weight.detach().clone()
    opt = method(groups + [{"params": [frozen]}], lr=0.01, smoothing=1e-2)
    x = torch.randn(16, 3, device=DEVICE)
    for _ in range(5):
        opt.step(lambda: model(x).pow(2).mean())
    assert torch.equal(frozen, still)  # bit for bit
    assert (model[0].weight - fixed).abs().max() <= 1e-6  # lr 0: back where it was
    assert opt.param_groups[1]["lr"] == 0.01


def test_a_groups_rate_scales_its_update():
    steps = []
    for rates in [(0.01, 0.01), (0.01, 0.03)]:
        model = small_model()
        groups = [
            {"params": [model[0].weight], "lr": rates[0]},
            {"params": [model[2].weight], "lr": rates[1]},
        ]
        for p in (model[0].bias, model[2].bias):
            p.requires_grad_(False)
        before = [model[0].weight.detach().clone(), model[2].weight.detach().clone()]
        ZoVH(groups, lr=1.0, seed=5).step(Recorder(model))
        steps.append([model[0].weight - before[0], model[2].weight - before[1]])
    torch.testing.assert_close(steps[1][0], steps[0][0], rtol=0, atol=0)
    torch.testing.assert_close(steps[1][1], 3 * steps[0][1], rtol=1e-12, atol=1e-15)


def run(method, steps, state=None, model=None, **options):
    model = model or small_model()
    opt = method(model.parameters(), lr=0.01, **options)
    if state is not None:
        opt.load_state_dict(state)
    closure = Recorder(model)
    for _ in range(steps):
        opt.step(closure)
    return model, opt


@pytest.mark.parametrize(
    "method, options",
    [(ZoVH, {"history": 2}), (ZoVH, {}), (MeZO, {"n_directions": 2}), (HiZOO, {"alpha": 0.2})],
)
def test_a_state_dict_resumes_the_run_bit_for_bit(method, options):
    straight, _ = run(method, 8, seed=4, **options)
    model, opt = run(method, 5, seed=4, **options)
    buffer = io.BytesIO()
    torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, buffer)
    buffer.seek(0)
    saved = torch.load(buffer, weights_only=False)
    again = small_model(seed=9)
    again.load_state_dict(saved["model"])
    resumed, _ = run(method, 3, state=saved["opt"], model=again, seed=0, **options)
    assert np.array_equal(flat(resumed), flat(straight))
    other, _ = run(method, 8, seed=5, **options)
    assert not np.array_equal(flat(other), flat(straight))  # the seed sets the run


def test_a_state_dict_of_another_optimizer_is_refused():
    _, opt = run(MeZO, 1)
    with pytest.raises(ValueError, match="not a ZoVH's.*MeZO"):
        ZoVH(small_model().parameters(), lr=0.1).load_state_dict(opt.state_dict())


@pytest.mark.parametrize(
    "options, match",
    [
        ({"lr": -1.0}, "lr must be"),
        ({"lr": float("inf")}, "lr must be a finite number"),
        ({"smoothing": 0.0}, "smoothing must"),
        ({"smoothing": float("inf")}, "smoothing must"),
        ({"n_directions": 2}, "history \\* n_directions must be >= 3"),
        ({"seed": -1}, "seed must"),
        ({"regularization": float("nan")}, "regularization must"),
        ({"history": 0}, "history must"),
    ],
)
def test_bad_arguments_name_themselves(options, match):
    with pytest.raises(ValueError, match=match):
        ZoVH(small_model().parameters(), **{"lr": 0.1, **options})


def test_hizoo_alpha_and_a_missing_closure():
    with pytest.raises(ValueError, match="alpha must be a number in"):
        HiZOO(small_model().parameters(), lr=0.1, alpha=2.0)
    with pytest.raises(ValueError, match="needs a closure"):
        MeZO(small_model().parameters(), lr=0.1).step()


@pytest.mark.parametrize("method", [ZoVH, MeZO, HiZOO])
def test_a_loss_that_is_not_finite_skips_the_step_and_restores(method):
    model = small_model()
    before = flat(model)
    calls = []

    def closure():
        calls.append(1)
        return torch.tensor(float("inf") if len(calls) == 2 else 1.0)

    opt = method(model.parameters(), lr=0.1)
    with pytest.warns(RuntimeWarning, match="step was skipped"):
        assert np.isnan(opt.step(closure))
    np.testing.assert_allclose(flat(model), before, rtol=0, atol=1e-15)
    assert opt.skipped_steps == 1


def test_a_step_holds_a_few_chunks_not_a_copy_of_the_model(monkeypatch):
    """The optimizer's buffers are chunks: K + 1 directions and two float64 sums per worker,
    whatever the model's size (on a CPU they stay between sweeps, so a worker's allocator does
    not grow)."""
    from zovh_opt.torch._inplace import Workspace

    model = torch.nn.Linear(1000, 100, device=DEVICE)  # 100 100 parameters
    opt = ZoVH(model.parameters(), lr=1e-3, chunk=4096, history=2)
    held, peak = [], [0]
    original = Workspace.buffer

    def buffer(self, *args):
        out = original(self, *args)
        peak[0] = max(peak[0], self.held_bytes())
        return out

    monkeypatch.setattr(Workspace, "buffer", buffer)

    def closure():
        held.append(sum(w.held_bytes() for w in opt.directions.workspaces))
        return model(torch.ones(1, 1000, device=DEVICE)).pow(2).mean()

    for _ in range(3):
        opt.step(closure)
    # per worker thread: K + 1 = 4 float32 direction chunks and 2 float64 sums
    per_worker = 4 * 4096 * 4 + 2 * 4096 * 8
    assert peak[0] == per_worker
    assert max(held) <= len(opt.directions.workspaces) * per_worker


def test_importing_zovh_opt_needs_no_torch_and_zovh_opt_torch_says_how_to_install():
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import zovh_opt\n"
        "try:\n    import zovh_opt.torch\nexcept ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'zovh-opt[torch]'" in out.stdout


def test_an_opt_model_from_a_config_learns_under_zovh():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.OPTConfig(
        vocab_size=32,
        hidden_size=16,
        num_hidden_layers=1,
        ffn_dim=32,
        num_attention_heads=2,
        max_position_embeddings=16,
        word_embed_proj_dim=16,
    )
    model = transformers.OPTForCausalLM(config).eval().to(DEVICE)
    tokens = torch.arange(8, device=DEVICE).repeat(4, 1) % 32  # a sequence to memorise

    def closure():
        return model(input_ids=tokens, labels=tokens).loss

    opt = ZoVH(model.parameters(), lr=2e-3, smoothing=1e-2, seed=0)
    first = closure().item()
    for _ in range(150):
        opt.step(closure)
    assert closure().item() < first - 0.1
