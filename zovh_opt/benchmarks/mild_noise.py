"""Mild noise at small d: the default against NEWUOA, BOBYQA, COBYQA and Nelder-Mead.

COCO's ``bbob`` functions at small ``d`` from their standard start, under the noise a
simulation's tolerance or a many-sample Monte-Carlo estimate makes: relative (``g (1 + level
N)``), deterministic rough (``g (1 + level r(x))``, ``r`` a hash of ``x``) and bbob-noisy's
moderate models. Every solver gets the same problems, noise stream and ``budget d``
evaluations at its documented defaults; a problem is solved at ``tau`` where the noise-free
gap at the returned point is at most ``tau g(x0)``, or anytime within ``10 d``. The protocol
in full: ``docs/benchmarks/mild-noise.md``, *Protocol*.
"""

from __future__ import annotations

import argparse
import math
import warnings
import zlib
from typing import Any

import numpy as np

from ._common import Report, add_common_arguments, fmt, not_installed, run_jobs

NAME = "mild-noise"
KINDS = ("relative", "rough", "gaussian", "uniform", "cauchy")
SOLVERS = ("zovh", "NEWUOA", "BOBYQA", "COBYQA", "Nelder-Mead")
PACKAGES = {"NEWUOA": "nlopt", "BOBYQA": "pybobyqa"}  # the peers' packages, where not SciPy
TAUS = (1e-3, 1e-5)  # the returned point's targets, fractions of g(x0)
ANYTIME = 10  # the anytime target's budget, evaluations per d
STREAMS = 100_000  # the k-th seed's noise streams are those of seed 0 shifted by k * STREAMS


class MildlyNoisy:
    """A bbob problem under one mild noise model; keeps the noise-free gap of every call."""

    def __init__(self, problem: Any, f_opt: float, kind: str, level: float, seed: int) -> None:
        self.problem, self.f_opt, self.kind, self.level = problem, f_opt, kind, level
        self.dim = problem.dimension
        self.rng = np.random.default_rng(seed)
        self.gaps: list[float] = []

    def gap(self, x: Any) -> float:
        return float(self.problem(np.asarray(x, dtype=float))) - self.f_opt

    def noisy_gap(self, g: float, x: np.ndarray) -> float:
        r = self.rng
        if self.kind == "relative":
            return g * (1.0 + self.level * r.standard_normal())
        if self.kind == "rough":
            return g * (1.0 + self.level * (zlib.crc32(x.tobytes()) / 2**31 - 1.0))
        if self.kind == "gaussian":
            return g * math.exp(0.01 * r.standard_normal())
        if self.kind == "uniform":
            alpha = 0.01 * (0.49 + 1.0 / self.dim)
            return g * r.random() ** 0.01 * max(1.0, (1e9 / (g + 1e-99)) ** (alpha * r.random()))
        outlier = r.standard_normal() / (abs(r.standard_normal()) + 1e-199)
        return g + 0.01 * max(0.0, 1000.0 + (outlier if r.random() < 0.05 else 0.0))

    def __call__(self, x: Any, *args: Any, **kwargs: Any) -> float:
        x = np.asarray(x, dtype=float)
        g = self.gap(x)
        self.gaps.append(g)
        return self.f_opt + self.noisy_gap(g, x)


def _problem(s: dict[str, Any], function: int, instance: int, kind: str, seed: int) -> Any:
    import cocoex

    from .coco import optimal_value

    options = f"dimensions: {s['dim']} function_indices: {function}"
    problem = next(iter(cocoex.Suite("bbob", f"instances: {instance}", options)))
    stream = 1000 * function + 10 * instance + KINDS.index(kind) + STREAMS * seed
    return MildlyNoisy(problem, optimal_value(problem), kind, s["level"], stream)


def _solve(solver: str, fun: MildlyNoisy, x0: np.ndarray, budget: int, seed: int) -> np.ndarray:
    """``solver``'s returned point on ``fun`` from ``x0`` (``x0`` where it raised)."""
    import scipy.optimize

    import zovh_opt

    if solver == "zovh":
        return zovh_opt.minimize(fun, x0, rng=seed, options={"maxfev": budget}).x
    if solver == "NEWUOA":
        import nlopt

        opt = nlopt.opt(nlopt.LN_NEWUOA, fun.dim)
        opt.set_min_objective(lambda x, grad: fun(x))
        opt.set_maxeval(budget)
        try:
            return opt.optimize(x0.copy())
        except (nlopt.RoundoffLimited, RuntimeError, ValueError):
            return x0  # nlopt returns no point where it stops on an error
    if solver == "BOBYQA":
        import pybobyqa

        x = pybobyqa.solve(fun, x0.copy(), maxfun=budget).x
        return x0 if x is None else x
    return scipy.optimize.minimize(fun, x0, method=solver, options={"maxfev": budget}).x


def run_one(job: tuple[dict[str, Any], int, int, str, str, int]) -> dict[str, Any]:
    """One solver on one problem: the noise-free gaps of its point and of its evaluations."""
    s, function, instance, kind, solver, seed = job
    fun = _problem(s, function, instance, kind, seed)
    x0 = np.asarray(fun.problem.initial_solution, dtype=float)
    g0 = fun.gap(x0)
    budget = s["budget"] * s["dim"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            x = np.asarray(_solve(solver, fun, x0, budget, seed), dtype=float)
    early = fun.gaps[: ANYTIME * s["dim"]]
    return {
        "function": function,
        "instance": instance,
        "kind": kind,
        "solver": solver,
        "seed": seed,
        "g0": g0,
        "gap": fun.gap(x),
        "anytime": min(early) if early else g0,
        "calls": len(fun.gaps),
    }


def settings(args: argparse.Namespace) -> dict[str, Any]:
    if args.quick:
        return {
            "dim": 2,
            "budget": 100,
            "level": 1e-3,
            "functions": [1, 8],
            "instances": [1],
            "kinds": ["relative", "rough"],
            "solvers": ["zovh", "COBYQA", "Nelder-Mead"],
            "seeds": 1,
        }
    return {
        "dim": args.dim,
        "budget": args.budget,
        "level": args.level,
        "functions": args.functions,
        "instances": args.instances,
        "kinds": args.kinds,
        "solvers": args.solvers,
        "seeds": args.seeds,
    }


def jobs_of(s: dict[str, Any]) -> list[tuple]:
    return [
        (s, function, instance, kind, solver, seed)
        for kind in s["kinds"]
        for function in s["functions"]
        for instance in s["instances"]
        for seed in range(s["seeds"])
        for solver in s["solvers"]
    ]


def summary(records: list[dict[str, Any]], s: dict[str, Any]) -> dict[str, Any]:
    """Per noise kind and solver: the fractions solved, returned and anytime."""
    table: dict[str, Any] = {}
    for kind in s["kinds"]:
        for solver in s["solvers"]:
            runs = [r for r in records if r["kind"] == kind and r["solver"] == solver]
            if not runs:
                continue
            cell = {"runs": len(runs)}
            cell["anytime"] = sum(r["anytime"] <= 1e-3 * r["g0"] for r in runs) / len(runs)
            for tau in TAUS:
                cell[f"{tau:g}"] = sum(r["gap"] <= tau * r["g0"] for r in runs) / len(runs)
            table[f"{kind}/{solver}"] = cell
    return table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_arguments(parser, NAME)
    parser.add_argument("--dim", type=int, default=5, help="dimension (5)")
    parser.add_argument("--budget", type=int, default=100, help="evaluations per d (100)")
    parser.add_argument("--level", type=float, default=1e-3, help="relative and rough (1e-3)")
    parser.add_argument("--functions", type=int, nargs="+", default=list(range(1, 25)))
    parser.add_argument("--instances", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--seeds", type=int, default=1, help="runs per problem (1)")
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    parser.add_argument("--solvers", nargs="+", default=list(SOLVERS), choices=SOLVERS)


def run(args: argparse.Namespace) -> int:
    s = settings(args)
    missing = not_installed(s["solvers"], PACKAGES)
    s["solvers"] = [solver for solver in s["solvers"] if solver not in missing]
    title = f"Mild noise at d = {s['dim']}, {s['budget']} d"
    report = Report(args, NAME, title)
    report.text(__doc__.split("\n\n", 1)[1])
    if missing:
        report.text(f"Left out (not installed): {', '.join(missing)}.")
    records = run_jobs(run_one, jobs_of(s), args.jobs, NAME)
    data = summary(records, s)
    header = ["noise", "solver", "anytime at 10 d", *(f"returned, {tau:g}" for tau in TAUS)]
    rows = [
        [kind, solver, fmt(v["anytime"], 2), *(fmt(v[f"{tau:g}"], 2) for tau in TAUS)]
        for key, v in data.items()
        for kind, solver in [key.split("/", 1)]
    ]
    report.table(header, rows, "fraction of problems solved (higher is better)")
    path = report.write(s, {"summary": data, "runs": records})
    print(path.read_text())
    return 0
