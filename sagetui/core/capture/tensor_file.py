"""A safetensors file read without torch: each tensor's dtype, shape and bytes, and the sha256
of those bytes as stored. safetensors stores a tensor row-major and little-endian with nothing
between its elements, so these are the tensor's raw contiguous bytes: the sha256 the recorder
took of them. The format: 8 bytes (little-endian header length), a JSON header
{name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}}, then the data."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from sagetui.core.capture.manifest import DTYPES, MAX_DIMS

MAX_HEADER = 100 * 1024 * 1024  # safetensors' own limit
_BY_CODE = {code: name for name, (code, _) in DTYPES.items()}


class TensorFileError(ValueError):
    """Not a safetensors file this reads; str() says why (without the file's name)."""


@dataclass(frozen=True)
class Stored:
    """One tensor in a file: its dtype (torch's name), shape and bytes [begin, end)."""

    dtype: str
    shape: list[int]
    begin: int
    end: int


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """`path` opened for reading, where it is a regular file: a FIFO, a device or a socket is
    refused (OSError naming it) without blocking on it (non-blocking open, then fstat)."""
    kind = stat.S_IFMT(os.stat(path).st_mode)
    if kind != stat.S_IFREG:
        raise OSError(f"not a regular file (a {_KINDS.get(kind, 'special file')})")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced since the stat
            raise OSError("not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


_KINDS = {stat.S_IFIFO: "FIFO", stat.S_IFCHR: "character device", stat.S_IFBLK: "block device",
          stat.S_IFSOCK: "socket", stat.S_IFDIR: "directory"}


def read_header(path: str | os.PathLike[str]) -> dict[str, Stored]:
    header, start, size = _header(path)
    return {name: _stored(name, entry, start, size) for name, entry in header.items()
            if name != "__metadata__"}


def read_metadata(path: str | os.PathLike[str]) -> dict[str, str]:
    """The file's `__metadata__` (a captured call's function, layout, is_causal); {} if none."""
    meta = _header(path)[0].get("__metadata__")
    return {str(k): str(v) for k, v in meta.items()} if isinstance(meta, dict) else {}


def _header(path: str | os.PathLike[str]) -> tuple[dict[str, object], int, int]:
    """The JSON header, where the data begins and the file's size."""
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        raw = fh.read(8)
        if len(raw) < 8:
            raise TensorFileError("too short for a safetensors file")
        n = int.from_bytes(raw, "little")
        if n > min(MAX_HEADER, size - 8):
            raise TensorFileError("not a safetensors file (its header length is impossible)")
        try:
            header = json.loads(fh.read(n))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise TensorFileError("not a safetensors file (its header is not JSON)") from None
    if not isinstance(header, dict):
        raise TensorFileError("not a safetensors file (its header is not a JSON object)")
    return header, 8 + n, size


def _stored(name: str, entry: object, start: int, size: int) -> Stored:
    unreadable = TensorFileError(f"tensor {name!r}: an entry this cannot read "
                                 f"({json.dumps(entry)[:120]})")
    if not isinstance(entry, dict) or entry.get("dtype") not in _BY_CODE:
        raise unreadable
    try:
        dtype = _BY_CODE[entry["dtype"]]
        shape = [int(d) for d in entry["shape"]]
        begin, end = (int(x) for x in entry["data_offsets"])
    except (KeyError, TypeError, ValueError):
        raise unreadable from None
    if len(shape) > MAX_DIMS or any(d < 0 for d in shape):
        raise TensorFileError(f"tensor {name!r}: shape {shape[:MAX_DIMS + 1]} is no tensor's "
                              f"(at most {MAX_DIMS} dimensions, none negative)")
    n = DTYPES[dtype][1]
    for d in shape:
        n *= d
    if end - begin != n or begin < 0 or start + end > size:
        raise TensorFileError(f"tensor {name!r}: its bytes [{begin}, {end}) do not hold "
                              f"{dtype} {shape} within the file")
    return Stored(dtype, shape, start + begin, start + end)


def stored_sha256(path: Path, stored: Stored) -> str:
    """sha256 of one tensor's bytes, read a MiB at a time."""
    h = hashlib.sha256()
    with open_regular(path) as fh:
        fh.seek(stored.begin)
        left = stored.end - stored.begin
        while left:
            block = fh.read(min(left, 1 << 20))
            if not block:
                raise TensorFileError("the file ends inside a tensor")
            h.update(block)
            left -= len(block)
    return h.hexdigest()
