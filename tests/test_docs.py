"""Every public name is in the API reference and has a runnable Examples section.

The Examples themselves run as doctests (``--doctest-modules`` and ``--doctest-glob=*.md`` in
``pyproject.toml``); this checks that none is missing.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import zovh_opt
from zovh_opt import estimators, problems

API = Path(__file__).resolve().parent.parent / "docs" / "api"
PUBLIC = [
    *(("zovh_opt", n) for n in zovh_opt.__all__ if n not in ("__version__", "METHODS")),
    *(("zovh_opt.estimators", n) for n in estimators.__all__),
    *(("zovh_opt.problems", n) for n in problems.__all__),
]
MODULES = {"zovh_opt": zovh_opt, "zovh_opt.estimators": estimators, "zovh_opt.problems": problems}


def reference_text() -> str:
    return "\n".join(p.read_text() for p in sorted(API.glob("*.md")))


@pytest.mark.parametrize(("module", "name"), PUBLIC, ids=[f"{m}.{n}" for m, n in PUBLIC])
def test_public_name_has_examples(module, name):
    obj = getattr(MODULES[module], name)
    doc = inspect.getdoc(obj) if inspect.ismodule(obj) or callable(obj) else None
    doc = doc or inspect.getdoc(type(obj))  # the problem instances: their class's docstring
    assert "Examples\n--------" in doc and ">>> " in doc


@pytest.mark.parametrize(("module", "name"), PUBLIC, ids=[f"{m}.{n}" for m, n in PUBLIC])
def test_public_name_is_in_the_api_reference(module, name):
    text = reference_text()
    if name in ("estimators", "problems"):
        assert f"automodule:: zovh_opt.{name}" in text
    else:
        assert any(
            f"{directive}:: {name}\n" in text
            for directive in ("autofunction", "autoclass", "autoexception", "autodata")
        )


def test_methods_registry_is_documented_with_an_example():
    text = (API / "methods.md").read_text()
    assert ".. data:: METHODS" in text and ">>> sorted(zovh_opt.METHODS)" in text


def _documented_objects():
    for name in zovh_opt.__all__:
        obj = getattr(zovh_opt, name)
        if isinstance(obj, str):
            continue
        yield name, obj
        if inspect.isclass(obj):
            for attr in dir(obj):
                if not attr.startswith("_"):
                    yield f"{name}.{attr}", getattr(obj, attr)


def test_docstrings_hold_no_control_characters():
    """0.1.0's help(zovh_opt.minimize) showed a BEL: ``\\alpha`` in a docstring that is not raw."""
    bad = [
        name
        for name, obj in _documented_objects()
        if any(ord(c) < 32 and c not in "\n\t" for c in (getattr(obj, "__doc__", None) or ""))
    ]
    assert not bad, bad
