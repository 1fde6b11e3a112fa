"""hessian-error: Frobenius error of ZO Hessian estimators along descent trajectories.

The paper's Fig. 2 (Sec. 6.1, Appx. F.1): the Stein, central-difference and ZoVH estimators
at ``d = 5000`` along gradient-descent trajectories on a quadratic, Rosenbrock and
Styblinski-Tang, fast and slow (the paper does not give the descent's step, and query reuse
pays only while the iterate moves little). Errors come from Gram matrices and
Hessian-vector products in ``O(M^2 d)``, no ``d x d`` array. The protocol in full:
``docs/benchmarks/paper-experiments.md``, *Hessian estimation error*.
"""

from __future__ import annotations

import argparse
from collections import deque
from typing import Any

import numpy as np

from .. import problems
from ..estimators import hessian_terms
from ._common import Report, fmt, pyplot, run_jobs

NAME = "hessian-error"

# problem -> (function, gradient-descent step size); starts are x0 ~ N(0, I)
PROBLEMS = {
    "quadratic": (problems.RotatedQuadratic(condition=100.0, seed=0), 1e-2),
    "rosenbrock": (problems.rosenbrock, 5e-5),
    "styblinski-tang": (problems.styblinski_tang, 1e-2),
}
SPEEDS = {"fast": 1.0, "slow": 1e-3}  # multipliers of the step size above
ESTIMATORS = ("stein-2", "stein-3", "central-difference", "zovh N=1", "zovh N=6")
PAPER_RATIO = {"quadratic": 8.0, "rosenbrock": 8.0, "styblinski-tang": 3.4}  # CD / ZoVH N=1


def frobenius_error(U: Any, c: Any, a: float, uHu: Any, trace: float, frobenius: float) -> float:
    r""":math:`\|\sum_m c_m u_m u_m^T + a I - H\|_F` from ``G = U U^T``, ``u_m^T H u_m``,
    :math:`\mathrm{tr} H` and :math:`\|H\|_F`:

    .. math:: \|\hat H\|_F^2 = c^T (G \circ G) c + 2 a \sum_m c_m G_{mm} + a^2 d, \qquad
              \mathrm{tr}(\hat H H) = \sum_m c_m u_m^T H u_m + a\, \mathrm{tr} H .
    """
    G = U @ U.T
    d = U.shape[1]
    estimate_sq = c @ (G * G) @ c + 2 * a * (c @ np.diag(G)) + a * a * d
    cross = c @ uHu + a * trace
    return float(np.sqrt(max(estimate_sq - 2 * cross + frobenius**2, 0.0)))


def trajectory(job: tuple[str, str, int, dict[str, Any]]) -> dict[str, list[float]]:
    """Errors of every estimator at the test points of one trajectory."""
    name, speed, seed, s = job
    f, step = PROBLEMS[name]
    step *= SPEEDS[speed]
    rng = np.random.default_rng(seed)
    d, K, mu, n_max = s["d"], s["K"], s["mu"], max(s["histories"])
    x = rng.standard_normal(d)
    kept: deque[tuple[np.ndarray, np.ndarray]] = deque(maxlen=n_max)
    errors: dict[str, list[float]] = {e: [] for e in ESTIMATORS}
    first, every = n_max - 1, s["every"]
    for t in range(first + every * (s["points"] - 1) + 1):
        U = rng.standard_normal((K, d))
        y = f(x + mu * U)
        kept.append((U, y))
        if t >= first and (t - first) % every == 0:
            f0, y_minus = f(x), f(x - mu * U)
            trace, frob = float(f.hessian_trace(x)), float(f.hessian_frobenius(x))
            U_all = np.concatenate([u for u, _ in kept])
            uHu_all = np.array([u @ f.hvp(x, u) for u in U_all])
            uHu = uHu_all[-K:]
            for kind in ("stein-2", "stein-3", "central-difference"):
                c, a = hessian_terms(kind, y, mu, f0=f0, y_minus=y_minus)
                errors[kind].append(frobenius_error(U, c, a, uHu, trace, frob))
            for n in s["histories"]:
                rows = n * K
                c, a = hessian_terms("zovh", np.concatenate([v for _, v in kept])[-rows:], mu)
                errors[f"zovh N={n}"].append(
                    frobenius_error(U_all[-rows:], c, a, uHu_all[-rows:], trace, frob)
                )
        x = x - step * f.gradient(x)
    return errors


def settings(quick: bool) -> dict[str, Any]:
    return {
        "d": 5000,
        "K": 3,
        "mu": 0.1,
        "histories": [1, 6],
        "starts": 3 if quick else 20,
        "points": 10 if quick else 25,
        "every": 4,
        "problems": {k: {"function": v[0].name, "gd_step": v[1]} for k, v in PROBLEMS.items()},
        "speeds": SPEEDS,
    }


def run(args: argparse.Namespace) -> int:
    s = settings(args.quick)
    report = Report(args, NAME, "Hessian estimation error (Frobenius norm)")
    cases = [(name, speed) for speed in SPEEDS for name in PROBLEMS]
    jobs = [(name, speed, seed, s) for name, speed in cases for seed in range(s["starts"])]
    results = run_jobs(trajectory, jobs, args.jobs, NAME)
    errors = {f"{n}/{v}": {e: [] for e in ESTIMATORS} for n, v in cases}
    for (name, speed, _, _), result in zip(jobs, results, strict=True):
        for e in ESTIMATORS:
            errors[f"{name}/{speed}"][e].extend(result[e])

    report.text(
        f"d = {s['d']}, K = {s['K']}, mu = {s['mu']}; {s['starts']} starts x0 ~ N(0, I) per "
        f"problem, {s['points']} test points {s['every']} gradient-descent steps apart on each "
        "trajectory. All estimators use the same K directions at a test point; ZoVH N = 6 adds "
        "the queries of the 5 steps before. The quadratic is the rotated one with condition "
        "number 100; Styblinski-Tang is the standard function (linear coefficient 5). "
        "Trajectories: `fast` takes gradient steps near 1/L "
        f"({', '.join(f'{n} {v[1]:g}' for n, v in PROBLEMS.items())}), `slow` steps "
        f"{SPEEDS['slow']:g} times those."
    )
    rows = []
    for case, by_estimator in errors.items():
        means = {e: float(np.mean(by_estimator[e])) for e in ESTIMATORS}
        ratio = means["central-difference"] / means["zovh N=1"]
        rows.append(
            [case]
            + [f"{fmt(means[e])} ± {fmt(float(np.std(by_estimator[e])), 2)}" for e in ESTIMATORS]
            + [f"{ratio:.1f}x", f"{PAPER_RATIO[case.split('/')[0]]}x"]
        )
    report.table(
        ["problem / trajectory", *ESTIMATORS, "CD / ZoVH N=1", "paper"],
        rows,
        "Mean ± standard deviation of the error over all test points",
    )

    plt = pyplot()
    fig, axes = plt.subplots(len(SPEEDS), len(PROBLEMS), figsize=(5 * len(PROBLEMS), 4.5 * 2))
    for ax, case in zip(axes.ravel(), errors, strict=True):
        ax.boxplot([errors[case][e] for e in ESTIMATORS], whis=1.5)
        ax.set_xticks(range(1, len(ESTIMATORS) + 1), ESTIMATORS, rotation=30, ha="right")
        ax.set_yscale("log")
        ax.set_title(case)
        ax.set_ylabel("||H_hat - H||_F")
    fig.tight_layout()
    report.figure(fig)
    path = report.write(s, errors)
    print(path.read_text())
    return 0
