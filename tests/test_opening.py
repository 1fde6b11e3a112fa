"""The trust region's opening of a deterministic run at d <= 3 (`TrustRegion.start_opening`):
the region for `OPENING` d evaluations, then the quasi-Newton phase from its centre."""

from __future__ import annotations

import numpy as np
import pytest

import zovh_opt
from zovh_opt._driver.new_starts import new_start
from zovh_opt.tuning import DEFAULT


def ellipsoid(dim):
    """A rotated quadratic with eigenvalues 1 to 1000, its minimum 0 at 0."""
    q, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((dim, dim)))
    h = q @ np.diag(np.logspace(0, 3, dim)) @ q.T
    return lambda x: float(x @ h @ x)


def early_and_result(f, x0, evaluations):
    """The lowest value among the run's first ``evaluations`` and its result."""
    values = []

    def counted(x):
        values.append(f(x))
        return values[-1]

    res = zovh_opt.minimize(counted, x0, rng=0)
    return min(values[:evaluations]), res


@pytest.mark.parametrize("dim", [2, 3])
def test_a_deterministic_run_opens_with_the_region_then_the_phase(dim, tune):
    """x0's two values, the region's `OPENING` d evaluations, then the phase from its centre:
    within those first evaluations the region's model is far below where the phase from x0
    gets (at d = 2 1.6e-26 against 2.8e-11, at d = 3 6.8e-31 against 1.8), and both runs
    converge."""
    f, x0 = ellipsoid(dim), np.ones(dim)
    early = 2 + DEFAULT.trust_region.OPENING * dim
    opened, res = early_and_result(f, x0, early)
    assert res.trust_region["ended"] == "opening"
    assert res.trust_region["nfev"] == DEFAULT.trust_region.OPENING * dim
    assert res.quasi_newton["nfev"] > 0 and res.success and res.fun < 1e-30
    tune("dimensions", OPENING_MAX_DIMENSION=0)
    from_x0, res = early_and_result(f, x0, early)
    assert res.get("trust_region") is None and res.success
    assert opened < 1e-3 * from_x0


def test_not_above_d_3_nor_with_noise_nor_in_a_new_start():
    """d = 4 starts with the phase; x0's values that differ (relative noise) take the noisy
    region, which no phase follows; a new start of ``new_starts`` begins past a run's first
    evaluations, and opens nothing, with ``noisy=False`` too (where nothing measures ``x0``
    first the first stage is chosen as the optimizer is made: it had opened there)."""
    assert DEFAULT.dimensions.OPENING_MAX_DIMENSION == 3
    res = zovh_opt.minimize(ellipsoid(4), np.ones(4), rng=0)
    assert res.get("trust_region") is None and res.quasi_newton["nfev"] > 0
    noise = np.random.default_rng(0)
    opt = zovh_opt.Optimizer(np.ones(2), rng=0, options={"maxfev": 300})
    while not opt.done:
        opt.tell([ellipsoid(2)(p) * (1 + 1e-3 * noise.standard_normal()) for p in opt.ask()])
    assert opt._parts.trust_region.noisy and not opt._parts.trust_region.opened
    draws = np.random.default_rng(0)
    later = new_start(np.ones(2), "zovh", 1, draws, None, {"maxfev": 1000}, None)
    assert not later._parts.may_open
    assert zovh_opt.Optimizer(np.ones(2), rng=0)._parts.may_open
    exact = new_start(np.ones(2), "zovh", 1, draws, None, {"maxfev": 1000, "noisy": False}, None)
    assert exact._parts.trust_region is None and exact._parts.quasi_newton is not None


def test_with_noisy_false_x0_is_the_first_point_of_the_regions_first_ask():
    """Nothing measures x0 before the region: its first ask is x0 and the ``2 d`` points of
    its stencil, and the opening's evaluations count x0's."""
    f, x0 = ellipsoid(2), np.ones(2)
    opt = zovh_opt.Optimizer(x0, rng=0, options={"noisy": False})
    first = np.asarray(opt.ask())
    assert opt.stage == "model" and first.shape == (5, 2) and np.array_equal(first[0], x0)
    opt.tell([f(p) for p in first])
    while not opt.done:
        opt.tell([f(p) for p in opt.ask()])
    res = opt.result()
    assert res.trust_region["ended"] == "opening" and res.trust_region["nfev"] == 20
    assert res.success and res.fun < 1e-30


def test_a_checkpoint_in_the_opening_and_after_it_continues_bit_for_bit(tmp_path):
    """Saved and loaded at every ask of the region's opening and of the phase after it, the
    run gives the same points and result as without."""

    def run(save):
        f = ellipsoid(2)
        opt = zovh_opt.Optimizer(np.array([1.0, -0.5]), rng=0, options={"maxfev": 400})
        asked, saved = [], set()
        while not opt.done:
            if save and opt.stage in ("model", "gradient"):
                opt.save(tmp_path / "run.npz")
                opt = zovh_opt.Optimizer.load(tmp_path / "run.npz")
                saved.add(opt.stage)
            points = np.array(opt.ask(), copy=True)
            asked.append(points)
            opt.tell([f(p) for p in points])
        return asked, opt.result(), saved

    plain, plain_result, _ = run(False)
    again, again_result, saved = run(True)
    assert saved == {"model", "gradient"} and len(plain) == len(again)
    assert all(np.array_equal(a, b) for a, b in zip(plain, again, strict=True))
    assert np.array_equal(plain_result.x, again_result.x) and plain_result.fun == again_result.fun
    assert plain_result.trust_region == again_result.trust_region
