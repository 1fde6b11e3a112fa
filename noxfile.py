"""Developer sessions: ``nox -s tests`` (backend matrix), ``nox -s lint``, ``nox -s docs``."""

import nox

nox.options.sessions = ["tests", "lint"]
# PyTorch's CPU build; an unpinned torch would pull several GB of CUDA wheels
TORCH = "torch==2.13.0"


@nox.session
@nox.parametrize("backend", ["numpy", "array_api_strict", "torch"])
def tests(session: nox.Session, backend: str) -> None:
    """The test suite on one array backend."""
    session.install("-e", ".[test]")
    if backend == "torch":
        session.install(TORCH)
    session.run("pytest", *session.posargs, env={"ZOVH_ARRAY_BACKENDS": backend})


@nox.session
def tests_gpu(session: nox.Session) -> None:
    """CuPy and CUDA PyTorch; needs an NVIDIA GPU (not in the default set)."""
    session.install("-e", ".[test]", "cupy-cuda12x", "torch")
    session.run(
        "pytest",
        *session.posargs,
        env={"ZOVH_ARRAY_BACKENDS": "cupy,torch", "ZOVH_TORCH_DEVICE": "cuda"},
    )


@nox.session
def lint(session: nox.Session) -> None:
    """ruff's lint and formatter check over the package, tests, examples and experiments."""
    session.install("ruff==0.17.6")
    paths = ("zovh_opt", "tests", "examples", "experiments", "noxfile.py", "docs/conf.py")
    session.run("ruff", "check", *paths)
    session.run("ruff", "format", "--check", *paths)


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site into docs/_build/html; any Sphinx warning is an error."""
    session.install("-e", ".[docs]")
    session.run(
        "sphinx-build",
        "-W",
        "--keep-going",
        "-b",
        "html",
        "docs",
        "docs/_build/html",
        *session.posargs,
    )
