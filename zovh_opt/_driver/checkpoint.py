"""The checkpoint file format: plain data and arrays, versioned, checksummed, written atomically.

An uncompressed ``.npz``: ``header.json`` (format and zovh-opt versions, the state as a JSON
tree whose arrays are references ``{"$array": "a0"}`` and whose non-finite floats are
``{"$float": "inf"}``), the arrays as ``.npy`` files, never pickled, and the SHA-256 of every
byte before it as the archive's comment. `read` verifies the checksum before it parses
anything; `write` renames a flushed temporary file over the target, so an interrupted save
leaves the previous checkpoint whole. A symbolic link is written through; a path that is not a
regular file is refused. The format in full: the theory page, *The run's parts in detail*.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import math
import os
import secrets
import zipfile
from array import array as PyArray
from typing import Any

import numpy as np

from .._arrays.backend import to_numpy

__all__ = ["FORMAT", "VERSION", "CheckpointError", "read", "write"]

FORMAT = "zovh-opt checkpoint"
VERSION = 1
_DIGEST = 64  # hexadecimal digits of a SHA-256, the archive comment
_DTYPES = frozenset({"<f4", "<f8", "<i8"})  # what a state holds
_CHUNK = 1 << 22


class CheckpointError(ValueError):
    """A file that `zovh_opt.Optimizer.load` cannot bring back.

    The message says which way it is wrong: not a zovh-opt checkpoint; a pickle written by
    zovh-opt 0.1 (refused, because unpickling runs code); damaged or truncated (its checksum
    does not match); written by a newer format version; needing an array library or a device
    this process does not have; or holding an inconsistent state.

    Examples
    --------
    >>> import os, tempfile
    >>> import zovh_opt
    >>> path = os.path.join(tempfile.mkdtemp(), "notes.txt")
    >>> with open(path, "w") as file:
    ...     _ = file.write("not a checkpoint")
    >>> zovh_opt.Optimizer.load(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    zovh_opt.CheckpointError: .../notes.txt is not a zovh-opt checkpoint
    """

    __module__ = "zovh_opt"


def write(path: Any, state: dict[str, Any], *, package_version: str) -> None:
    """Write ``state`` (a tree of dicts, lists, plain scalars and arrays) to ``path`` atomically.

    Arrays may be of any namespace and device; they are copied to the host as they are written.
    """
    arrays: list[np.ndarray] = []
    tree = _encode(state, arrays)
    header = {"format": FORMAT, "version": VERSION, "zovh_opt": package_version, "state": tree}
    header_bytes = json.dumps(header, allow_nan=False, separators=(",", ":")).encode()
    path = os.fspath(path)
    # through symbolic links, as numpy.savez writes: the link stays and its target is updated
    target = os.path.realpath(path)
    if os.path.lexists(target) and not os.path.isfile(target):
        raise FileExistsError(
            errno.EEXIST,
            "is not a regular file (a directory, FIFO, device or socket); a checkpoint "
            "replaces only a regular file",
            path,
        )
    directory = os.path.dirname(target)
    if not os.path.isdir(directory):
        raise FileNotFoundError(errno.ENOENT, "no such directory for the checkpoint", path)
    temporary = os.path.join(
        directory, f".{os.path.basename(target)}.{os.getpid()}.{secrets.token_hex(4)}.partial"
    )
    # 0o666 less the umask, as `open` would give the file (mkstemp's files are 0o600)
    fd = os.open(temporary, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "w+b") as file:
            with zipfile.ZipFile(file, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
                archive.comment = b"0" * _DIGEST
                archive.writestr("header.json", header_bytes)
                for i, array in enumerate(arrays):
                    with archive.open(f"a{i}.npy", "w", force_zip64=True) as member:
                        np.lib.format.write_array(member, array, allow_pickle=False)
            file.flush()
            size = file.tell()
            digest = _sha256(file, size - _DIGEST)
            file.seek(size - _DIGEST)
            file.write(digest.encode())
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    _fsync_directory(directory)


def read(path: Any) -> tuple[dict[str, Any], str]:
    """The state tree written by `write` (arrays as NumPy arrays) and the writer's version.

    Raises
    ------
    CheckpointError
        For every way the file can be wrong (see `CheckpointError`).
    OSError
        When the file cannot be read (``FileNotFoundError``, ``PermissionError``, ...).
    """
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        start = file.read(4)
        if start[:1] == b"\x80":
            raise CheckpointError(
                f"{path} is a pickle, as zovh-opt 0.1 wrote checkpoints. Loading a pickle runs "
                "code from the file, so they are refused: continue that run with zovh-opt 0.1, "
                "or start it again (the run is reproducible from its seed)."
            )
        if start != b"PK\x03\x04" or size < 4 + _DIGEST:
            raise CheckpointError(f"{path} is not a zovh-opt checkpoint")
        file.seek(size - _DIGEST)
        stored = file.read(_DIGEST)
        if _sha256(file, size - _DIGEST).encode() != stored.lower():
            raise CheckpointError(
                f"{path} is damaged or truncated: its SHA-256 checksum does not match"
            )
        try:
            return _parse(file, path)
        except CheckpointError:
            raise
        except Exception as error:  # a well-formed checksum over a malformed file
            raise CheckpointError(f"{path} is not a valid zovh-opt checkpoint: {error}") from error


def _parse(file: io.BufferedReader, path: Any) -> tuple[dict[str, Any], str]:
    file.seek(0)
    with zipfile.ZipFile(file) as archive:
        header = json.loads(archive.read("header.json"))
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise CheckpointError(f"{path} is not a zovh-opt checkpoint")
        version = header.get("version")
        if version != VERSION:
            raise CheckpointError(
                f"{path} has checkpoint format version {version!r}; this zovh-opt "
                f"({header.get('zovh_opt', '?')} wrote it) reads version {VERSION}"
            )
        arrays = {}
        for info in archive.infolist():
            name = info.filename
            if name == "header.json":
                continue
            if not (name.startswith("a") and name.endswith(".npy")):
                raise CheckpointError(f"{path} holds an unexpected member {name!r}")
            with archive.open(info) as member:
                arrays[name[:-4]] = _read_npy(member, info.file_size)
        state = _decode(header["state"], arrays)
        return state, str(header.get("zovh_opt", "?"))


def _read_npy(member: Any, size: int) -> np.ndarray:
    """One ``.npy`` member of ``size`` bytes, checked against its own header before reading."""
    fmt = np.lib.format
    version = fmt.read_magic(member)
    if version == (1, 0):
        shape, fortran, dtype = fmt.read_array_header_1_0(member)
    elif version == (2, 0):
        shape, fortran, dtype = fmt.read_array_header_2_0(member)
    else:
        raise ValueError(f"unsupported .npy version {version}")
    if dtype.str not in _DTYPES or fortran:
        raise ValueError(f"an array of dtype {dtype.str} (fortran order: {fortran})")
    if math.prod(shape) * dtype.itemsize != size - member.tell():
        raise ValueError("an array whose header does not match its size")
    array = np.empty(shape, dtype=dtype)
    view, filled = memoryview(array.reshape(-1)).cast("B"), 0
    while filled < len(view):
        n = member.readinto(view[filled:])
        if not n:
            raise ValueError("a truncated array")
        filled += n
    return array


def _encode(node: Any, arrays: list[np.ndarray]) -> Any:
    if node is None or isinstance(node, (bool, str)):
        return node
    if isinstance(node, (int, np.integer)):
        return int(node)
    if isinstance(node, (float, np.floating)):
        return float(node) if math.isfinite(node) else {"$float": repr(float(node))}
    if isinstance(node, dict):
        return {str(k): _encode(v, arrays) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return [_encode(v, arrays) for v in node]
    array = np.ascontiguousarray(node if isinstance(node, PyArray) else to_numpy(node))
    if array.dtype.str not in _DTYPES:
        raise TypeError(f"cannot store an array of dtype {array.dtype} in a checkpoint")
    arrays.append(array)
    return {"$array": f"a{len(arrays) - 1}"}


def _decode(node: Any, arrays: dict[str, np.ndarray]) -> Any:
    if isinstance(node, list):
        return [_decode(v, arrays) for v in node]
    if isinstance(node, dict):
        if set(node) == {"$array"}:
            return arrays[node["$array"]]
        if set(node) == {"$float"}:
            if node["$float"] not in ("inf", "-inf", "nan"):
                raise ValueError(f"bad float {node['$float']!r}")
            return float(node["$float"])
        return {k: _decode(v, arrays) for k, v in node.items()}
    return node


def _sha256(file: Any, length: int) -> str:
    """SHA-256 of the first ``length`` bytes of ``file``, as hexadecimal digits."""
    file.seek(0)
    digest, left = hashlib.sha256(), length
    while left > 0:
        chunk = file.read(min(_CHUNK, left))
        if not chunk:
            break
        digest.update(chunk)
        left -= len(chunk)
    return digest.hexdigest()


def _fsync_directory(directory: str) -> None:
    """Make the rename durable where the platform allows (POSIX); elsewhere a no-op."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
