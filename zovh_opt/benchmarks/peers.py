"""peers: when is ZoVH the right tool? Equal evaluation budgets against SciPy and CMA-ES.

Three regimes at equal evaluation budgets (noiseless and noisy at ``d = 10^4``, a budget
below ``d`` at ``10^5``): the default ``zovh`` against L-BFGS-B with finite differences,
Powell (where its ``d x d`` matrix fits in 1 GB) and pycma's sep-CMA-ES, judged by the true
``f`` at the returned point. The protocol in full:
``docs/benchmarks/paper-experiments.md``, *When is ZoVH the right tool?*.
"""

from __future__ import annotations

import argparse
import warnings
from typing import Any

import numpy as np

from .. import problems
from ._common import Budgeted, BudgetExhausted, Report, fmt, pyplot, run_jobs

NAME = "peers"

PROBLEMS = {
    "rotated quadratic": problems.RotatedQuadratic(condition=100.0, seed=0),
    "rosenbrock": problems.rosenbrock,
    "levy": problems.levy,
    "ackley": problems.ackley,
}
CONTENDERS = ("zovh", "L-BFGS-B (FD)", "Powell", "sep-CMA-ES")
POWELL_MEMORY = 1e9  # bytes of the direction matrix above which Powell is not run


def solve(job: tuple[str, str, str, int, dict[str, Any]]) -> dict[str, Any]:
    """Run one contender; return the true f at its returned point and the evaluations used."""
    problem, contender, regime, seed, s = job
    r = s["regimes"][regime]
    f, d, budget, sigma = PROBLEMS[problem], r["d"], r["budget"], r["sigma"]
    if contender == "Powell" and 8 * d * d > POWELL_MEMORY:
        return {
            "f": float("nan"),
            "nfev": 0,
            "note": f"(not run: d x d matrix of {8 * d * d:.0e} B)",
        }
    x0 = np.random.default_rng(seed).standard_normal(d)
    fun = Budgeted(f, budget, sigma, seed=10_000 + seed)
    note = ""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            x = _run(contender, fun, x0, budget, sigma, seed)
        except BudgetExhausted:
            x, note = fun.best_x, "†"
    return {"f": float(f(x)), "nfev": fun.nfev, "note": note}


def _run(contender: str, fun: Budgeted, x0: np.ndarray, budget: int, sigma: float, seed: int):
    if contender == "zovh":
        from .._driver.minimize import minimize

        options = {"learning_rate": "auto", "maxfev": budget, "maxiter": budget}
        if sigma:
            options["noisy"] = True
        return minimize(fun, x0, method="zovh", rng=seed, options=options).x
    if contender == "L-BFGS-B (FD)":
        from scipy.optimize import minimize as scipy_minimize

        return scipy_minimize(fun, x0, method="L-BFGS-B", options={"maxfun": budget}).x
    if contender == "Powell":
        from scipy.optimize import minimize as scipy_minimize

        return scipy_minimize(fun, x0, method="Powell", options={"maxfev": budget}).x
    import cma

    es = cma.CMAEvolutionStrategy(
        x0, 0.5, {"CMA_diagonal": True, "maxfevals": budget, "seed": seed + 1, "verbose": -9}
    )
    while not es.stop():
        candidates = es.ask()
        es.tell(candidates, [fun(c) for c in candidates])
    return es.result.xfavorite if sigma else es.result.xbest


def settings(quick: bool) -> dict[str, Any]:
    scale = 10 if quick else 1
    return {
        "regimes": {
            "noiseless": {"d": 10_000 // scale, "budget": 80_000 // scale, "sigma": 0.0},
            "noisy": {"d": 10_000 // scale, "budget": 80_000 // scale, "sigma": 1.0},
            "small budget": {"d": 100_000 // scale, "budget": 40_000 // scale, "sigma": 0.0},
        },
        "seeds": 1 if quick else 2,
    }


def run(args: argparse.Namespace) -> int:
    s = settings(args.quick)
    report = Report(args, NAME, "ZoVH against SciPy and CMA-ES at equal budgets")
    cases = [(p, c, r) for r in s["regimes"] for p in PROBLEMS for c in CONTENDERS]
    jobs = [(p, c, r, seed, s) for p, c, r in cases for seed in range(s["seeds"])]
    results = run_jobs(solve, jobs, args.jobs, NAME)
    by_case: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for job, result in zip(jobs, results, strict=True):
        by_case.setdefault(job[:3], []).append(result)

    report.text(
        "True f at the returned point, mean over "
        f"{s['seeds']} start(s) x0 ~ N(0, I) (lower is better; f(x0) for reference). Regimes: "
        + "; ".join(
            f"**{name}** d = {r['d']}, {r['budget']} evaluations, sigma = {r['sigma']}"
            for name, r in s["regimes"].items()
        )
        + ". The best value of each row is in bold. †: stopped by the budget in mid-run, "
        "returning the best point it evaluated (for CMA-ES this is the normal end: its own "
        "budget check comes once per generation)."
    )
    data, header = {}, ["regime", "problem", "f(x0)", *CONTENDERS]
    rows = []
    for regime, r in s["regimes"].items():
        for p in PROBLEMS:
            f0 = float(
                np.mean(
                    [
                        PROBLEMS[p](np.random.default_rng(k).standard_normal(r["d"]))
                        for k in range(s["seeds"])
                    ]
                )
            )
            means = {c: float(np.mean([x["f"] for x in by_case[p, c, regime]])) for c in CONTENDERS}
            finite = [v for v in means.values() if v == v]
            best = min(finite) if finite else None
            cells = []
            for c in CONTENDERS:
                notes = {x["note"] for x in by_case[p, c, regime] if x["note"]}
                cell = fmt(means[c])
                if means[c] == best:
                    cell = f"**{cell}**"
                if notes:
                    cell += " " + "; ".join(sorted(notes))
                cells.append(cell)
            rows.append([regime, p, fmt(f0), *cells])
            data[f"{regime}/{p}"] = {"f0": f0, **{c: by_case[p, c, regime] for c in CONTENDERS}}
    report.table(header, rows, "True f at the returned point")

    plt = pyplot()
    fig, axes = plt.subplots(1, len(s["regimes"]), figsize=(5.5 * len(s["regimes"]), 4))
    width = 0.8 / len(CONTENDERS)
    for ax, regime in zip(axes, s["regimes"], strict=True):
        for i, c in enumerate(CONTENDERS):
            ratios = [
                np.mean([x["f"] for x in by_case[p, c, regime]]) / data[f"{regime}/{p}"]["f0"]
                for p in PROBLEMS
            ]
            ax.bar(np.arange(len(PROBLEMS)) + i * width, ratios, width, label=c)
        ax.set_xticks(np.arange(len(PROBLEMS)) + 0.4 - width / 2, list(PROBLEMS), fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("f(returned x) / f(x0)")
        ax.set_title(regime)
        ax.legend(fontsize=7)
    fig.tight_layout()
    report.figure(fig)
    path = report.write(s, data)
    print(path.read_text())
    return 0
