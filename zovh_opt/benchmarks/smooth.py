"""smooth: smooth high-dimensional problems with a non-diagonal Hessian, against L-BFGS-B.

Where a zeroth-order user meets a smooth deterministic objective at large ``d``, SciPy's
L-BFGS-B with finite-difference gradients is the tool they already have. Three problems at
``d = 2000`` and ``20 000`` from ``x0 = 0`` (1-D and 2-D Tikhonov deblurring, a sparse
logistic regression), judged by the relative gap ``(f_best - f*) / (f(x0) - f*)`` of the best
value within ``n d`` evaluations: zovh's median over seeds with its range, L-BFGS-B's one
deterministic run. The protocol in full: ``docs/benchmarks/smooth.md``, *Protocol*.
"""

from __future__ import annotations

import argparse
import math
import warnings
from typing import Any

import numpy as np

from ._common import (
    Budgeted,
    BudgetExhausted,
    Report,
    add_common_arguments,
    fmt,
    pyplot,
    run_jobs,
)

NAME = "smooth"
PROBLEMS = ("deblur-1d", "deblur-2d", "logistic")
SOLVERS = ("zovh", "L-BFGS-B (FD)")
# zovh with options pinned: what the default chooses between
VARIANTS = {"zovh-diagonal": {"curvature": "diagonal"}, "zovh-paper": {"curvature": "off"}}


def _blur_kernel(width: float) -> np.ndarray:
    taps = np.arange(-math.ceil(3 * width), math.ceil(3 * width) + 1)
    kernel = np.exp(-(taps**2) / (2 * width**2))
    return kernel / kernel.sum()


def _spectrum(kernel: np.ndarray, n: int, real: bool) -> np.ndarray:
    """The eigenvalues of the periodic convolution with a centred ``kernel`` on ``n``
    samples, in ``rfft`` order (``real``) or ``fft`` order."""
    column = np.zeros(n)
    half = len(kernel) // 2
    column[np.arange(-half, half + 1) % n] += kernel
    return (np.fft.rfft if real else np.fft.fft)(column).real  # the kernel is symmetric


class Deblur:
    """Tikhonov-regularised periodic deblurring in one or two dimensions (module docstring)."""

    def __init__(self, shape: tuple[int, ...], width: float, lam: float = 1e-2) -> None:
        from scipy import ndimage

        self.shape, self.lam, self.dim = shape, lam, int(np.prod(shape))
        self.kernel = _blur_kernel(width)
        self._convolve = ndimage.convolve1d
        rng = np.random.default_rng(0)
        truth = np.zeros(shape)
        for _ in range(6 * len(shape)):  # piecewise-constant blocks
            corner = [rng.integers(0, n) for n in shape]
            size = [rng.integers(n // 10, n // 3) for n in shape]
            truth[tuple(slice(c, c + s) for c, s in zip(corner, size, strict=True))] += (
                rng.standard_normal()
            )
        self.b = self._blur(truth) + 0.01 * rng.standard_normal(shape)
        # f* exactly: (A^T A + lam I) x = A^T b with A diagonal in Fourier space
        spectrum = _spectrum(self.kernel, shape[-1], real=True)
        for n in reversed(shape[:-1]):
            spectrum = _spectrum(self.kernel, n, real=False)[:, None] * spectrum
        B = np.fft.rfftn(self.b)
        axes = tuple(range(len(shape)))
        self.x_opt = np.fft.irfftn(spectrum * B / (spectrum**2 + lam), shape, axes).ravel()
        self.f_opt = self(self.x_opt)

    def _blur(self, x: np.ndarray) -> np.ndarray:
        for axis in range(x.ndim):
            x = self._convolve(x, self.kernel, axis=axis, mode="wrap")
        return x

    def __call__(self, x: np.ndarray) -> float:
        x = np.asarray(x, dtype=float)
        r = self._blur(x.reshape(self.shape)) - self.b
        return 0.5 * float(np.vdot(r, r)) + 0.5 * self.lam * float(x @ x)


class Logistic:
    """Ridge-regularised logistic regression on sparse planted data (module docstring)."""

    def __init__(self, dim: int, lam: float = 0.1, nonzeros: int = 20) -> None:
        from scipy import optimize, sparse

        rng = np.random.default_rng(1)
        n = dim // 4
        columns = np.concatenate([rng.choice(dim, nonzeros, replace=False) for _ in range(n)])
        rows = np.repeat(np.arange(n), nonzeros)
        self.X = sparse.csr_matrix(
            (rng.standard_normal(n * nonzeros), (rows, columns)), shape=(n, dim)
        )
        truth = rng.standard_normal(dim)
        labels = np.sign(self.X @ truth + 1e-12)
        labels[rng.random(n) < 0.1] *= -1
        self.y, self.lam, self.dim = labels, lam, dim
        res = optimize.minimize(
            self.value_and_gradient,
            np.zeros(dim),
            jac=True,
            method="L-BFGS-B",
            options={"gtol": 1e-12, "ftol": 0, "maxiter": 100_000},
        )
        self.x_opt, self.f_opt = res.x, float(res.fun)

    def _value(self, w: np.ndarray, margins: np.ndarray) -> float:
        return float(np.logaddexp(0, -margins).sum()) + 0.5 * self.lam * float(w @ w)

    def value_and_gradient(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        margins = self.y * (self.X @ w)
        weights = -self.y * np.exp(-np.logaddexp(0, margins))  # -y sigmoid(-margin)
        return self._value(w, margins), self.X.T @ weights + self.lam * w

    def __call__(self, w: np.ndarray) -> float:
        w = np.asarray(w, dtype=float)
        return self._value(w, self.y * (self.X @ w))


def image_shape(dim: int) -> tuple[int, int]:
    """``deblur-2d``'s image: ``rows x columns = dim`` with ``rows`` the largest divisor of
    ``dim`` at most ``sqrt(dim)`` (40 x 50 for 2000, 125 x 160 for 20 000)."""
    rows = max(n for n in range(1, math.isqrt(dim) + 1) if dim % n == 0)
    return rows, dim // rows


def make_problem(name: str, dim: int) -> Any:
    """One of `PROBLEMS` in ``dim`` dimensions (module docstring)."""
    if name == "deblur-1d":
        return Deblur((dim,), width=3.0)
    if name == "deblur-2d":
        return Deblur(image_shape(dim), width=2.0)
    if name == "logistic":
        return Logistic(dim)
    raise ValueError(f"unknown problem {name!r}")


def _run(solver: str, fun: Budgeted, x0: np.ndarray, budget: int, seed: int) -> None:
    if solver == "L-BFGS-B (FD)":
        from scipy.optimize import minimize as scipy_minimize

        scipy_minimize(fun, x0, method="L-BFGS-B", options={"maxfun": budget})
    else:
        from .._driver.minimize import minimize

        options = {"maxfev": budget, **VARIANTS.get(solver, {})}
        minimize(fun, x0, method="zovh", rng=seed, options=options)


def solve(job: tuple[str, str, int, list[int], int]) -> dict[str, Any]:
    """One solver on one problem: relative gaps at each budget (in evaluations)."""
    solver, name, dim, budgets, seed = job
    problem = make_problem(name, dim)
    x0 = np.zeros(dim)
    f0 = problem(x0)
    gaps = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for budget in budgets:  # L-BFGS-B is deterministic: the same iterates, cut there
            fun = Budgeted(problem, budget, sigma=0.0, seed=0)
            try:
                _run(solver, fun, x0, budget, seed)
            except BudgetExhausted:
                pass
            gaps[budget] = fun.best_value
    relative = {b: (v - problem.f_opt) / (f0 - problem.f_opt) for b, v in gaps.items()}
    return {"solver": solver, "problem": name, "dim": dim, "seed": seed, "gaps": relative}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_arguments(parser, NAME)
    parser.add_argument("--dims", type=int, nargs="+", default=[2000, 20_000])
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=PROBLEMS)
    parser.add_argument(
        "--solvers", nargs="+", default=list(SOLVERS), choices=[*SOLVERS, *VARIANTS]
    )
    parser.add_argument(
        "--budgets", type=float, nargs="+", default=[1, 5, 10, 50], help="in d (1 5 10 50)"
    )
    parser.add_argument("--seeds", type=int, default=3, help="zovh runs per problem (3)")


def run(args: argparse.Namespace) -> int:
    dims = [2000] if args.quick else args.dims
    multiples = [1, 10] if args.quick else args.budgets
    seeds = 1 if args.quick else args.seeds
    problems = args.problems[:1] if args.quick else args.problems
    jobs = []
    for dim in dims:
        budgets = sorted({int(round(m * dim)) for m in multiples})
        for name in problems:
            for solver in args.solvers:
                for seed in range(1 if solver == "L-BFGS-B (FD)" else seeds):
                    jobs.append((solver, name, dim, budgets, seed))
    results = run_jobs(solve, jobs, args.jobs, "smooth")
    report = Report(args, NAME, "Smooth high-dimensional problems: relative gap at n d")
    report.text(__doc__.split("\n\n", 1)[1])
    header = ["problem", "d", "solver", *[f"{m:g} d" for m in multiples]]
    rows = []
    for dim in dims:
        for name in problems:
            for solver in args.solvers:
                mine = [
                    r
                    for r in results
                    if r["solver"] == solver and r["problem"] == name and r["dim"] == dim
                ]
                cells = []
                for m in multiples:
                    values = [r["gaps"][int(round(m * dim))] for r in mine]
                    cell = fmt(float(np.median(values)), 2)
                    if len(values) > 1:
                        cell += f" [{fmt(min(values), 2)}, {fmt(max(values), 2)}]"
                    cells.append(cell)
                rows.append([name, dim, solver, *cells])
    report.table(header, rows, "relative gap (f - f*) / (f(x0) - f*), best within n d")
    plt = pyplot()
    fig, axes = plt.subplots(
        len(dims), len(problems), figsize=(4 * len(problems), 3 * len(dims)), squeeze=False
    )
    for i, dim in enumerate(dims):
        for j, name in enumerate(problems):
            ax = axes[i][j]
            for solver in args.solvers:
                mine = [
                    r
                    for r in results
                    if r["solver"] == solver and r["problem"] == name and r["dim"] == dim
                ]
                ys = [np.median([r["gaps"][int(round(m * dim))] for r in mine]) for m in multiples]
                ax.loglog(multiples, ys, marker="o", label=solver)
            ax.set_title(f"{name}, d = {dim}", fontsize=9)
            ax.set_xlabel("evaluations / d")
    axes[0][0].set_ylabel("relative gap")
    axes[0][0].legend(fontsize=7)
    report.figure(fig)
    settings = {
        "dims": dims,
        "problems": problems,
        "solvers": args.solvers,
        "budgets": multiples,
        "seeds": seeds,
    }
    path = report.write(settings, results)
    print(path.read_text())
    return 0
