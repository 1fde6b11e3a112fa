"""The tuning constants in one place (issue #68): `zovh_opt.tuning` holds them, a run reads the
active tuning, and an experiment varies it with `dataclasses.replace` and `using`."""

from __future__ import annotations

import ast
import dataclasses
import pathlib
import threading

import numpy as np
import pytest

import zovh_opt
from zovh_opt import tuning

PACKAGE = pathlib.Path(zovh_opt.__file__).parent


def test_the_default_is_active_and_frozen():
    assert tuning.active() is tuning.DEFAULT
    with pytest.raises(dataclasses.FrozenInstanceError):
        tuning.DEFAULT.stopping.MAXFEV_PER_DIMENSION = 1  # type: ignore[misc]


def test_a_run_reads_the_tuning_using_sets_and_the_default_again_after():
    budget = dataclasses.replace(tuning.DEFAULT.stopping, MAXFEV_PER_DIMENSION=7)
    varied = dataclasses.replace(tuning.DEFAULT, stopping=budget)
    with tuning.using(varied) as active:
        assert active is varied and tuning.active() is varied
        assert zovh_opt.Optimizer(np.ones(5), rng=0).options["maxfev"] == 35
    assert zovh_opt.Optimizer(np.ones(5), rng=0).options["maxfev"] == 5000
    assert tuning.active() is tuning.DEFAULT


def test_using_holds_in_its_own_thread_only():
    varied = dataclasses.replace(
        tuning.DEFAULT, stopping=dataclasses.replace(tuning.DEFAULT.stopping, FTOL=1e-3)
    )
    seen = []
    with tuning.using(varied):
        thread = threading.Thread(target=lambda: seen.append(tuning.active()))
        thread.start()
        thread.join()
    assert seen == [tuning.DEFAULT]


def test_using_takes_a_tuning_only():
    with pytest.raises(TypeError, match="Tuning"):
        with tuning.using(tuning.DEFAULT.stopping):  # type: ignore[arg-type]
            pass


def test_no_module_defines_a_constant_the_tuning_holds():
    fields = {f.name for part in dataclasses.fields(tuning.Tuning) for f in
              dataclasses.fields(getattr(tuning.DEFAULT, part.name))}  # fmt: skip
    again = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "tuning.py" and path.parent == PACKAGE:
            continue
        for node in ast.parse(path.read_text()).body:
            targets = node.targets if isinstance(node, ast.Assign) else []
            for target in targets:
                names = target.elts if isinstance(target, ast.Tuple) else [target]
                again += [f"{path.name}: {n.id}" for n in names if getattr(n, "id", "") in fields]
    assert not again
