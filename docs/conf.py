"""Sphinx configuration: ``nox -s docs`` builds the site into ``docs/_build/html``."""

import warnings

import zovh_opt

project = "zovh-opt"
author = "zovh-opt developers"
copyright = "2026, zovh-opt developers"
release = zovh_opt.__version__
version = release

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # MathJax from the site itself, not a CDN: works offline
    "sphinx.ext.viewcode",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
# the benchmark reports are included by the pages that discuss them, not built on their own
exclude_patterns = ["_build", "results/**/*.md"]

myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
myst_dmath_double_inline = True

default_role = "py:obj"  # `zovh_opt.minimize` in a docstring links to its entry
autodoc_typehints = "none"  # the numpydoc Parameters sections carry the types
autodoc_member_order = "bysource"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

html_theme = "pydata_sphinx_theme"
html_title = f"zovh-opt {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_sidebars = {"index": [], "getting-started": [], "theory": [], "changelog": []}


# ``minimize`` documents its options in an "Options" section, as SciPy's methods do. numpydoc
# knows no such section (it would drop it), so it is cut out before numpydoc runs and rendered
# after it as a definition list under an "Options" rubric, ahead of Notes and Examples.
_options: dict[str, list[str]] = {}
# numpydoc also reads the raw docstring for the signature and says so; the section is handled
warnings.filterwarnings("ignore", message="Unknown section Options", category=UserWarning)


def _is_header(lines: list[str], i: int) -> bool:
    return (
        i + 1 < len(lines)
        and lines[i].strip() != ""
        and set(lines[i + 1].strip()) == {"-"}
        and len(lines[i + 1].strip()) == len(lines[i].strip())
    )


def _cut_options(app, what, name, obj, options, lines):
    starts = [
        i for i, line in enumerate(lines) if line.strip() == "Options" and _is_header(lines, i)
    ]
    if not starts:
        return
    start = starts[0]
    end = next((i for i in range(start + 2, len(lines)) if _is_header(lines, i)), len(lines))
    _options[name] = lines[start + 2 : end]
    del lines[start:end]


def _render_options(app, what, name, obj, options, lines):
    body = _options.pop(name, None)
    if body is None:
        return
    rendered = ["", ".. rubric:: Options", ""]
    for line in body:
        if line and not line.startswith(" "):
            option, _, kind = line.partition(" : ")
            rendered.append(f"``{option.strip()}`` : {kind.strip()}" if kind else f"``{line}``")
        else:
            rendered.append(line)
    rendered.append("")
    at = next(
        (
            i
            for i, line in enumerate(lines)
            if line.startswith(".. rubric:: Notes") or line.startswith(".. rubric:: Examples")
        ),
        len(lines),
    )
    lines[at:at] = rendered


def _module_sections_as_rubrics(app, what, name, obj, options, lines):
    """Section headers in a module docstring would become document sections with clashing
    labels ("examples" on every module page); render them as rubrics, as numpydoc does."""
    if what != "module":
        return
    for i in range(len(lines) - 1, -1, -1):
        if _is_header(lines, i):
            lines[i : i + 2] = [f".. rubric:: {lines[i].strip()}", ""]


def setup(app):
    app.connect("autodoc-process-docstring", _module_sections_as_rubrics, priority=100)
    app.connect("autodoc-process-docstring", _cut_options, priority=100)
    app.connect("autodoc-process-docstring", _render_options, priority=900)
