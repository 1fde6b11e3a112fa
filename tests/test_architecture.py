"""The shape of the code (issue #28): a one-way import graph, and a driver of small parts.

The graph is read from the source: every ``import`` and ``from ... import`` of a zovh_opt
module, at any depth (a function-level import hides a cycle from the interpreter, not from
this test). A package's ``__init__`` counts as the module ``zovh_opt._methods`` and so on;
importing a submodule is an edge to it, not to its package.
"""

from __future__ import annotations

import ast
import graphlib
import importlib
import pathlib
import sys

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "zovh_opt"


def module_name(path: pathlib.Path) -> str:
    parts = ["zovh_opt", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imported(name: str, path: pathlib.Path) -> set[str]:
    """The zovh_opt modules that module ``name`` imports, explicitly."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            for alias in node.names:  # `from pkg import sub` is the module pkg.sub
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
    return {module for module in found if module in MODULES and module != name}


GRAPH = {name: imported(name, path) for name, path in MODULES.items()}


def test_the_import_graph_has_no_cycle():
    try:
        order = list(graphlib.TopologicalSorter(GRAPH).static_order())
    except graphlib.CycleError as error:
        pytest.fail(f"import cycle among zovh_opt's modules: {' -> '.join(error.args[1])}")
    assert set(order) == set(MODULES)


def test_the_graph_reader_sees_imports_at_every_depth():
    assert "zovh_opt._driver.coordinates" in GRAPH["zovh_opt._driver.parts"]
    assert "zovh_opt._methods.zovh" in GRAPH["zovh_opt._methods.zovh_paper"]
    assert "zovh_opt.estimators" in GRAPH["zovh_opt._methods.zovh_paper"]  # `from .. import`


# The layers, bottom first: a module imports from its own layer and those below it only.
LAYERS = [
    ("zovh_opt._version", "zovh_opt.tuning", "zovh_opt._arrays"),  # constants, array libraries
    ("zovh_opt.estimators",),  # the paper's formulas
    ("zovh_opt._curvature", "zovh_opt._noise"),  # curvature models; noise statistics
    ("zovh_opt._methods",),  # one iteration's math, one object per method
    ("zovh_opt._driver",),  # Optimizer, its parts, minimize
    ("zovh_opt", "zovh_opt.problems", "zovh_opt.torch", "zovh_opt.benchmarks"),  # public
]


def layer(module: str) -> tuple[int, str]:
    """The layer of ``module`` and the package that places it there (the longest prefix)."""
    found = [
        (len(prefix), depth, prefix)
        for depth, prefixes in enumerate(LAYERS)
        for prefix in prefixes
        if module == prefix or module.startswith(prefix + ".")
    ]
    _, depth, prefix = max(found)
    return depth, prefix


def test_the_package_is_a_dozen_entries_in_layers():
    entries = {p.name for p in PACKAGE.iterdir() if p.name != "__pycache__"}
    assert len(entries) <= 12, sorted(entries)
    assert all(layer(module) for module in MODULES)


def test_imports_go_down_the_layers():
    """The estimators know no method, the methods no driver part, the curvature models and
    the noise statistics neither each other."""
    against = []
    for module, imports in GRAPH.items():
        depth, package = layer(module)
        for target in imports:
            target_depth, target_package = layer(target)
            if target_depth > depth or (target_depth == depth and target_package != package):
                if depth < len(LAYERS) - 1:  # the public layer may import across itself
                    against.append(f"{module} -> {target}")
    assert not against


@pytest.mark.parametrize("name", sorted(MODULES))
def test_each_module_imports_alone(name):
    if name.startswith("zovh_opt.benchmarks") and importlib.util.find_spec("cma") is None:
        pytest.skip("the benchmarks need their extra")
    if name.startswith("zovh_opt.torch") and importlib.util.find_spec("torch") is None:
        pytest.skip("zovh_opt.torch needs torch")
    saved = {k: v for k, v in sys.modules.items() if k == "zovh_opt" or k.startswith("zovh_opt.")}
    for key in saved:
        del sys.modules[key]
    try:
        importlib.import_module(name)
    finally:
        for key in [k for k in sys.modules if k == "zovh_opt" or k.startswith("zovh_opt.")]:
            del sys.modules[key]
        sys.modules.update(saved)


def code_lines(function: ast.FunctionDef) -> int:
    body = function.body
    docstring = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    start = body[0].end_lineno + 1 if docstring and len(body) > 1 else body[0].lineno
    return function.end_lineno - start + 1


def test_the_driver_is_a_thin_coordinator_and_no_function_is_long():
    tree = ast.parse((PACKAGE / "_driver/optimizer.py").read_text())
    (optimizer,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Optimizer"]
    assert optimizer.end_lineno - optimizer.lineno + 1 <= 400
    long = [
        f"{name}: {node.name} ({code_lines(node)} lines)"
        for name, path in MODULES.items()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and code_lines(node) > 80
    ]
    assert not long


def test_no_module_writes_another_objects_private_attributes():
    """``obj._name = ...`` only on ``self`` (or ``cls``): a part changes another through its
    public attributes and methods (the stages change the run's `RunParts`)."""
    writes = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            else:
                continue
            for target in targets:
                for t in target.elts if isinstance(target, ast.Tuple) else [target]:
                    private = isinstance(t, ast.Attribute) and t.attr.startswith("_")
                    if private and not t.attr.startswith("__"):
                        owner = t.value
                        if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                            writes.append(f"{name}:{node.lineno}: {ast.unparse(t)}")
    assert not writes
