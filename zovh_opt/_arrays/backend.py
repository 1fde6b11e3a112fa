"""Everything that knows about concrete array libraries.

The rest of the package is written once against the array API standard and takes its
namespace from its inputs; this module (with `zovh_opt._arrays.device_normals`, CuPy's kernel)
is the single place that imports NumPy, PyTorch or CuPy for computation
(``tests/test_backends.py`` keeps it so). It finds the caller's namespace (`namespace_of`),
says where a run's arrays live and which namespace computes (`ArraySpace`: CPU PyTorch through
zero-copy NumPy views), turns SPEC 7's ``rng`` into reproducible blocks of Gaussian directions
drawn where the arrays live (`DirectionSource`: SFC64 streams per block and span of
`STREAM_COLUMNS` on the CPU, the device's generator on a GPU, nothing of size ``d`` copied
between host and device), and draws a seed's vector the same on every backend
(`gaussian_direction`). Details: the theory page, *The run's parts in detail*.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

import array_api_compat
import numpy as np

from . import device_normals as _device_normals
from . import threads as _threads

__all__ = [
    "STREAM_COLUMNS",
    "ArraySpace",
    "DirectionSource",
    "RowStreams",
    "array_sum",
    "as_array",
    "gaussian_direction",
    "namespace_of",
    "to_numpy",
    "real_scalar",
    "to_host_floats",
]

_SEED_BOUND = 2**63 - 1
# Columns per random stream of a CPU block. A span of this many columns of any block can be
# drawn alone: the query history's passes over the directions run span by span in cache.
STREAM_COLUMNS = 1 << 14
# Columns per span when the curvature model's rows (`RowStreams`) are drawn on a GPU: a span
# is a few kernel launches per row, so spans are longer there than in the CPU's cache.
DEVICE_SPAN_COLUMNS = 1 << 20
_NUMPY = array_api_compat.array_namespace(np.empty(0))


def namespace_of(*arrays: Any) -> Any:
    """Return the array API namespace shared by ``arrays``.

    Raises
    ------
    TypeError
        If the arrays belong to different array libraries; the message names both.
    """
    if all(type(a) is np.ndarray for a in arrays):
        return _NUMPY
    spaces = {}
    for a in arrays:
        xp = array_api_compat.array_namespace(a)
        spaces.setdefault(xp.__name__, xp)
    if len(spaces) > 1:
        names = " and ".join(sorted(spaces))
        raise TypeError(f"arrays from different array libraries cannot be mixed: {names}")
    return next(iter(spaces.values()))


def array_sum(a: Any) -> Any:
    """The sum of the entries of ``a``, a 0-d array of its namespace (a NumPy array's without
    array-api-compat's wrapper: 1.5 us of a small iteration's algebra)."""
    return a.sum() if type(a) is np.ndarray else namespace_of(a).sum(a)


def as_array(x: Any) -> Any:
    """``x`` if it is an array of a known library (a PyTorch tensor detached from any autograd
    graph), else ``numpy.asarray(x)``."""
    if array_api_compat.is_torch_array(x):
        return x.detach()
    if array_api_compat.is_array_api_obj(x):
        return x
    return np.asarray(x)


def to_numpy(a: Any) -> np.ndarray:
    """An array of any known library, on any device, as a NumPy array: at most one
    device-to-host copy (none for NumPy, nor for a CPU tensor)."""
    if array_api_compat.is_numpy_array(a):
        return a
    if array_api_compat.is_torch_array(a):
        return a.detach().cpu().numpy()
    if array_api_compat.is_cupy_array(a):
        return a.get()
    host = array_api_compat.array_namespace(a).__array_namespace_info__().default_device()
    if array_api_compat.device(a) != host:  # other libraries: by way of their host device
        a = array_api_compat.to_device(a, host)
    return np.asarray(a)


def real_scalar(value: Any, what: str) -> float:
    """``value`` (a real number, or a one-element array of any library) as a Python float.

    Raises
    ------
    TypeError
        If ``value`` is not real (bool, complex, a string...) or has more than one element;
        ``what`` names it in the message.
    """
    if type(value) is float:  # the common cases first, without a namespace lookup
        return value
    if isinstance(value, (np.floating, np.integer)):  # NumPy scalars: 10 us through the lookup
        return float(value)
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
    # the common cases first, without a namespace lookup: NumPy, and CPU PyTorch floats
    if type(values) is np.ndarray and values.ndim == 1 and values.dtype.kind in "fiu":
        return values.tolist()
    if type(values) is list:
        if all(type(v) is float for v in values):
            return values[:]  # Python floats (the type itself: not a subclass such as np.float64)
        if all(isinstance(v, float) for v in values):  # NumPy float64 scalars (fun's often)
            return [float(v) for v in values]
    if (
        array_api_compat.is_torch_array(values)
        and values.ndim == 1
        and values.dtype.is_floating_point
        and values.device.type == "cpu"
    ):
        return values.tolist()
    if array_api_compat.is_array_api_obj(values):
        xp = array_api_compat.array_namespace(values)
        if values.ndim != 1:
            raise ValueError(f"{what} must be one-dimensional, got shape {tuple(values.shape)}")
        if not xp.isdtype(values.dtype, ("real floating", "integral")):
            raise TypeError(f"{what} must be real numbers, got dtype {values.dtype}")
        return [float(v) for v in to_numpy(values).tolist()]
    plain = type(values) in (list, tuple)  # the common case, without the ABC checks below
    if not plain and (
        isinstance(values, (str, bytes, Mapping, AbstractSet)) or not hasattr(values, "__iter__")
    ):
        # a dict's iteration gives its keys, a set's an arbitrary order: neither are values
        raise TypeError(
            f"{what} must be a sequence of real numbers in the order of the points, "
            f"got {type(values).__name__}"
        )
    if not plain and not isinstance(values, Sequence):  # a generator is read once, here
        values = list(values)
    if all(isinstance(v, float) for v in values):  # Python floats and NumPy float64 scalars
        return [float(v) for v in values]
    return [real_scalar(v, f"each of {what}") for v in values]


def quiet_overflow() -> Any:
    """A context in which NumPy's overflow and invalid-value warnings are off (the other
    libraries raise none): for computations whose ``inf`` or ``nan`` results the caller
    handles."""
    return np.errstate(over="ignore", invalid="ignore")


def norm(v: Any, xp: Any = None) -> float:
    """The Euclidean norm of the array ``v`` as a float, free of overflow and underflow.

    ``vector_norm`` squares the entries: in float64 entries above ``1e154`` overflow to
    ``inf`` and entries below ``1e-154`` vanish (float32: ``1e19``, ``1e-19``). Where the
    plain norm is ``inf`` or below ``sqrt(tiny / eps)`` it is computed again from ``v``
    divided by its largest entry (two more passes, only then). ``xp``, ``v``'s namespace
    where the caller knows it (looking it up costs microseconds per call).
    """
    xp = array_api_compat.array_namespace(v) if xp is None else xp
    with np.errstate(over="ignore", under="ignore"):  # NumPy's warnings: handled below
        plain = float(xp.linalg.vector_norm(v))
    info = xp.finfo(v.dtype)
    if plain >= math.sqrt(float(info.smallest_normal) / float(info.eps)) and plain < math.inf:
        return plain
    largest = float(xp.max(xp.abs(v)))
    if not (0 < largest < math.inf):
        return plain if largest == 0 or math.isnan(plain) else largest
    return largest * float(xp.linalg.vector_norm(v / largest))


_MASK64 = 2**64 - 1


def _splitmix64(z: int) -> int:
    """One round of SplitMix64: a bijective mixer of 64-bit integers."""
    z = (z + 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def _splitmix64_array(z: np.ndarray) -> np.ndarray:
    """`_splitmix64` of every entry of a ``uint64`` array (NumPy's ``uint64`` wraps)."""
    z = z + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


# Blocks whose first streams' seed words are hashed in one vectorised pass: three Python
# SplitMix64 rounds per block were a sixth of the paper's iteration at d = 10.
WORDS_AHEAD = 64
# How far before the requested block a pass starts: "seeds" storage draws its kept blocks again.
WORDS_BEHIND = 16


# The array libraries array-api-compat knows, by the names `ArraySpace.describe` records.
ARRAY_LIBRARIES = frozenset(
    {"numpy", "torch", "cupy", "array_api_strict", "dask.array", "jax.numpy", "ndonnx", "sparse"}
)


class ArraySpace:
    """Where a run's arrays live, and the namespace the optimizer computes in.

    The user's arrays (``x0``, the points handed to ``fun``, the result) keep their library,
    dtype and device. The optimizer computes in the same namespace, except for CPU PyTorch
    tensors: those are computed through zero-copy NumPy views, because a PyTorch call costs
    several microseconds of dispatch where NumPy's costs one, and an iteration at small ``d``
    is dozens of calls. `to_user` and `to_compute` convert without copying.

    Parameters
    ----------
    like : array
        A one-dimensional array of the caller's (``x0``).
    """

    def __init__(self, like: Any) -> None:
        self.user = array_api_compat.array_namespace(like)
        self.device = array_api_compat.device(like)
        self.torch_cpu = array_api_compat.is_torch_array(like) and like.device.type == "cpu"
        self.xp = _NUMPY if self.torch_cpu else self.user
        self.compute_device = "cpu" if self.torch_cpu else self.device
        self.dtype = self.xp.float32 if str(like.dtype).endswith("float32") else self.xp.float64
        self.dim = like.shape[0]
        self.numpy = self.torch_cpu or array_api_compat.is_numpy_array(like)
        self._like = self.user.empty((0,), dtype=like.dtype, device=self.device)

    def __getstate__(self) -> dict:
        return {"like": self._like, "dim": self.dim}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["like"])
        self.dim = state["dim"]

    def to_compute(self, a: Any) -> Any:
        """``a`` (an array of the user's) in the compute namespace; no copy."""
        if self.torch_cpu:
            return a.detach().numpy()
        if array_api_compat.is_torch_array(a):
            return a.detach()
        return a

    def to_user(self, a: Any) -> Any:
        """``a`` (an array of the compute namespace) in the user's namespace; no copy."""
        if self.torch_cpu:
            import torch

            return torch.from_numpy(a)
        return a

    def copy_in(self, a: Any) -> Any:
        """A private copy of the user's array ``a`` in the compute namespace."""
        return self.xp.asarray(self.to_compute(a), copy=True)

    def empty(self, shape: tuple[int, ...]) -> Any:
        if self.numpy:  # without array-api-compat's wrapper: 3 us of a small iteration
            return np.empty(shape, dtype=self.dtype)
        return self.xp.empty(shape, dtype=self.dtype, device=self.compute_device)

    def zeros(self, shape: tuple[int, ...]) -> Any:
        if self.numpy:
            return np.zeros(shape, dtype=self.dtype)
        return self.xp.zeros(shape, dtype=self.dtype, device=self.compute_device)

    def from_host(self, values: Any) -> Any:
        """A small host array (NumPy, float64) as a compute array of the run's dtype."""
        if self.numpy:
            return np.asarray(values, dtype=self.dtype)
        return self.xp.asarray(
            np.asarray(values, dtype=np.float64), dtype=self.dtype, device=self.device
        )

    def to_host(self, a: Any) -> np.ndarray:
        """A small compute array as a NumPy float64 array: one device-to-host copy."""
        if type(a) is np.ndarray:
            return np.asarray(a, dtype=np.float64)
        return np.asarray(to_numpy(a), dtype=np.float64)

    def from_numpy(self, a: np.ndarray) -> Any:
        """A compute array holding the NumPy array ``a`` (of the run's dtype) bit for bit."""
        if a.dtype != np.dtype(self.dtype_name):
            raise ValueError(f"expected an array of dtype {self.dtype_name}, got {a.dtype}")
        if self.numpy:
            return a
        return self.xp.asarray(a, device=self.compute_device)

    @property
    def dtype_name(self) -> str:
        return "float32" if self.dtype == self.xp.float32 else "float64"

    def free_memory(self) -> int | None:
        """Bytes free on the run's GPU, as PyTorch or CuPy report them; None on the CPU (where
        the operating system's figure counts caches and other processes' promises)."""
        if self.compute_device == "cpu":
            return None
        if array_api_compat.is_cupy_namespace(self.user):
            import cupy

            with self.device:
                return int(cupy.cuda.runtime.memGetInfo()[0])
        if array_api_compat.is_torch_namespace(self.user) and self.device.type == "cuda":
            import torch

            return int(torch.cuda.mem_get_info(self.device)[0])
        return None

    def describe(self) -> dict[str, str | int]:
        """The array library, device, dtype and dimension, as plain data (see `described`)."""
        return {
            "namespace": self.user.__name__.removeprefix("array_api_compat."),
            "device": str(self.device),
            "dtype": self.dtype_name,
            "dim": self.dim,
        }

    @classmethod
    def described(cls, description: dict[str, Any]) -> ArraySpace:
        """The space `describe` described: the same library, device and dtype.

        Raises ``ImportError`` when the library is missing and ``LookupError`` when this
        process has no such device.
        """
        import importlib

        name, device = description["namespace"], description["device"]
        if name not in ARRAY_LIBRARIES:  # importing a module runs its code: only these
            raise ValueError(f"unknown array library {name!r}")
        module = importlib.import_module(name)
        xp = array_api_compat.array_namespace(module.empty(0))
        if name == "torch":  # its namespace info probes every device type: slow and noisy
            found = [module.device(device)]
        else:
            found = [d for d in xp.__array_namespace_info__().devices() if str(d) == device]
        try:
            like = xp.empty((0,), dtype=getattr(xp, description["dtype"]), device=found[0])
        except Exception as error:  # torch without CUDA raises AssertionError, others differ
            raise LookupError(f"{name} has no device {device!r} in this process") from error
        space = cls(like)
        space.dim = int(description["dim"])
        return space


class DirectionSource:
    """Source of the Gaussian directions of a run, addressed by block number.

    Block ``b`` of a run is an ``(n, d)`` array of independent standard normals that depends
    only on the run's key and ``b``: it can be drawn again, bit for bit, at any time, which is
    how the ``"seeds"`` storage keeps only block numbers. Each iteration draws its directions
    as one block.

    On the CPU (NumPy, array-api-strict, CPU PyTorch) columns ``[j C, (j + 1) C)`` of block
    ``b`` (``C = STREAM_COLUMNS``) are drawn, row after row, from their own stream of NumPy's
    SFC64, seeded from a hash of the run's 128-bit key and ``(b, j)``: a block, or any span of
    it that starts a stream, can be drawn again alone. SFC64 is not counter-based, but seeding a
    stream costs about 5 us, and it draws Gaussians 1.5 times as fast as Philox4x64 (23 ms
    against 35 ms for 3e6 numbers on the CI machine class; PCG64, NumPy's default, 29 ms).
    So the same ``rng`` gives the same directions, and the same run up to rounding, on every
    CPU backend. For CUDA PyTorch, and when ``rng`` is a ``torch.Generator``, a block is drawn
    on the array's device by PyTorch's generator, seeded by a SplitMix64 hash of (key, ``b``);
    for CuPy, row ``i`` of the block by `zovh_opt._arrays.device_normals` from the seed
    ``SplitMix64(that hash ^ (i << 40))``.

    Parameters
    ----------
    rng : None, int, SeedSequence, numpy.random.Generator, torch.Generator or cupy generator
        SPEC 7 style seed. ``None`` draws fresh OS entropy; an int or ``SeedSequence`` seeds a
        new NumPy generator; a NumPy ``Generator`` is used (and advanced) as it is. The key is
        two 64-bit integers drawn from it. A ``torch.Generator`` or a CuPy generator is asked
        once for a 63-bit seed; the blocks are then drawn with PyTorch's generator (a
        ``torch.Generator``), by `zovh_opt._arrays.device_normals` (CuPy arrays), or by NumPy (NumPy
        arrays with a CuPy generator).

    Attributes
    ----------
    key : tuple of two int
        The run's key.
    native : {None, "torch", "cupy"}
        The library whose generator draws the blocks even on the CPU.
    blocks : int
        How many blocks have been handed out (`next_block`).
    """

    def __init__(self, rng: Any = None) -> None:
        self.native = None  # library whose generator draws the directions: None, "torch", "cupy"
        if rng is None or isinstance(rng, (numbers.Integral, np.random.SeedSequence)):
            if isinstance(rng, numbers.Integral) and not isinstance(rng, bool) and rng < 0:
                raise ValueError(f"rng: an integer seed must be non-negative, got {rng}")
            if isinstance(rng, bool):
                raise TypeError("rng: expected None, an int, or a generator, got a bool")
            generator = np.random.default_rng(rng)
        elif isinstance(rng, np.random.Generator):
            generator = rng
        elif isinstance(rng, np.random.RandomState):
            raise TypeError(
                "rng: numpy.random.RandomState is not accepted (SPEC 7); pass an int seed or "
                "numpy.random.default_rng(seed)"
            )
        elif _module_of(rng) == "torch":
            import torch

            seed = torch.randint(0, _SEED_BOUND, (1,), generator=rng, device=rng.device)
            generator = np.random.default_rng(int(seed.item()))
            self.native = "torch"
        elif _module_of(rng) == "cupy":
            seed = rng.integers(0, _SEED_BOUND, size=1)
            generator = np.random.default_rng(int(seed.item()))
            self.native = "cupy"
        else:
            raise TypeError(
                "rng: expected None, an int, a numpy.random.Generator, a torch.Generator or a "
                f"cupy generator, got {type(rng).__name__}"
            )
        k = generator.integers(0, 2**64, size=2, dtype=np.uint64)
        self.key = (int(k[0]), int(k[1]))
        self.blocks = 0
        self._sfc64: np.random.Generator | None = None
        self._torch: dict[Any, Any] = {}
        self._words: tuple[int, np.ndarray] | None = None  # (first block, (WORDS_AHEAD, 3))

    def copy(self) -> DirectionSource:
        """An independent source with the same key and state."""
        clone = DirectionSource.__new__(DirectionSource)
        clone.__setstate__(self.get_state())
        return clone

    def next_block(self) -> int:
        """The number of a block no one has drawn yet."""
        self.blocks += 1
        return self.blocks - 1

    def get_state(self) -> dict:
        """The state, plain integers and strings: enough to continue bit for bit."""
        return {"key": list(self.key), "native": self.native, "blocks": self.blocks}

    def set_state(self, state: dict) -> None:
        """Restore a state returned by `get_state`."""
        self.key = (int(state["key"][0]), int(state["key"][1]))
        self.native = state["native"]
        self.blocks = int(state["blocks"])

    def __getstate__(self) -> dict:
        return self.get_state()

    def __setstate__(self, state: dict) -> None:
        self._sfc64, self._torch, self._words = None, {}, None
        self.set_state(state)

    def _seed(self, block: int) -> int:
        return _splitmix64(self.key[0] ^ _splitmix64(self.key[1] ^ block)) & _SEED_BOUND

    def draws_spans(self, space: ArraySpace) -> bool:
        """Whether blocks for ``space`` are drawn span by span on the CPU (`fill_columns`):
        NumPy compute arrays, unless ``rng`` was a ``torch.Generator``."""
        return space.numpy and self.native != "torch"

    def draw(self, block: int, n: int, space: ArraySpace, out: Any = None) -> Any:
        """Block ``block``: ``n`` directions as an ``(n, d)`` array of ``space``.

        ``out``, an ``(n, d)`` array of ``space``, receives the block where that avoids a copy
        (NumPy compute arrays); the block is returned either way.
        """
        d = space.dim
        if self.draws_spans(space):
            return self._numpy_block(block, (n, d), space.dtype, out)
        if array_api_compat.is_torch_namespace(space.user):
            import torch

            gen = self._torch.get(space.device)
            if gen is None:
                gen = self._torch[space.device] = torch.Generator(device=space.device)
            gen.manual_seed(self._seed(block))
            dtype = torch.float32 if space.dtype in (np.float32, torch.float32) else torch.float64
            u = torch.randn((n, d), generator=gen, dtype=dtype, device=space.device)
            return space.to_compute(u)
        if array_api_compat.is_cupy_namespace(space.user):
            seed = self._seed(block)
            seeds = [_splitmix64(seed ^ (i << 40)) for i in range(n)]
            u = space.empty((n, d))
            return _device_normals.fill(_device_normals.row_seeds(seeds, space.device), 0, u)
        # NumPy arrays with a torch.Generator's key (the generator seeded the key), and
        # array-api-strict: NumPy's generator, then into the space
        u = self._numpy_block(block, (n, d), np.dtype(space.dtype_name), None)
        return space.xp.asarray(u, device=space.device)

    def _numpy_block(self, block: int, shape: tuple[int, int], dtype: Any, out: Any) -> Any:
        if out is None:
            out = np.empty(shape, dtype=dtype)
        self.fill_columns(block, out, 0)
        return out

    def fill_columns(self, block: int, out: np.ndarray, start: int) -> np.ndarray:
        """Columns ``start`` to ``start + out.shape[1]`` of the first ``out.shape[0]`` rows of
        block ``block``, written into the NumPy array ``out`` (CPU blocks only).

        The columns are whole streams: ``start`` is a multiple of `STREAM_COLUMNS`, and
        ``out.shape[1]`` too unless the span ends at the block's last column (a stream fills
        its rows one after the other, so a stream cut short would shift them). Drawn alone,
        they have the bits they have in the whole block.
        """
        if start % STREAM_COLUMNS:
            raise ValueError(f"start must be a multiple of {STREAM_COLUMNS}, got {start}")
        gen = self.sfc64()
        if out.shape[1] <= STREAM_COLUMNS and out.flags.c_contiguous:  # one stream, one call
            self._start_stream(block, start // STREAM_COLUMNS)
            gen.standard_normal(dtype=out.dtype, out=out)
            return out
        for offset in range(0, out.shape[1], STREAM_COLUMNS):
            part = out[:, offset : offset + STREAM_COLUMNS]
            self._start_stream(block, (start + offset) // STREAM_COLUMNS)
            if part.flags.c_contiguous:  # rows one after the other: the same bits in one call
                gen.standard_normal(dtype=part.dtype, out=part)
            else:
                for row in part:
                    gen.standard_normal(dtype=part.dtype, out=row)
        return out

    def sfc64(self) -> np.random.Generator:
        """The source's NumPy SFC64 generator, whose state the CPU streams set (one thread)."""
        return self._sfc64 if self._sfc64 is not None else self._make_generator()

    def _make_generator(self) -> np.random.Generator:
        self._sfc64 = np.random.Generator(np.random.SFC64(0))
        self._sfc64_state = self._sfc64.bit_generator.state  # reused: cheaper than a new dict
        return self._sfc64

    def _start_stream(self, block: int, column_chunk: int) -> None:
        """Seed the generator with stream (``block``, ``column_chunk``) as NumPy seeds SFC64:
        three words, counter 1, twelve outputs discarded. The words are SplitMix64 hashes of
        the run's key and of ``block * 2**24 + column_chunk``, which is one-to-one."""
        if not (0 <= block < 2**40 and 0 <= column_chunk < 2**24):
            raise ValueError(f"block {block} or column chunk {column_chunk} out of range")
        if column_chunk:
            self.stream(_splitmix64((block << 24) | column_chunk))
            return
        words = self._words
        if words is None or not 0 <= block - words[0] < WORDS_AHEAD:
            first = max(0, block - WORDS_BEHIND)
            h = _splitmix64_array(np.arange(first, first + WORDS_AHEAD, dtype=np.uint64) << 24)
            key = np.array(self.key, dtype=np.uint64)
            words = self._words = (first, np.stack([*_splitmix64_array(key[:, None] ^ h), h], 1))
        self._seed_stream(self.sfc64(), self._sfc64_state, words[1][block - words[0]])

    def stream(self, h: int, own: bool = False) -> np.random.Generator:
        """The source's SFC64 generator (``own``: a new one, for a thread of its own) at the
        start of the stream with word ``h`` (a SplitMix64 hash): seeded as NumPy seeds SFC64,
        three words (hashes of the run's key with ``h``, and ``h``), counter 1, twelve outputs
        discarded."""
        if own:
            gen = np.random.Generator(np.random.SFC64(0))
            state = gen.bit_generator.state
        else:
            gen, state = self.sfc64(), self._sfc64_state
        words = (_splitmix64(self.key[0] ^ h), _splitmix64(self.key[1] ^ h), h)
        return self._seed_stream(gen, state, words)

    @staticmethod
    def _seed_stream(gen: np.random.Generator, state: dict, words: Any) -> np.random.Generator:
        """Set ``gen`` (whose state dict is ``state``) to the start of the stream of the
        three seed ``words``: counter 1, twelve outputs discarded."""
        words_and_counter = state["state"]["state"]
        words_and_counter[:3] = words
        words_and_counter[3] = 1
        state["has_uint32"], state["uinteger"] = 0, 0
        gen.bit_generator.state = state
        gen.bit_generator.random_raw(12)
        return gen


class RowStreams:
    """Rows ``rows`` of block ``block`` of a run, each drawn from a stream of its own.

    The curvature model's directions (`zovh_opt._methods.zovh_preconditioned`) are drawn this
    way, so that one direction can be drawn alone (a point for ``fun``) and a block can be
    drawn again span of columns by span of columns (the passes of a step) without holding
    it: row ``m`` of block ``b`` is a stream seeded from a SplitMix64 hash of the run's key
    and ``(b, m)``, drawn from its first column on, ``width`` columns at a time. On the CPU
    the stream is NumPy's SFC64 (drawing a row in one call or in spans gives the same bits);
    for CUDA PyTorch, and when ``rng`` was a ``torch.Generator``, PyTorch's generator on the
    array's device, always in spans of ``width`` columns, so that a held block and a streamed
    one have the same bits; for CuPy, `zovh_opt._arrays.device_normals`, whose draws depend on the
    column alone (a row in one launch, the spans of all rows one launch each).

    Parameters
    ----------
    source : DirectionSource
        The run's source (its key).
    block : int
        The block number.
    rows : range
        The rows: ``fill`` writes them in this order, ``row(i, ...)`` the ``i``-th.
    space : ArraySpace
        Where the rows live.
    """

    def __init__(self, source: DirectionSource, block: int, rows: range, space: ArraySpace) -> None:
        if not (0 <= block < 2**40 and 0 <= rows.start and rows.stop <= 2**14):
            raise ValueError(f"block {block} or rows {rows} out of range")
        self.space, self._source = space, source
        self.width = self.span_width(source, space)
        self._words = [_splitmix64((1 << 63) | (block << 14) | m) for m in rows]
        self._native = self._library(source, space)  # None: NumPy's SFC64 draws
        self._generators: list | None = None  # each row's generator, at its next column
        self._column = 0  # CuPy: the next column `fill` draws (its draws keep no state)
        self._seeds_on_device: Any = None  # CuPy: the rows' seeds, (rows, 1)

    @staticmethod
    def span_width(source: DirectionSource, space: ArraySpace) -> int:
        """``width``: the columns of a span, `STREAM_COLUMNS` where NumPy draws (in cache),
        `DEVICE_SPAN_COLUMNS` where the array library's own generator does (fewer launches)."""
        torch_or_cupy = array_api_compat.is_torch_namespace(
            space.user
        ) or array_api_compat.is_cupy_namespace(space.user)
        if torch_or_cupy and not source.draws_spans(space):
            return DEVICE_SPAN_COLUMNS
        return STREAM_COLUMNS

    def row(self, i: int, out: Any) -> Any:
        """The ``i``-th row from its first column, written into the contiguous ``(d,)`` array
        ``out``."""
        if self._native is None:
            gen = self._source.stream(self._words[i])
            if self.space.numpy:  # one call: the same bits as span after span
                gen.standard_normal(dtype=out.dtype, out=out)
                return out
            n = out.shape[0]
            for start in range(0, n, self.width):
                self._numpy_span(gen, out[start : min(start + self.width, n)])
            return out
        if self._native == "cupy":  # one launch: a row's bits do not depend on its spans
            seed = self._device_seeds()[i : i + 1]
            return _device_normals.fill(seed, 0, out)
        gen, n = self._native_generator(self._words[i]), out.shape[0]
        for start in range(0, n, self.width):
            self._native_span(gen, out[start : min(start + self.width, n)])
        return out

    @staticmethod
    def _library(source: DirectionSource, space: ArraySpace) -> str | None:
        """The library whose generator draws the rows: "cupy", "torch", or None (NumPy)."""
        if array_api_compat.is_cupy_namespace(space.user):
            return "cupy"
        if array_api_compat.is_torch_namespace(space.user) and not source.draws_spans(space):
            return "torch"
        return None

    @classmethod
    def threaded(cls, source: DirectionSource, space: ArraySpace) -> bool:
        """Whether rows are drawn by NumPy in the draws' threads (`zovh_opt._arrays.threads`)."""
        return cls._library(source, space) is None and space.numpy and _threads.threads() > 1

    def rows(self, out: Sequence[Any]) -> None:
        """Every row whole, the ``i``-th into the contiguous ``(d,)`` array ``out[i]``; NumPy
        draws them in threads (`zovh_opt._arrays.threads`), with the bits of `row`."""
        if self._native is not None or not self.space.numpy:
            for i, o in enumerate(out):
                self.row(i, o)
            return

        def draw(rows: range) -> None:
            for i in rows:
                gen = self._source.stream(self._words[i], own=True)
                gen.standard_normal(dtype=out[i].dtype, out=out[i])

        parts = _threads.groups(len(out), self.space.dim)
        _threads.run([functools.partial(draw, rows) for rows in parts])

    def fill(self, out: Any) -> Any:
        """The next ``out.shape[1]`` columns of every row (at most ``width``), written into
        the rows of ``out``, each contiguous."""
        self.start_fill(out).finish()
        return out

    def start_fill(self, out: Any) -> _threads.Batch:
        """`fill`, begun: NumPy draws the rows as tasks of the draws' threads
        (`zovh_opt._arrays.threads`); finish the batch before reading ``out``."""
        if self._native == "cupy":
            seeds = self._device_seeds()
            _device_normals.fill(seeds, self._column, out[: seeds.shape[0], ...])
            self._column += out.shape[1]
            return _threads.Batch([]).start()
        if self._native is not None:
            if self._generators is None:
                self._generators = [self._native_generator(h) for h in self._words]
            for i, gen in enumerate(self._generators):
                self._native_span(gen, out[i, ...])
            return _threads.Batch([]).start()
        if self._generators is None:  # a generator a row: tasks run on any thread
            self._generators = [self._source.stream(h, own=True) for h in self._words]
        gens = self._generators
        if not self.space.numpy or len(_threads.groups(len(gens), out.shape[1])) == 1:
            for i, gen in enumerate(gens):
                self._numpy_span(gen, out[i, ...])
            return _threads.Batch([]).start()
        tasks = [
            functools.partial(gen.standard_normal, dtype=out.dtype, out=out[i, ...])
            for i, gen in enumerate(gens)
        ]
        return _threads.Batch(tasks).start()

    def _numpy_span(self, gen: np.random.Generator, out: Any) -> None:
        if self.space.numpy:
            gen.standard_normal(dtype=out.dtype, out=out)
        else:  # array-api-strict
            out[...] = self.space.xp.asarray(
                gen.standard_normal(out.shape[0], dtype=np.dtype(self.space.dtype_name)),
                device=self.space.compute_device,
            )

    def _seed(self, h: int) -> int:
        return _splitmix64(self._source.key[0] ^ h) & _SEED_BOUND

    def _device_seeds(self) -> Any:
        """CuPy: the rows' seeds on the device, ``(rows, 1)``, made once."""
        if self._seeds_on_device is None:
            seeds = [self._seed(h) for h in self._words]
            self._seeds_on_device = _device_normals.row_seeds(seeds, self.space.device)
        return self._seeds_on_device

    def _native_generator(self, h: int) -> Any:
        import torch

        gen = torch.Generator(device=self.space.device)
        gen.manual_seed(self._seed(h))
        return gen

    def _native_span(self, gen: Any, out: Any) -> None:
        # the compute array, or a CPU tensor's NumPy view
        self.space.to_user(out).normal_(generator=gen)


def _module_of(obj: Any) -> str:
    return type(obj).__module__.split(".")[0]


def gaussian_direction(seed: int, like: Any) -> Any:
    """Draw ``u ~ N(0, I_d)`` from ``seed``, with the shape, dtype and device of ``like``.

    Drawn on the host by NumPy's default generator and copied to ``like``'s device once, so the
    same seed gives the same vector on every backend, a GPU's included (the test problems are
    then the same functions everywhere).

    Parameters
    ----------
    seed : int
        Seed of this one direction; the same seed always gives the same bits.
    like : array
        One-dimensional array whose namespace, dtype and device the direction takes.
    """
    d = like.shape[0]
    xp = array_api_compat.array_namespace(like)
    dtype = np.float32 if like.dtype == xp.float32 else np.float64
    u = np.random.default_rng(seed).standard_normal(d, dtype=dtype)
    if array_api_compat.is_numpy_array(like):
        return u
    if array_api_compat.is_torch_array(like):
        import torch

        return torch.from_numpy(u).to(like.device)
    return xp.asarray(u, device=array_api_compat.device(like))
