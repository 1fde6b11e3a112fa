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
    assert "zovh_opt._coordinates" in GRAPH["zovh_opt._optimizer"]
    assert "zovh_opt._methods.zovh" in GRAPH["zovh_opt._methods.zovh_paper"]
    assert "zovh_opt.estimators" in GRAPH["zovh_opt._methods.zovh_paper"]  # `from .. import`


def test_data_flows_one_way_driver_method_estimators():
    """The estimators know no method, the methods no driver part."""
    driver = {"zovh_opt._optimizer", "zovh_opt._minimize", "zovh_opt._stopping"}
    driver |= {"zovh_opt._safeguard", "zovh_opt._returned_point", "zovh_opt._coordinates"}
    methods = {m for m in MODULES if m.startswith("zovh_opt._methods")}
    assert not GRAPH["zovh_opt.estimators"] & (methods | driver)
    for method in methods:
        assert not GRAPH[method] & driver, method


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
    tree = ast.parse((PACKAGE / "_optimizer.py").read_text())
    (optimizer,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Optimizer"]
    assert optimizer.end_lineno - optimizer.lineno + 1 <= 400
    long = [
        f"{name}: {node.name} ({code_lines(node)} lines)"
        for name, path in MODULES.items()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and code_lines(node) > 80
    ]
    assert not long
