"""Everything that knows about concrete array libraries.

The rest of the package is written once against the Python array API standard and gets its
namespace from its inputs. This module is the single place that imports NumPy, PyTorch or CuPy
for computation; ``tests/test_backend_isolation.py`` keeps it that way. It does three jobs:

* find the array namespace of the caller's arrays (`namespace_of`) and turn Python sequences
  into NumPy arrays, as ``scipy.optimize.minimize`` does;
* turn the SPEC 7 ``rng`` argument into a host-side master generator that hands out one integer
  seed per query (`SeedSource`);
* draw a standard Gaussian direction from such a seed, natively where the array lives
  (`gaussian_direction`).

Directions on the CPU (NumPy, array-api-strict, CPU PyTorch tensors) come from NumPy's
``Generator``, so one integer seed gives the same directions, and the same run up to rounding,
on every CPU backend. Directions for GPU arrays are drawn on the device by ``torch.Generator``
or ``cupy.random``; nothing is copied between host and device.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import array_api_compat
import numpy as np

__all__ = [
    "SeedSource",
    "as_array",
    "gaussian_direction",
    "namespace_of",
    "real_scalar",
    "to_host_floats",
]

_SEED_BOUND = 2**63 - 1


def namespace_of(*arrays: Any) -> Any:
    """Return the array API namespace shared by ``arrays``.

    Raises
    ------
    TypeError
        If the arrays belong to different array libraries; the message names both.
    """
    spaces = {}
    for a in arrays:
        xp = array_api_compat.array_namespace(a)
        spaces.setdefault(xp.__name__, xp)
    if len(spaces) > 1:
        names = " and ".join(sorted(spaces))
        raise TypeError(f"arrays from different array libraries cannot be mixed: {names}")
    return next(iter(spaces.values()))


def as_array(x: Any) -> Any:
    """Return ``x`` unchanged if it is an array of a known library, else ``numpy.asarray(x)``."""
    if array_api_compat.is_array_api_obj(x):
        return x
    return np.asarray(x)


def real_scalar(value: Any, what: str) -> float:
    """``value`` (a real number, or a one-element array of any library) as a Python float.

    Raises
    ------
    TypeError
        If ``value`` is not real (bool, complex, a string...) or has more than one element;
        ``what`` names it in the message.
    """
    if array_api_compat.is_array_api_obj(value):
        xp = array_api_compat.array_namespace(value)
        size = math.prod(value.shape)
        if size != 1 or not xp.isdtype(value.dtype, ("real floating", "integral")):
            raise TypeError(
                f"{what} must be a real scalar, got an array of shape {tuple(value.shape)} "
                f"and dtype {value.dtype}"
            )
        return float(xp.reshape(value, ()))
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)):
        return float(value)
    raise TypeError(f"{what} must be a real scalar, got {type(value).__name__}")


def to_host_floats(values: Any, what: str) -> list[float]:
    """A one-dimensional array (any library, any device) or a sequence of reals as floats.

    One device-to-host copy for GPU arrays. Raises ``TypeError`` for non-real entries and
    ``ValueError`` for arrays that are not one-dimensional; ``what`` names ``values``.
    """
    if array_api_compat.is_array_api_obj(values):
        xp = array_api_compat.array_namespace(values)
        if values.ndim != 1:
            raise ValueError(f"{what} must be one-dimensional, got shape {tuple(values.shape)}")
        if not xp.isdtype(values.dtype, ("real floating", "integral")):
            raise TypeError(f"{what} must be real numbers, got dtype {values.dtype}")
        if array_api_compat.is_torch_array(values):
            return [float(v) for v in values.detach().cpu().tolist()]
        if array_api_compat.is_cupy_array(values):
            return [float(v) for v in values.get().tolist()]
        if array_api_compat.is_numpy_array(values):
            return [float(v) for v in values.tolist()]
        return [float(values[i]) for i in range(values.shape[0])]
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{what} must be a sequence of real numbers, got {type(values).__name__}")
    return [real_scalar(v, f"each of {what}") for v in values]


def _is_cpu(x: Any) -> bool:
    if array_api_compat.is_numpy_array(x) or array_api_compat.is_array_api_strict_namespace(
        array_api_compat.array_namespace(x)
    ):
        return True
    if array_api_compat.is_torch_array(x):
        return x.device.type == "cpu"
    return False


class SeedSource:
    """Master generator that hands out one integer seed per query direction.

    Parameters
    ----------
    rng : None, int, SeedSequence, numpy.random.Generator, torch.Generator or cupy generator
        SPEC 7 style seed. ``None`` draws fresh OS entropy; an int or ``SeedSequence`` seeds a
        new NumPy generator; a NumPy ``Generator`` is used (and advanced) as it is. A
        ``torch.Generator`` or a CuPy generator is asked once for a 63-bit seed, and the
        directions are then drawn with that library's generator on the array's device.

    Notes
    -----
    The seeds themselves always come from a NumPy ``Generator`` on the host: they are Python
    integers, so storing and regenerating directions never touches device memory.
    """

    def __init__(self, rng: Any = None) -> None:
        self.native = None  # library whose generator draws the directions: None, "torch", "cupy"
        if rng is None or isinstance(rng, (numbers.Integral, np.random.SeedSequence)):
            if isinstance(rng, numbers.Integral) and not isinstance(rng, bool) and rng < 0:
                raise ValueError(f"rng: an integer seed must be non-negative, got {rng}")
            if isinstance(rng, bool):
                raise TypeError("rng: expected None, an int, or a generator, got a bool")
            self.generator = np.random.default_rng(rng)
        elif isinstance(rng, np.random.Generator):
            self.generator = rng
        elif isinstance(rng, np.random.RandomState):
            raise TypeError(
                "rng: numpy.random.RandomState is not accepted (SPEC 7); pass an int seed or "
                "numpy.random.default_rng(seed)"
            )
        elif _module_of(rng) == "torch":
            import torch

            seed = torch.randint(0, _SEED_BOUND, (1,), generator=rng, device=rng.device)
            self.generator = np.random.default_rng(int(seed.item()))
            self.native = "torch"
        elif _module_of(rng) == "cupy":
            seed = rng.integers(0, _SEED_BOUND, size=1)
            self.generator = np.random.default_rng(int(seed.item()))
            self.native = "cupy"
        else:
            raise TypeError(
                "rng: expected None, an int, a numpy.random.Generator, a torch.Generator or a "
                f"cupy generator, got {type(rng).__name__}"
            )

    def seeds(self, n: int) -> list[int]:
        """Return ``n`` fresh integer seeds, one per direction."""
        return [int(s) for s in self.generator.integers(0, _SEED_BOUND, size=n)]

    def get_state(self) -> dict:
        """State of the master generator, enough to continue bit for bit."""
        return {"bit_generator": self.generator.bit_generator.state, "native": self.native}

    def set_state(self, state: dict) -> None:
        """Restore a state returned by `get_state`."""
        self.generator.bit_generator.state = state["bit_generator"]
        self.native = state["native"]


def _module_of(obj: Any) -> str:
    return type(obj).__module__.split(".")[0]


def gaussian_direction(seed: int, like: Any, native: str | None = None) -> Any:
    """Draw ``u ~ N(0, I_d)`` from ``seed``, with the shape, dtype and device of ``like``.

    Parameters
    ----------
    seed : int
        Seed of this one direction; the same seed always gives the same bits.
    like : array
        One-dimensional array whose namespace, dtype and device the direction takes.
    native : {None, "torch", "cupy"}
        Draw with this library's generator even on the CPU (set when the user passed that
        library's generator as ``rng``).
    """
    d = like.shape[0]
    if array_api_compat.is_torch_array(like) and (native == "torch" or not _is_cpu(like)):
        import torch

        gen = torch.Generator(device=like.device)
        gen.manual_seed(seed)
        return torch.randn(d, generator=gen, dtype=like.dtype, device=like.device)
    if array_api_compat.is_cupy_array(like):
        import cupy

        with like.device:
            return cupy.random.default_rng(seed).standard_normal(d, dtype=like.dtype)
    xp = array_api_compat.array_namespace(like)
    dtype = np.float32 if like.dtype == xp.float32 else np.float64
    u = np.random.default_rng(seed).standard_normal(d, dtype=dtype)
    if array_api_compat.is_numpy_array(like):
        return u
    if array_api_compat.is_torch_array(like):
        import torch

        return torch.from_numpy(u)
    return xp.asarray(u)
