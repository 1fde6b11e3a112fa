"""noise: the bbob functions under bbob-noisy's noise models, judged by the noise-free value.

COCO's ``bbob`` functions (``bbob-largescale``'s above ``d = 40``) with the noise models of
``bbob-noisy`` at their severe settings (multiplicative Gaussian and uniform, Cauchy outliers,
additive Gaussian), the same noise stream and budget for every solver at its documented
defaults (zovh, pycma's CMA-ES with its ``NoiseHandler``, Powell, Nelder-Mead, SPSA and a ZoAR
oracle). The measure is the noise-free gap at the returned point, ``log10(g(x) / g(x0))``,
median over functions, instances and seeds; the report also checks that zovh's ``fun`` is
within three standard errors of the true mean. The protocol in full:
``docs/benchmarks/noise.md``, *Protocol*.
"""

from __future__ import annotations

import argparse
import math
import warnings
from typing import Any

import numpy as np

from ._common import Report, add_common_arguments, fmt, not_installed, run_jobs

NAME = "noise"
MODELS = ("gaussian", "uniform", "cauchy", "additive")
SOLVERS = (
    "zovh",
    "zovh noisy=True",
    "CMA-ES (NoiseHandler)",
    "Powell",
    "Nelder-Mead",
    "SPSA",
    "zoar oracle",
)
PACKAGES = {"SPSA": "noisyopt", "CMA-ES (NoiseHandler)": "cma"}  # the peers' modules
ORACLE_RATES = tuple(10.0**k for k in range(-6, 1))
FLOOR = 1e-8  # gaps below this count as solved (COCO's final target)
LEVEL = 0.1  # paired scores closer than this (a factor 1.26 in the gap) count as level
STREAMS = 100_000  # the k-th seed's noise streams are those of seed 0 shifted by k * STREAMS


class NoisyProblem:
    """A bbob problem under one noise model; counts its calls, keeps its noise-free
    ``g(x) = f(x) - f_opt`` to judge any point."""

    def __init__(self, problem: Any, f_opt: float, model: str, g0: float, seed: int) -> None:
        self.problem, self.f_opt, self.model = problem, f_opt, model
        self.dim = problem.dimension
        self.sigma = 0.01 * g0  # the additive model's
        self.rng = np.random.default_rng(seed)
        self.calls = 0

    def gap(self, x: np.ndarray) -> float:
        return float(self.problem(np.asarray(x, dtype=float))) - self.f_opt

    def noisy_gap(self, g: float) -> float:
        r = self.rng
        if self.model == "gaussian":
            g = g * math.exp(r.standard_normal())
        elif self.model == "uniform":
            alpha = 0.49 + 1.0 / self.dim
            g = g * r.random() * max(1.0, (1e9 / (g + 1e-99)) ** (alpha * r.random()))
        elif self.model == "cauchy":
            outlier = r.standard_normal() / (abs(r.standard_normal()) + 1e-199)
            g = g + max(0.0, 1000.0 + (outlier if r.random() < 0.2 else 0.0))
        else:
            g = g + self.sigma * r.standard_normal()
        return g + 1.01e-8 if g >= 1e-8 else g

    def expected(self, x: np.ndarray) -> float:
        """The mean of the noisy values at ``x`` (``nan`` for the Cauchy model)."""
        g = self.gap(x)
        if self.model == "gaussian":
            g = g * math.exp(0.5)
        elif self.model == "uniform":
            alpha, c = 0.49 + 1.0 / self.dim, 1e9 / (g + 1e-99)
            g = g * 0.5 * ((c**alpha - 1) / (alpha * math.log(c)) if c > 1 else 1.0)
        elif self.model == "cauchy":
            return math.nan
        # the shift 1.01e-8 applies where the noisy gap is >= 1e-8; at gaps far above it, always
        return self.f_opt + g + (1.01e-8 if g >= 1e-6 else 0.0)

    def __call__(self, x: Any, *args: Any, **kwargs: Any) -> float:
        self.calls += 1
        return self.f_opt + self.noisy_gap(self.gap(x))


def _problem(
    s: dict[str, Any], function: int, instance: int, model: str, seed: int = 0
) -> NoisyProblem:
    import cocoex

    from .coco import optimal_value

    options = f"dimensions: {s['dim']} function_indices: {function}"
    problem = next(iter(cocoex.Suite(s["suite"], f"instances: {instance}", options)))
    if problem.dimension != s["dim"]:
        raise ValueError(f"{s['suite']} has no problems in d = {s['dim']}")
    f_opt = optimal_value(problem)
    x0 = np.asarray(problem.initial_solution, dtype=float)
    g0 = float(problem(x0)) - f_opt
    stream = 1000 * function + 10 * instance + MODELS.index(model) + STREAMS * seed
    return NoisyProblem(problem, f_opt, model, g0, stream)


def _solve(
    solver: str, fun: NoisyProblem, x0: np.ndarray, budget: int, rate: float, seed: int
) -> dict:
    """Run ``solver`` on ``fun`` from ``x0`` with its ``seed``; ``x``, and zovh's ``fun`` and
    its error."""
    import scipy.optimize

    import zovh_opt

    out: dict[str, Any] = {}
    if solver.startswith("zovh"):
        options = {"maxfev": budget, **({"noisy": True} if "noisy" in solver else {})}
        res = zovh_opt.minimize(fun, x0, rng=seed, options=options)
        out = {"fun": float(res.fun), "fun_std_error": float(res.get("fun_std_error", math.nan))}
        x = res.x
    elif solver == "zoar oracle":
        options = {"learning_rate": rate, "maxfev": budget, "noisy": True}
        x = zovh_opt.minimize(fun, x0, method="zoar", rng=seed, options=options).x
    elif solver == "CMA-ES (NoiseHandler)":
        x = _cma(fun, x0, budget, seed)
    elif solver == "SPSA":
        from noisyopt import minimizeSPSA

        np.random.seed(seed)  # noqa: NPY002 - noisyopt draws from NumPy's global generator
        x = minimizeSPSA(fun, x0.copy(), niter=(budget - 1) // 2, paired=False).x
    else:
        options = {"maxfev": budget}
        x = scipy.optimize.minimize(fun, x0, method=solver, options=options).x
    return {"x": np.asarray(x, dtype=float), **out}


def _cma(fun: NoisyProblem, x0: np.ndarray, budget: int, seed: int) -> np.ndarray:
    """pycma's documented noise-handling loop, stopped at the budget."""
    import cma

    options = {"seed": seed + 1, "verbose": -9, "maxfevals": budget}
    es = cma.CMAEvolutionStrategy(x0, 2.0, options)
    handler = cma.NoiseHandler(es.N, maxevals=[1, 1, 30])
    while not es.stop() and fun.calls < budget:
        X, values = es.ask_and_eval(fun, evaluations=handler.evaluations)
        es.tell(X, values)
        es.sigma *= handler(X, values, fun, es.ask)
        es.countevals += handler.evaluations_just_done
    return np.asarray(es.result.xfavorite)


def run_one(job: tuple[dict[str, Any], int, int, str, str, float, int]) -> dict[str, Any]:
    """One solver on one noisy problem: the noise-free score of its point, its calls."""
    s, function, instance, model, solver, rate, seed = job
    fun = _problem(s, function, instance, model, seed)
    x0 = np.asarray(fun.problem.initial_solution, dtype=float)
    g0 = fun.gap(x0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            out = _solve(solver, fun, x0, s["budget"] * s["dim"], rate, seed)
    gap = fun.gap(out["x"])
    score = math.log10(max(gap, FLOOR) / g0) if math.isfinite(gap) else math.inf
    record = {
        "function": function,
        "instance": instance,
        "seed": seed,
        "model": model,
        "solver": solver,
        "rate": rate,
        "score": score,
        "gap": gap,
        "calls": fun.calls,
    }
    if "fun" in out:
        record.update(fun=out["fun"], fun_std_error=out["fun_std_error"])
        record["expected"] = fun.expected(out["x"])
    return record


def settings(args: argparse.Namespace) -> dict[str, Any]:
    if args.quick:
        return {
            "suite": "bbob",
            "dim": 5,
            "budget": 200,
            "functions": [1, 8],
            "instances": [1],
            "models": ["gaussian", "additive"],
            "solvers": ["zovh", "Nelder-Mead", "zoar oracle"],
            "seeds": 1,
        }
    return {
        "suite": args.suite or ("bbob" if args.dim <= 40 else "bbob-largescale"),
        "dim": args.dim,
        "budget": args.budget,
        "functions": args.functions,
        "instances": args.instances,
        "models": args.models,
        "solvers": args.solvers,
        "seeds": args.seeds,
    }


def jobs_of(s: dict[str, Any]) -> list[tuple]:
    jobs = []
    for model in s["models"]:
        for function in s["functions"]:
            for instance in s["instances"]:
                for seed in range(s.get("seeds", 1)):
                    for solver in s["solvers"]:
                        rates = ORACLE_RATES if solver == "zoar oracle" else (math.nan,)
                        jobs.extend((s, function, instance, model, solver, r, seed) for r in rates)
    return jobs


def oracle(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per noise model and function, the zoar runs of the rate with the best median score
    (over instances and seeds); the other solvers' records as they are."""
    kept = [r for r in records if r["solver"] != "zoar oracle"]
    groups: dict[tuple, dict[float, list]] = {}
    for r in records:
        if r["solver"] == "zoar oracle":
            groups.setdefault((r["model"], r["function"]), {}).setdefault(r["rate"], []).append(r)
    for by_rate in groups.values():
        kept.extend(min(by_rate.values(), key=lambda rs: np.median([r["score"] for r in rs])))
    return kept


def summary(records: list[dict[str, Any]], s: dict[str, Any]) -> dict[str, Any]:
    """Median score (and range) per model and solver; zovh's fun against the true mean."""
    table: dict[str, Any] = {}
    for model in s["models"]:
        for solver in s["solvers"]:
            scores = [r["score"] for r in records if r["model"] == model and r["solver"] == solver]
            table[f"{model}/{solver}"] = {
                "median": float(np.median(scores)),
                "min": float(np.min(scores)),
                "max": float(np.max(scores)),
                "runs": len(scores),
            }
    checks = [
        r
        for r in records
        if "fun" in r and math.isfinite(r["expected"]) and math.isfinite(r["fun_std_error"])
    ]
    within = [abs(r["fun"] - r["expected"]) <= 3 * r["fun_std_error"] for r in checks]
    table["fun within 3 standard errors"] = {"checked": len(checks), "within": int(sum(within))}
    table["noisy=True less the default"] = paired(records, s)
    return table


def paired(records: list[dict[str, Any]], s: dict[str, Any]) -> dict[str, Any]:
    """Per noise model, ``zovh noisy=True``'s score less ``zovh``'s on the same problem and
    seed: the median, and the runs where ``noisy=True`` was better or worse by more than
    `LEVEL` (closer than that counts as level); empty without both solvers."""
    if not {"zovh", "zovh noisy=True"} <= set(s["solvers"]):
        return {}
    scores = {
        (r["model"], r["function"], r["instance"], r.get("seed", 0), r["solver"]): r["score"]
        for r in records
    }
    out = {}
    for model in s["models"]:
        differences = [
            value - scores[(*key[:4], "zovh")]
            for key, value in scores.items()
            if key[0] == model and key[4] == "zovh noisy=True"
        ]
        out[model] = {
            "median": float(np.median(differences)),
            "better": int(sum(d < -LEVEL for d in differences)),
            "worse": int(sum(d > LEVEL for d in differences)),
            "runs": len(differences),
        }
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_arguments(parser, NAME)
    parser.add_argument("--dim", type=int, default=20, help="dimension (20)")
    parser.add_argument(
        "--suite", help="cocoex suite (default: bbob up to d = 40, bbob-largescale above)"
    )
    parser.add_argument("--budget", type=int, default=1000, help="evaluations per d (1000)")
    parser.add_argument("--functions", type=int, nargs="+", default=[1, 2, 8, 10, 14])
    parser.add_argument("--instances", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument(
        "--seeds", type=int, default=1, help="runs per problem, each its own noise stream (1)"
    )
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--solvers", nargs="+", default=list(SOLVERS), choices=SOLVERS)


def run(args: argparse.Namespace) -> int:
    s = settings(args)
    missing = not_installed(s["solvers"], PACKAGES)
    s["solvers"] = [solver for solver in s["solvers"] if solver not in missing]
    report = Report(args, NAME, f"Noisy bbob functions, d = {s['dim']}, {s['budget']} d")
    report.text(__doc__.split("\n\n", 1)[1])
    if missing:
        report.text(f"Left out (not installed): {', '.join(missing)}.")
    records = oracle(run_jobs(run_one, jobs_of(s), args.jobs, NAME))
    data = summary(records, s)
    header = ["noise model", *s["solvers"]]
    rows = []
    for model in s["models"]:
        cells = []
        for solver in s["solvers"]:
            v = data[f"{model}/{solver}"]
            cells.append(f"{fmt(v['median'], 2)} ({fmt(v['min'], 2)} .. {fmt(v['max'], 2)})")
        rows.append([model, *cells])
    report.table(
        header,
        rows,
        "median log10(g(x) / g(x0)) over functions, instances and seeds (min .. max); lower is "
        "better",
    )
    if data["noisy=True less the default"]:
        report.table(
            [
                "noise model",
                "median difference",
                f"better by > {LEVEL}",
                f"worse by > {LEVEL}",
                "runs",
            ],
            [
                [m, fmt(v["median"], 2), v["better"], v["worse"], v["runs"]]
                for m, v in data["noisy=True less the default"].items()
            ],
            "zovh noisy=True's score less zovh's on the same problem and seed",
        )
    check = data["fun within 3 standard errors"]
    report.text(
        f"zovh's `fun` within 3 standard errors of the true mean at x: {check['within']} of "
        f"{check['checked']} runs (those with a standard error and a finite mean)."
    )
    path = report.write(s, {"summary": data, "runs": records})
    print(path.read_text())
    return 0
