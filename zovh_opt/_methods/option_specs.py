"""Declarative option specifications and their validation.

Each method lists its options as `Option` objects; the driver validates what the user passed
against them, so every option error reads the same: the option's name, what is allowed, and what
was given.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _real(name: str, value: Any, allowed: str) -> float:
    if not _is_real(value):
        raise TypeError(f"{name} must be {allowed}, got {type(value).__name__} {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return float(value)


def positive_real(name: str, value: Any) -> float:
    """A finite real number > 0."""
    value = _real(name, value, "a finite number > 0")
    if value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return value


def non_negative_real(name: str, value: Any) -> float:
    """A finite real number >= 0."""
    value = _real(name, value, "a finite number >= 0")
    if value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return value


def positive_or_auto(name: str, value: Any) -> float | str:
    """``"auto"`` or a finite real number > 0."""
    return "auto" if isinstance(value, str) and value == "auto" else positive_real(name, value)


def fraction(name: str, value: Any) -> float:
    """A real number in ``(0, 1]``."""
    value = _real(name, value, "a number in (0, 1]")
    if not 0 < value <= 1:
        raise ValueError(f"{name} must be a number in (0, 1], got {value!r}")
    return value


def finite_real(name: str, value: Any) -> float:
    """Any finite real number."""
    return _real(name, value, "a finite number")


def integer_between(minimum: int, maximum: int) -> Callable[[str, Any], int]:
    """A validator for integers in ``[minimum, maximum]``; a float with an integral value
    (``maxfev=1e4``) is one, as SciPy's methods take it."""

    def check(name: str, value: Any) -> int:
        allowed = f"an integer in [{minimum}, {maximum}]"
        if isinstance(value, numbers.Real) and not isinstance(value, (bool, numbers.Integral)):
            if math.isfinite(value) and float(value).is_integer():
                value = int(value)
        if not isinstance(value, numbers.Integral) or isinstance(value, bool):
            raise TypeError(f"{name} must be {allowed}, got {value!r}")
        if not minimum <= value <= maximum:
            raise ValueError(f"{name} must be {allowed}, got {value!r}")
        return int(value)

    return check


def integer_or_auto(minimum: int, maximum: int) -> Callable[[str, Any], int | str]:
    """A validator for ``"auto"`` or an integer in ``[minimum, maximum]``."""
    check = integer_between(minimum, maximum)

    def wrapped(name: str, value: Any) -> int | str:
        return "auto" if isinstance(value, str) and value == "auto" else check(name, value)

    return wrapped


def one_of(*choices: str) -> Callable[[str, Any], str]:
    """A validator for a string among ``choices``."""

    def check(name: str, value: Any) -> str:
        if value not in choices:
            allowed = ", ".join(repr(c) for c in choices)
            raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
        return value

    return check


def optional(check: Callable[[str, Any], Any]) -> Callable[[str, Any], Any]:
    """Allow ``None`` besides what ``check`` allows."""

    def wrapped(name: str, value: Any) -> Any:
        return None if value is None else check(name, value)

    return wrapped


def boolean(name: str, value: Any) -> bool:
    """``True`` or ``False``."""
    if not isinstance(value, bool) and not (
        isinstance(value, numbers.Integral) and value in (0, 1)
    ):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


@dataclass(frozen=True)
class Option:
    """One option: its default and its validator."""

    default: Any
    check: Callable[[str, Any], Any]


def resolve(specs: dict[str, Option], given: dict[str, Any]) -> dict[str, Any]:
    """Validate ``given`` against ``specs`` and fill in defaults; unknown keys are ignored."""
    return {
        name: spec.check(name, given[name]) if name in given else spec.default
        for name, spec in specs.items()
    }
