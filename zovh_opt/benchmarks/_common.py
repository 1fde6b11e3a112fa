"""What every paper-experiment command shares: options, jobs, progress bar, and the report.

Each command writes into its output directory a PNG figure, a Markdown report (tables first,
then the record: the exact command, package versions and machine) and ``record.json`` with the
same record and the raw numbers.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import shlex
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

PACKAGES = (
    "zovh-opt", "numpy", "scipy", "array-api-compat", "matplotlib", "torch", "cma", "nlopt",
    "Py-BOBYQA",
)  # fmt: skip


def not_installed(solvers: Sequence[str], packages: dict[str, str]) -> list[str]:
    """The ``solvers`` whose module (``packages[solver]``; none listed: SciPy's or ours) is not
    installed: a command leaves them out and its report says so."""
    import importlib.util

    return [
        solver
        for solver in solvers
        if solver in packages and importlib.util.find_spec(packages[solver]) is None
    ]


class BudgetExhausted(Exception):
    """Raised by a budgeted objective of a peer comparison when its budget is spent."""


class Budgeted:
    """``f`` (plus noise) with a hard evaluation budget; remembers the best point evaluated."""

    def __init__(self, f: Any, budget: int, sigma: float, seed: int) -> None:
        self.f, self.budget, self.sigma = f, budget, sigma
        self.noise = np.random.default_rng(seed)
        self.nfev = 0
        self.best_value, self.best_x = np.inf, None

    def __call__(self, x: np.ndarray) -> float:
        if self.nfev >= self.budget:
            raise BudgetExhausted
        self.nfev += 1
        value = float(self.f(x)) + (self.sigma * self.noise.standard_normal() if self.sigma else 0)
        if value < self.best_value:
            self.best_value, self.best_x = value, np.array(x, dtype=float)
        return value


def add_common_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    """``--quick``, ``--out`` and ``--jobs``."""
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a reduced run (under 2 minutes on 2 CPU cores) for CI and a first look",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("benchmark-results") / name,
        help=f"output directory (default: benchmark-results/{name})",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="worker processes (default: one per CPU)",
    )


def progress(iterable: Iterable[Any], total: int, desc: str) -> Iterable[Any]:
    """A tqdm bar on stderr when tqdm is installed, else the plain iterable."""
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is in the benchmarks extra
        return iterable
    return tqdm(iterable, total=total, desc=desc, file=sys.stderr, mininterval=1.0)


def _single_threaded() -> None:
    """Pin BLAS and torch to one thread per worker process, so ``--jobs`` sets the load.

    The workers are forked after NumPy loaded its BLAS, so environment variables come too late;
    threadpoolctl resizes the loaded pools. This matters: with two workers on two cores, each
    with a two-thread OpenBLAS pool, one ZoVH iteration at ``d = 1e5`` took 96 ms instead of 8.
    """
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - comes with scikit-learn, in the benchmarks extra
        pass
    else:
        threadpool_limits(1)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)


def run_jobs(
    function: Callable[[Any], Any], jobs: Sequence[Any], n_workers: int, desc: str
) -> list[Any]:
    """``[function(job) for job in jobs]``, in ``n_workers`` processes, with a progress bar."""
    if n_workers <= 1 or len(jobs) <= 1:
        return [function(job) for job in progress(jobs, len(jobs), desc)]
    with ProcessPoolExecutor(max_workers=n_workers, initializer=_single_threaded) as pool:
        return list(progress(pool.map(function, jobs), len(jobs), desc))


def machine() -> dict[str, Any]:
    """The machine and the versions of the packages that shape the numbers."""
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "packages": versions,
    }


class Report:
    """Collects the tables of one command and writes the Markdown report and the record.

    Parameters
    ----------
    args : argparse.Namespace
        The command's arguments: ``out``, the output directory (created), and ``argv``, the
        arguments after ``python -m zovh_opt.benchmarks`` (recorded as the exact command).
    name : str
        The command's name, also the stem of the files written.
    title : str
        Heading of the Markdown report.
    """

    def __init__(self, args: argparse.Namespace, name: str, title: str) -> None:
        self.out = Path(args.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.title = title
        self.sections: list[str] = []
        self.started = time.perf_counter()
        self.argv = list(args.argv)
        self.command = "python -m zovh_opt.benchmarks " + shlex.join(self.argv)

    def text(self, paragraph: str) -> None:
        self.sections.append(paragraph.strip())

    def table(
        self, header: Sequence[str], rows: Iterable[Sequence[Any]], caption: str = ""
    ) -> None:
        lines = [f"**{caption}**", ""] if caption else []
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "|".join("---" for _ in header) + "|")
        lines.extend("| " + " | ".join(str(cell) for cell in row) + " |" for row in rows)
        self.sections.append("\n".join(lines))

    def figure(self, fig: Any) -> Path:
        path = self.out / f"{self.name}.png"
        fig.savefig(path, dpi=120, bbox_inches="tight")
        self.sections.append(f"![{self.title}]({path.name})")
        return path

    def write(self, settings: dict[str, Any], data: Any) -> Path:
        """Write ``<name>.md`` and ``record.json``; return the Markdown path."""
        record = {
            "command": self.command,
            "argv": self.argv,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "seconds": round(time.perf_counter() - self.started, 1),
            "machine": machine(),
            "settings": settings,
        }
        info = record["machine"]
        versions = ", ".join(f"{k} {v}" for k, v in info["packages"].items())
        footer = (
            "### Record\n\n"
            f"- command: `{record['command']}`\n"
            f"- date: {record['date']}, {record['seconds']} s\n"
            f"- machine: {info['platform']}, {info['processor']}, {info['cpus']} CPUs, "
            f"Python {info['python']}\n"
            f"- packages: {versions}\n"
            f"- settings: `{json.dumps(settings)}`"
        )
        md = self.out / f"{self.name}.md"
        md.write_text("\n\n".join([f"## {self.title}", *self.sections, footer]) + "\n")
        with open(self.out / "record.json", "w") as fh:
            json.dump({**record, "data": data}, fh, indent=1, default=float)
        return md


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the non-interactive Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def fmt(value: float, digits: int = 3) -> str:
    """A number for a table: ``digits`` significant digits, ``-`` for NaN."""
    if value != value:
        return "-"
    return f"{value:.{digits}g}"
