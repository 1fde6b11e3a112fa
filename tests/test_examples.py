"""Every script in ``examples/`` runs to completion in its fast mode (``--quick``)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
NEEDS = {
    "adversarial_attack.py": ("torch", "sklearn"),
    "compare_methods.py": ("matplotlib",),
    "finetune.py": ("torch", "transformers"),
}
# what each example prints when it did its job (its own checks exit non-zero otherwise)
EXPECT = {
    "quickstart.py": "zovh ",
    "noisy_objective.py": "notices the noise",
    "newsvendor.py": "fun is the mean of fresh simulations",
    "compare_methods.py": "plot saved to",
    "gpu.py": "",  # "skipping" without a GPU, a line per backend with one
    "parallel_evaluation.py": "same x in every run: True",
    "resume_from_checkpoint.py": "same x bit for bit: True",
    "scipy_dropin.py": "every point in the box: True",
    "ode_fit.py": "zovh x_scale=1",
    "adversarial_attack.py": "test accuracy",
    "finetune.py": "validation loss",
}
# run in CI's slow set, out of the README's two minutes (ode_fit.py 6 s, compare_methods.py 4 s,
# finetune.py 15 s)
SLOW = {"adversarial_attack.py", "ode_fit.py", "compare_methods.py", "finetune.py"}


def test_every_example_is_listed():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(EXPECT)


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in sorted(EXPECT)],
)
def test_example_runs(name, tmp_path):
    for module in NEEDS.get(name, ()):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{name} needs {module}")
    extra = ["--out", str(tmp_path / "plot.png")] if name == "compare_methods.py" else []
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), "--quick", *extra],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert EXPECT[name] in done.stdout
    if name == "compare_methods.py":
        assert (tmp_path / "plot.png").stat().st_size > 10_000
