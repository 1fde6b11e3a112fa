"""tuning: the effect of each ZoVH option (learning rate, lambda, K, N, mu) on real runs.

The user guide's figure. One problem, the rotated quadratic of condition 100
(`zovh_opt.problems.RotatedQuadratic`) in ``d = 1000`` from ``x0 ~ N(0, I)``, a budget of
evaluations (not iterations: ``K`` changes the evaluations per iteration), and one option varied
at a time around a base setting (the paper's defaults, ``learning_rate = 1e-5``). The runs go
through `zovh_opt.Optimizer`, so the safeguard acts as it does for a user; restarts are counted.
The curves show the true ``f`` at the iterate, evaluated outside the budget, median over seeds.

Panels: the learning rate (and ``"auto"``); lambda with ``learning_rate / lambda`` held fixed (the
effective gradient step, see the theory page); ``K``; ``N``; ``mu`` on the noiseless objective;
``mu`` when every value carries Gaussian noise of standard deviation ``NOISE``.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from .._driver.optimizer import Optimizer
from ..problems import RotatedQuadratic
from ._common import Report, fmt, pyplot, run_jobs

NAME = "tuning"
PROBLEM = RotatedQuadratic(condition=100.0, seed=0)
BASE = {
    "learning_rate": 1e-5,
    "curvature": "off",  # the paper's iteration, whose options these are
    "regularization": 0.1,
    "n_directions": 3,
    "history": 4,
}
NOISE = 10.0
# panel -> (title, option varied, its values)
PANELS: dict[str, tuple[str, str, list[Any]]] = {
    "learning_rate": ("learning rate", "learning_rate", [3e-6, 1e-5, 3e-5, 1e-4, 1e-3, "auto"]),
    "regularization": (
        "lambda, with learning_rate / lambda = 1e-4",
        "regularization",
        [0.01, 0.1, 1.0, 10.0],
    ),
    "n_directions": ("K (evaluations per iteration)", "n_directions", [3, 6, 12, 24]),
    "history": ("N (iterations of queries reused)", "history", [1, 2, 4, 8]),
    "smoothing": ("mu, noiseless", "smoothing", [1e-3, 1e-2, 1e-1, 1.0]),
    "smoothing_noisy": (f"mu, noise sigma = {NOISE:g}", "smoothing", [1e-3, 1e-2, 1e-1, 1.0]),
}


def settings_for(quick: bool) -> dict[str, Any]:
    if quick:
        return {"d": 200, "budget": 3000, "seeds": 1, "points": 20}
    return {"d": 1000, "budget": 15000, "seeds": 3, "points": 50}


def options_for(panel: str, value: Any) -> dict[str, Any]:
    """The base options with the panel's option set to ``value``."""
    option = PANELS[panel][1]
    options = {**BASE, option: value}
    if panel == "regularization":  # the effective step learning_rate / lambda held fixed
        options["learning_rate"] = 1e-4 * value
    return options


def curve(job: tuple[str, Any, int, dict[str, Any]]) -> dict[str, Any]:
    """True ``f`` at the iterate on a grid of evaluation counts, and the number of restarts."""
    panel, value, seed, s = job
    sigma = NOISE if panel == "smoothing_noisy" else 0.0
    x0 = np.random.default_rng(seed).standard_normal(s["d"])
    noise = np.random.default_rng(10_000 + seed)
    options = {**options_for(panel, value), "maxfev": s["budget"], "maxiter": 10**8}
    opt = Optimizer(x0, "zovh", options=options, rng=seed)
    grid = np.linspace(0, s["budget"], s["points"] + 1)
    values = np.full(grid.size, np.nan)
    values[0] = float(PROBLEM(x0))
    filled = 1
    while not opt.done:
        points = opt.ask()
        opt.tell(PROBLEM(points) + sigma * noise.standard_normal(points.shape[0]))
        while filled < grid.size and opt.nfev >= grid[filled]:
            values[filled] = float(PROBLEM(opt.x))
            filled += 1
    values[filled:] = float(PROBLEM(opt.x))
    return {"values": values.tolist(), "restarts": len(opt.restarts), "nfev": opt.nfev}


def label(value: Any) -> str:
    return value if isinstance(value, str) else f"{value:g}"


def run(args: argparse.Namespace) -> int:
    s = settings_for(args.quick)
    jobs = [
        (panel, value, seed, s)
        for panel, (_, _, values) in PANELS.items()
        for value in values
        for seed in range(s["seeds"])
    ]
    report = Report(args, NAME, "The effect of each ZoVH option")
    outcomes = run_jobs(curve, jobs, args.jobs, NAME)
    grouped: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for (panel, value, _, _), outcome in zip(jobs, outcomes, strict=True):
        grouped.setdefault(panel, {}).setdefault(label(value), []).append(outcome)

    report.text(
        f"Rotated quadratic of condition 100, d = {s['d']}, x0 ~ N(0, I), budget "
        f"{s['budget']} evaluations, {s['seeds']} seed(s); base options {BASE}. One option "
        "varies per panel. f is the true value at the iterate (median over seeds); restarts "
        "are the safeguard's, summed over seeds."
    )
    plt = pyplot()
    fig, axes = plt.subplots(2, 3, figsize=(14, 7.5), sharey=True)
    grid = np.linspace(0, s["budget"], s["points"] + 1)
    rows = []
    for ax, (panel, (title, _, _)) in zip(axes.flat, PANELS.items(), strict=True):
        for name, runs in grouped[panel].items():
            median = np.median([r["values"] for r in runs], axis=0)
            restarts = sum(r["restarts"] for r in runs)
            ax.semilogy(grid, median, label=f"{name} ({restarts} restarts)" if restarts else name)
            rows.append((title, name, fmt(median[-1]), restarts))
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("evaluations")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    for ax in axes[:, 0]:
        ax.set_ylabel("f at the iterate")
    fig.tight_layout()
    report.table(["panel", "value", "final f (median)", "restarts"], rows)
    report.figure(fig)
    md = report.write({**s, "base": BASE, "noise": NOISE}, grouped)
    print(md.read_text())
    return 0
