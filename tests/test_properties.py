"""Property test over random options, bad values and failing objectives (hypothesis).

Whatever the combination, ``minimize`` either raises one of the documented exceptions
(``TypeError`` or ``ValueError`` for bad input) or returns a result whose ``x`` is finite, with
``nfev`` within ``maxfev`` and a known status.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

import zovh_opt

BAD = st.sampled_from([0, -1, -0.5, math.nan, math.inf, -math.inf, "1", None, True, 2.5, [1]])
POSITIVE = st.floats(1e-9, 1e2) | st.sampled_from([1e-300, 1e300])
OPTION_VALUES = {
    "learning_rate": POSITIVE | st.just("auto"),
    "smoothing": POSITIVE,
    "regularization": POSITIVE,
    "n_directions": st.integers(1, 6),
    "history": st.integers(1, 5),
    "product": st.sampled_from(["shared", "decoupled"]),
    "inverse": st.sampled_from(["diagonal", "exact"]),
    "directions": st.sampled_from(["vectors", "seeds"]),
    "maxfev": st.integers(1, 200),
    "maxtime": st.floats(0.01, 10),
    "ftarget": st.floats(-10, 10),
    "ftol": st.floats(1e-6, 1),
    "ftol_window": st.integers(1, 20),
    "flat_iterations": st.integers(1, 6),
    "noisy": st.booleans(),
    "final_evaluations": st.integers(1, 4),
    "max_restarts": st.integers(0, 4),
}
STATUSES = {0, 1, 2, 3, 4, 5, 99}


def objective(kind):
    def f(x):
        s = float(np.sum(x * x))
        if kind == "nan-region" and x[0] > 1.0:
            return math.nan
        if kind == "inf-region" and x[0] < 0.9:
            return math.inf
        if kind == "minus-inf-region" and x[0] < 0.95:
            return -math.inf
        if kind == "never-finite":
            return math.nan
        if kind == "huge":
            return 1e300 * (1.0 + s)
        if kind == "max-float":
            return 1.7e308 if x[0] > 1.0 else -1.7e308
        if kind == "constant":
            return 1.0
        return s

    return f


@st.composite
def options(draw):
    chosen = draw(st.lists(st.sampled_from(sorted(OPTION_VALUES)), unique=True, max_size=6))
    opts = {}
    for name in chosen:
        opts[name] = (
            draw(BAD) if draw(st.booleans()) and draw(st.booleans()) else draw(OPTION_VALUES[name])
        )
    opts["maxiter"] = draw(st.integers(1, 30) | BAD)
    return opts


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    d=st.integers(1, 8),
    method=st.sampled_from(sorted(zovh_opt.METHODS)),
    opts=options(),
    kind=st.sampled_from(
        [
            "sphere",
            "nan-region",
            "inf-region",
            "minus-inf-region",
            "never-finite",
            "huge",
            "constant",
        ]
    ),
    seed=st.integers(0, 2**32),
)
@example(  # found once: the robust spread of residuals near 1e300, squared, overflowed
    d=1,
    method="zovh",
    opts={
        "noisy": True,
        "smoothing": 1.0,
        "directions": "vectors",
        "final_evaluations": 1,
        "maxiter": 1,
    },
    kind="huge",
    seed=0,
)
def test_minimize_never_returns_a_nonfinite_x(d, method, opts, kind, seed):
    x0 = np.ones(d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            res = zovh_opt.minimize(objective(kind), x0, method=method, rng=seed, options=opts)
        except (TypeError, ValueError) as exc:
            event(f"rejected: {type(exc).__name__}")
            return
    event(f"status {res.status}")
    assert res.x.shape == (d,) and np.all(np.isfinite(res.x))
    assert res.status in STATUSES and isinstance(res.message, str)
    assert isinstance(res.fun, float) and not (res.fun == -math.inf)
    if isinstance(opts.get("maxfev"), int) and not isinstance(opts["maxfev"], bool):
        assert res.nfev <= opts["maxfev"]
    if kind == "sphere" and not opts.get("noisy"):
        assert res.fun == objective(kind)(res.x)
