"""The options every method shares (budgets, tolerances, noise, reporting): their names,
defaults and checks; the check of ``method`` and of unknown option names; and of ``x0``."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from array_api_compat import is_array_api_obj
from scipy.optimize import OptimizeWarning

from .._arrays.backend import as_array, namespace_of, to_numpy
from .._methods import METHODS
from .._methods.option_specs import (
    Option,
    boolean,
    finite_real,
    integer_between,
    integer_or_auto,
    optional,
    positive_or_auto,
    positive_real,
    resolve,
)

__all__ = [
    "DRIVER_OPTIONS",
    "checked_method",
    "disp_option",
    "known_options",
    "run_options",
    "validated_x0",
]


def _disp(name: str, value: Any) -> int:
    """``False`` or ``0`` (0: silent), ``True`` (-1: about 20 rows a run) or print every
    ``value`` iterations, as SciPy's ``disp`` takes 0 and 1 for False and True."""
    if isinstance(value, bool):
        return -1 if value else 0
    return integer_between(0, BIG)(name, value)


BIG = 2**62  # counts beyond any run: an upper bound that keeps every count a 64-bit integer


def disp_option(value: int) -> bool | int:
    """The ``disp`` option that `_disp` turns into ``value``."""
    return {-1: True, 0: False}.get(value, value)


def _x_scale(name: str, value: Any) -> str | list[float]:
    """``"x0"``, a finite number > 0 or a one-dimensional sequence of them (host floats; the
    length is checked against ``x0``'s when the run starts)."""
    if isinstance(value, str):
        if value != "x0":
            raise ValueError(f"{name} must be 'x0' or positive numbers, got {value!r}")
        return value
    try:
        array = is_array_api_obj(value)
        host = np.asarray(to_numpy(value) if array else value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be 'x0' or positive numbers, got {value!r}") from None
    if host.ndim > 1 or not np.all(np.isfinite(host)) or not np.all(host > 0):
        raise ValueError(
            f"{name} must be 'x0' or finite numbers > 0, one for all or one per coordinate"
        )
    return host.tolist()


def _noisy(name: str, value: Any) -> Any:
    """``noisy``: ``"auto"`` or a bool."""
    if isinstance(value, str) and value == "auto":
        return "auto"
    try:
        return boolean(name, value)
    except TypeError:
        raise TypeError(f"{name} must be True, False or 'auto', got {value!r}") from None


def _auto_or_false(name: str, value: Any) -> Any:
    """``"auto"`` or ``False``."""
    if (isinstance(value, str) and value == "auto") or value is False:
        return value
    raise ValueError(f"{name} must be 'auto' or False, got {value!r}")


DRIVER_OPTIONS: dict[str, Option] = {
    "maxiter": Option(None, optional(integer_between(1, BIG))),
    "maxfev": Option(None, optional(integer_between(1, BIG))),
    "maxtime": Option(None, optional(positive_real)),
    "ftarget": Option(None, optional(finite_real)),
    "ftol": Option("auto", optional(positive_or_auto)),
    "ftol_window": Option(None, optional(integer_between(1, BIG))),
    "xtol": Option("auto", optional(positive_or_auto)),
    "flat_iterations": Option("auto", optional(integer_or_auto(1, BIG))),
    "noisy": Option("auto", _noisy),
    "final_evaluations": Option(None, optional(integer_between(1, 10_000))),
    "max_restarts": Option(5, integer_between(0, 10**6)),
    "disp": Option(False, _disp),
    "progress": Option(False, boolean),
    "x_scale": Option(None, optional(_x_scale)),
    "quasi_newton": Option("auto", _auto_or_false),
}


def checked_method(method: Any) -> str:
    """``method`` if it names a method, else ``ValueError`` listing the names."""
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be one of {sorted(METHODS)}, got {method!r}")
    return method


def known_options(method: str, options: dict[str, Any], stacklevel: int) -> dict[str, Any]:
    """``options`` without the names ``method`` does not know, which warn like SciPy, and with
    SciPy's ``maxfun`` (L-BFGS-B, TNC) read as ``maxfev``."""
    if "maxfun" in options:
        maxfun = options.pop("maxfun")
        if "maxfev" in options and options["maxfev"] != maxfun:
            raise ValueError(
                f"maxfun is another name for maxfev; got both, and they differ "
                f"({maxfun!r} and {options['maxfev']!r})"
            )
        options["maxfev"] = maxfun
    specs = {**METHODS[method].options, **DRIVER_OPTIONS}
    unknown = sorted(set(options) - set(specs))
    if unknown:
        warnings.warn(
            f"Unknown solver options: {', '.join(unknown)}",
            OptimizeWarning,
            stacklevel=stacklevel + 1,
        )
    return {k: v for k, v in options.items() if k in specs}


def run_options(
    method: str, options: dict[str, Any] | None, tol: float | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The driver's options, checked and with their defaults, and the method's (checked by
    the method): unknown names warn (`known_options`), ``tol`` sets ``ftol`` unless given."""
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"options must be a dict, got {type(options).__name__}")
    options = known_options(method, dict(options or {}), stacklevel=3)
    if tol is not None:
        options.setdefault("ftol", tol)
    method_options = {k: v for k, v in options.items() if k in METHODS[method].options}
    driver = resolve(DRIVER_OPTIONS, options)
    if driver["final_evaluations"] is None and driver["noisy"] is False:
        driver["final_evaluations"] = 1
    return driver, method_options


def validated_x0(x0: Any) -> Any:
    """``x0`` as a finite, non-empty, one-dimensional float32 or float64 array; a scalar is a
    one-element array, as in SciPy."""
    x0 = as_array(x0)
    xp = namespace_of(x0)
    if x0.ndim == 0:
        x0 = xp.reshape(x0, (1,))
    if x0.ndim != 1 or x0.shape[0] == 0:
        raise ValueError(
            f"x0 must be a non-empty one-dimensional array, got shape {tuple(x0.shape)}"
        )
    if xp.isdtype(x0.dtype, "complex floating") or xp.isdtype(x0.dtype, "bool"):
        raise TypeError(f"x0 must be real, got dtype {x0.dtype}")
    if not xp.isdtype(x0.dtype, "real floating"):
        x0 = xp.astype(x0, xp.float64)
    elif x0.dtype not in (xp.float32, xp.float64):
        raise TypeError(f"x0 must be float32 or float64, got dtype {x0.dtype}")
    if not bool(xp.all(xp.isfinite(x0))):
        raise ValueError("x0 must be finite")
    return x0
