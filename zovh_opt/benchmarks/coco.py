"""coco: COCO's bbob-largescale and bbob suites, every method at its defaults against peers.

The field's standard benchmark (Hansen et al., *COCO: a platform for comparing continuous
optimizers in a black-box setting*, Optim. Methods Softw. 36, 2021) through ``cocoex``: every
solver gets the same problems and ``budget * d`` evaluations at its documented defaults, is
restarted from a uniform point until the budget is spent, and is judged by COCO's anytime
measure (targets ``10^1 ... 10^-7``, fractions solved within ``10 d`` and ``100 d``).
``--bounds`` gives every solver the box, ``--seeds S`` runs every problem ``S`` times; with
``cocopp`` installed COCO's own post-processing draws the runtime ECDFs. The solvers and the
protocol in full: ``docs/benchmarks/coco.md``, *Protocol*.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import tempfile
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from ._common import BudgetExhausted, Report, fmt, pyplot, run_jobs

NAME = "coco"
SOLVERS = ("zovh", "zoar", "hizoo", "mezo", "L-BFGS-B (FD)", "Powell", "sep-CMA-ES")
ZOVH_METHODS = ("zovh", "zoar", "hizoo", "mezo")
# zovh with the curvature model pinned off or on: the budget rule's two sides
VARIANTS = {
    "zovh-paper": {"curvature": "off"},
    "zovh-model": {"curvature": "diagonal"},
    "zovh-full": {"curvature": "full"},
    "zovh-new-starts": {"new_starts": 100},  # new starts until the budget is spent
}
PEERS = ("COBYQA", "IPOP-CMA-ES")  # not run by default: for the bbob suite at small d
TARGETS = tuple(10.0**k for k in range(1, -8, -1))  # 1e1 ... 1e-7
SEED_STRIDE = 10**6  # seed S of --seeds offsets every run's seed by S * SEED_STRIDE
SIGMA0 = 2.0  # sep-CMA-ES: COCO's pycma example, 0.2 * (upper - lower) of [-5, 5]^d


class Tracked:
    """A COCO problem with a hard budget that records when each target is first reached."""

    def __init__(self, problem: Any, f_opt: float, budget: int) -> None:
        self.problem, self.f_opt, self.budget = problem, f_opt, budget
        self.nfev = 0
        self.best = math.inf
        self.hits = [None] * len(TARGETS)  # evaluations to reach each target
        self._next = 0

    def __call__(self, x: Any) -> float:
        if self.nfev >= self.budget:
            raise BudgetExhausted
        self.nfev += 1
        value = float(self.problem(np.asarray(x, dtype=float)))
        if value < self.best:
            self.best = value
            while self._next < len(TARGETS) and value - self.f_opt <= TARGETS[self._next]:
                self.hits[self._next] = self.nfev
                self._next += 1
        return value


def suite(s: dict[str, Any]) -> Any:
    import cocoex

    functions = ",".join(str(f) for f in s["functions"])
    return cocoex.Suite(
        s["suite"],
        f"instances: {s['instances']}",
        f"dimensions: {s['dim']} function_indices: {functions}",
    )


def optimal_value(problem: Any) -> float:
    """``f_opt`` of an (unobserved) problem: cocoex 2.8 has no public accessor, but writes the
    optimal point to a file on request; its value is ``f_opt``."""
    with tempfile.TemporaryDirectory() as folder:
        cwd = os.getcwd()
        os.chdir(folder)
        try:
            problem._best_parameter("print")
            x_opt = np.loadtxt("._bbob_problem_best_parameter.txt", ndmin=1)
        finally:
            os.chdir(cwd)
    return float(problem(x_opt))


def solve(job: tuple[str, dict[str, Any], int]) -> list[dict[str, Any]]:
    """Every problem of the suite with one solver and one seed of ``--seeds``; its data logged
    for cocopp when asked (seed 0's)."""
    import cocoex

    solver, s, seed = job
    observer = None
    if s["log"] and seed == 0:  # COCO's logs hold one run per problem: seed 0's
        os.chdir(s["out"])  # cocoex writes under ./exdata
        folder = solver.replace(" ", "").replace("(", "").replace(")", "")
        observer = cocoex.Observer(s["suite"], f"result_folder: {folder} algorithm_name: {folder}")
    results = []
    for index, (problem, twin) in enumerate(zip(suite(s), suite(s), strict=True)):
        if observer is not None:
            problem.observe_with(observer)
        fun = Tracked(problem, optimal_value(twin), s["budget"] * problem.dimension)
        twin.free()
        # seed 0: the seeds of every record from before --seeds
        starts = np.random.default_rng(index if seed == 0 else (seed, index))
        x0 = np.asarray(problem.initial_solution, dtype=float)
        box = (problem.lower_bounds, problem.upper_bounds) if s.get("bounds") else None
        ends: list[str] = []
        while fun.nfev < fun.budget:
            try:
                run_seed = len(ends) + 1000 * index + SEED_STRIDE * seed
                ends.append(_run(solver, fun, x0, seed=run_seed, box=box))
            except BudgetExhausted:
                ends.append("budget")
            x0 = starts.uniform(-4, 4, problem.dimension)
        results.append(
            {
                "problem": problem.id,
                "function": problem.id_function,
                "seed": seed,
                "hits": fun.hits,
                "ends": ends,
            }
        )
        problem.free()
    return results


def _run(
    solver: str, fun: Tracked, x0: np.ndarray, seed: int, box: tuple[Any, Any] | None = None
) -> str:
    """One run from ``x0`` within what is left of the budget, in the ``box`` (lower and upper
    bounds, ``--bounds``) where given; how it ended."""
    bounds = None if box is None else list(zip(*box, strict=True))  # SciPy's and zovh's form
    cma_bounds = {} if box is None else {"bounds": [list(box[0]), list(box[1])]}  # pycma's
    remaining = fun.budget - fun.nfev
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if solver in ZOVH_METHODS or solver in VARIANTS:
            from .._driver.minimize import minimize
            from .._driver.stopping import BudgetTooSmall

            method = "zovh" if solver in VARIANTS else solver
            options = {"maxfev": remaining, **VARIANTS.get(solver, {})}
            try:
                res = minimize(fun, x0, method=method, bounds=bounds, rng=seed, options=options)
            except BudgetTooSmall:  # less than one iteration and the final point
                fun.nfev = fun.budget  # what is left cannot be used
                raise BudgetExhausted from None
            return f"status {res.status}"
        if solver in ("L-BFGS-B (FD)", "Powell", "COBYQA"):
            from scipy.optimize import minimize as scipy_minimize

            method = solver.split()[0]
            option = "maxfun" if method == "L-BFGS-B" else "maxfev"
            res = scipy_minimize(fun, x0, method=method, bounds=bounds, options={option: remaining})
            return f"status {res.status}"
        import cma

        if solver == "IPOP-CMA-ES":
            starts = np.random.default_rng(seed)
            first = [x0]  # COCO's start first, then uniform points of [-4, 4]^d

            def start() -> np.ndarray:
                return first.pop() if first else starts.uniform(-4, 4, x0.shape[0])

            options = {"maxfevals": remaining, "seed": seed + 1, "verbose": -9, **cma_bounds}
            _, es = cma.fmin2(fun, start, SIGMA0, options, restarts=9, incpopsize=2)
            return ",".join(sorted(es.stop()))

        options = {"CMA_diagonal": True, "maxfevals": remaining, "seed": seed + 1, "verbose": -9}
        es = cma.CMAEvolutionStrategy(x0, SIGMA0, {**options, **cma_bounds})
        while not es.stop():
            candidates = es.ask()
            es.tell(candidates, [fun(c) for c in candidates])
        return ",".join(sorted(es.stop()))


def settings(args: argparse.Namespace) -> dict[str, Any]:
    if args.seeds < 1:
        raise SystemExit(f"--seeds must be at least 1, got {args.seeds}")
    if args.quick:
        return {
            "suite": "bbob-largescale",
            "dim": 20,
            "functions": [1, 8],
            "instances": "1",
            "budget": 20,
            "solvers": list(args.solvers),
            "log": False,
            "out": str(args.out.resolve()),
            "seeds": 1,
            "bounds": args.bounds,
        }
    return {
        "suite": args.suite,
        "dim": args.dim,
        "functions": list(args.functions),
        "instances": args.instances,
        "budget": args.budget,
        "solvers": list(args.solvers),
        "log": not args.no_cocopp,
        "out": str(args.out.resolve()),
        "seeds": args.seeds,
        "bounds": args.bounds,
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ._common import add_common_arguments

    add_common_arguments(parser, NAME)
    parser.add_argument("--suite", default="bbob-largescale", help="a cocoex suite name")
    parser.add_argument("--dim", type=int, default=320, help="dimension (default 320)")
    parser.add_argument(
        "--functions", type=int, nargs="+", default=list(range(1, 25)), help="default 1 ... 24"
    )
    parser.add_argument("--instances", default="1-3", help="cocoex instances (default 1-3)")
    parser.add_argument(
        "--budget", type=int, default=100, help="evaluations per dimension (default 100)"
    )
    parser.add_argument(
        "--solvers", nargs="+", default=list(SOLVERS), choices=(*SOLVERS, *VARIANTS, *PEERS)
    )
    parser.add_argument(
        "--no-cocopp", action="store_true", help="skip COCO's logging and post-processing"
    )
    parser.add_argument(
        "--bounds",
        action="store_true",
        help="give every solver the problems' box (bbob's [-5, 5]^d) as bounds",
    )
    parser.add_argument(
        "--seeds",
        type=int,
        default=1,
        help="runs of every problem per solver, each with its own seeds for the solver and "
        "the restarts' points (default 1); the tables give the median over seeds and the "
        "spread",
    )


def _ranges(numbers: list[int]) -> str:
    """``[1, 2, 3, 8]`` as ``"1-3, 8"``."""
    parts, start = [], None
    for i, n in enumerate(numbers):
        if start is None:
            start = n
        if i + 1 == len(numbers) or numbers[i + 1] != n + 1:
            parts.append(str(n) if n == start else f"{start}-{n}")
            start = None
    return ", ".join(parts)


def fraction_solved(runs: list[dict[str, Any]], evaluations: int) -> float:
    """Fraction of (problem, target) pairs reached within ``evaluations`` (over every seed's
    runs: their mean)."""
    hits = [h for r in runs for h in r["hits"]]
    return sum(h is not None and h <= evaluations for h in hits) / len(hits)


def per_seed(runs: list[dict[str, Any]], evaluations: int) -> list[float]:
    """`fraction_solved` of each seed's runs, by seed (records from before ``--seeds``:
    seed 0)."""
    seeds = sorted({r.get("seed", 0) for r in runs})
    return [fraction_solved([r for r in runs if r.get("seed", 0) == k], evaluations) for k in seeds]


def median_solved(runs: list[dict[str, Any]], evaluations: int) -> float:
    """The median over seeds of `fraction_solved`."""
    return float(np.median(per_seed(runs, evaluations)))


def run(args: argparse.Namespace) -> int:
    s = settings(args)
    out = Path(s["out"])
    out.mkdir(parents=True, exist_ok=True)
    if s["log"]:
        shutil.rmtree(out / "exdata", ignore_errors=True)
    report = Report(args, NAME, f"COCO {s['suite']}, d = {s['dim']}: solved triples")
    jobs = [(c, s, seed) for c in s["solvers"] for seed in range(s["seeds"])]
    runs = run_jobs(solve, jobs, args.jobs, NAME)
    results: dict[str, list[dict[str, Any]]] = {c: [] for c in s["solvers"]}
    for (solver, _, _), solved in zip(jobs, runs, strict=True):
        results[solver].extend(solved)
    d = s["dim"]
    checkpoints = tuple(n * d for n in (10, 100) if n < s["budget"]) + (s["budget"] * d,)
    seeds = s["seeds"]
    over = f" (median over {seeds} seeds; each seed's fraction at {s['budget']} d)" * (seeds > 1)
    report.text(
        f"Functions {_ranges(s['functions'])} of `{s['suite']}`, instances "
        f"{s['instances']}, d = {d}, budget {s['budget']} d = {s['budget'] * d} evaluations per "
        f"problem; targets f - f_opt <= 1e1, 1e0, ..., 1e-7 (COCO's anytime measure, restarts "
        "included). Fraction of (function, instance, target) triples solved within the "
        f"number of evaluations of each column{over}; higher is better."
        + " Every solver was given the problems' box as bounds (`--bounds`)."
        * bool(s.get("bounds"))
    )
    rows = []
    for solver, runs in results.items():
        ends = Counter(e for r in runs for e in r["ends"])
        ended = ", ".join(f"{k}: {v}" for k, v in sorted(ends.items()))
        cells = [f"{median_solved(runs, n):.3f}" for n in checkpoints]
        if seeds > 1:
            cells.append(" ".join(f"{f:.3f}" for f in per_seed(runs, checkpoints[-1])))
        rows.append([solver, *cells, ended])
    header = ["solver", *(f"{n // d} d" for n in checkpoints)]
    header += ["each seed"] * (seeds > 1) + ["how the runs ended (count)"]
    report.table(header, rows, "Fraction of triples solved")
    functions = s["functions"]
    per_function = []
    for solver, runs in results.items():
        cells = []
        for f in functions:
            mine = [r for r in runs if r["function"] == f]
            cells.append(fmt(fraction_solved(mine, s["budget"] * d), 2))
        per_function.append([solver, *cells])
    report.table(
        ["solver", *(f"f{f}" for f in functions)],
        per_function,
        f"Per function: fraction of (instance, target) pairs solved within {s['budget']} d"
        + " (mean over seeds)" * (seeds > 1),
    )
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4))
    grid = np.unique(np.geomspace(1, s["budget"] * d, 200).astype(int))
    for solver, runs in results.items():
        ax.step(grid / d, [fraction_solved(runs, n) for n in grid], where="post", label=solver)
    ax.set_xscale("log")
    ax.set_xlabel("evaluations / d")
    ax.set_ylabel("fraction of triples solved")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7)
    ax.set_title(f"{s['suite']}, d = {d}")
    report.figure(fig)
    if s["log"]:
        _cocopp(out, results, report)
    path = report.write(s, results)
    print(path.read_text())
    return 0


def _cocopp(out: Path, results: dict[str, Any], report: Report) -> None:
    """COCO's post-processing of the logged data: the runtime ECDF over all functions."""
    try:
        import cocopp
    except ImportError:
        report.text("(cocopp is not installed: no COCO post-processing.)")
        return
    folders = sorted(str(p) for p in (out / "exdata").iterdir() if p.is_dir())
    cwd = os.getcwd()
    os.chdir(out)
    try:
        cocopp.genericsettings.interactive_mode = False
        cocopp.main(["-o", "ppdata", *folders])
    finally:
        os.chdir(cwd)
    figures = sorted((out / "ppdata").rglob("pprldmany_*noiselessall.*"))
    png = [p for p in figures if p.suffix == ".png"] or figures
    if png:
        name = f"cocopp{png[0].suffix}"
        shutil.copy(png[0], out / name)
        link = f"![cocopp runtime ECDF, all functions]({name})" if name.endswith(".png") else ""
        report.sections.append(link or f"COCO's runtime ECDF, all functions: [{name}]({name})")
