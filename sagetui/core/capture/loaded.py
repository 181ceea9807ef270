"""A capture loaded as a workload: its manifest checked against its files, and each saved
call with what a run needs to know of it. The tensors themselves load in the runner
(runner/captured_call.py: torch); everything here reads files with the standard library.

Every way a capture can be wrong is a WorkloadError whose text is one line naming the call and
what differs: the CLI prints it and exits 2.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from sagetui.core.capture.manifest import MANIFEST, Call, Manifest
from sagetui.core.capture.tensor_file import (
    TensorFileError,
    open_regular,
    read_header,
    stored_sha256,
)
from sagetui.core.config import Shape, default_config
from sagetui.core.report.io import one_line, validation_line, validation_problem
from sagetui.core.run_argv import config_argv

SHAPE_DTYPES = {"float16": "fp16", "bfloat16": "bf16"}  # torch's names -> a run's
CASTABLE = "float32"  # a dtype a run takes only cast (`run --workload --dtype fp16|bf16`)
MAX_MANIFEST = 256 << 20  # bytes: a manifest of millions of calls is no capture's


class WorkloadError(ValueError):
    """A capture that cannot be used as it is; str() is the one line to print."""

    def __init__(self, text: str) -> None:
        super().__init__(one_line(text))


@dataclass(frozen=True)
class WorkloadCall:
    """One saved call: its manifest entry (`facts`), its tensor file, and the run shape it
    fits, or why none does (`unfit`: a varlen call, a mask, a dtype a run does not take...)."""

    facts: Call
    file: Path
    shape: Shape | None
    unfit: str | None
    cast: bool = False  # a float32 call replayed cast to `--dtype` (its shape's dtype)

    @property
    def index(self) -> int:
        return self.facts.index

    @property
    def module(self) -> str | None:
        return self.facts.module

    @property
    def weight(self) -> int:
        """How many of the program's calls were like this one (facts.count). Saved calls that
        share a signature share this weight: count each signature once."""
        return self.facts.count

    @property
    def scale(self) -> float | None:
        """The softmax scale the program gave; None: 1/sqrt(head_dim), as a run uses."""
        return self.facts.scale

    def run_argv(self) -> list[str] | None:
        """`sagetui run`'s arguments that measure this call on its own tensors (--inputs FILE
        and its shape), where it fits a run's shape."""
        if self.shape is None:
            return None
        return config_argv(default_config(shape=self.shape, auto_shape=False,
                                          inputs_path=str(self.file)))


@dataclass(frozen=True)
class LoadedCapture:
    directory: Path
    manifest: Manifest
    calls: list[WorkloadCall]


def load_workload(directory: str | Path, *, hashes: bool = True,
                  cast_to: str | None = None) -> LoadedCapture:
    """The capture in `directory`, checked: its manifest against its model, every call's file
    against the manifest (each tensor there, its dtype and shape; its sha256 unless `hashes`
    is False: they read every byte). `cast_to` (fp16, bf16: `--dtype`): float32 calls are
    replayed cast to it (WorkloadCall.cast); without it they are unfit, as a run takes
    fp16 or bf16."""
    d = Path(directory)
    manifest = read_manifest(d)
    if not manifest.calls:
        raise WorkloadError(f"{d}: the capture saved no call ({manifest.calls_seen} calls "
                            "seen): nothing to replay")
    calls = []
    for c in manifest.calls:
        check_call(d, c, hashes)
        cast = cast_to is not None and c.dtype == CASTABLE
        shape, unfit = run_shape(c, d / c.file, cast_to if cast else None)
        calls.append(WorkloadCall(c, d / c.file, shape, unfit, cast and shape is not None))
    return LoadedCapture(d, manifest, calls)


def read_manifest(directory: Path) -> Manifest:
    path = directory / MANIFEST
    if not directory.is_dir():
        if directory.exists():
            raise WorkloadError(f"{directory}: a file, not a capture's directory (sagetui "
                                "capture --out DIR -- python SCRIPT makes one)")
        raise WorkloadError(f"{directory}: no such directory")
    try:
        with open_regular(path) as fh:
            raw = fh.read(MAX_MANIFEST + 1)
        if len(raw) > MAX_MANIFEST:
            raise WorkloadError(f"{path}: over {MAX_MANIFEST >> 20} MiB, no capture's "
                                "manifest")
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise WorkloadError(f"{directory}: no {MANIFEST} (not a capture)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkloadError(f"{path}: cannot read: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise WorkloadError(f"{path}: line {exc.lineno} column {exc.colno}: not valid JSON "
                            f"({exc.msg})") from None
    try:
        return Manifest.model_validate_json(text, strict=True)
    except ValidationError as exc:
        where, problem = validation_problem(exc, data)
        raise WorkloadError(f"{path}: {where}: {problem}") from None


def check_call(directory: Path, call: Call, hashes: bool = True) -> None:
    """The call's file holds exactly the tensors the manifest lists, as it lists them."""
    path = directory / call.file

    def fail(what: str) -> WorkloadError:
        return WorkloadError(f"{directory}: call {call.index} ({call.file}): {what}")

    try:
        stored = read_header(path)
    except FileNotFoundError:
        raise fail("no such file") from None
    except (OSError, TensorFileError) as exc:
        raise fail(str(exc)) from None
    for name, want in call.tensors.items():
        got = stored.get(name)
        if got is None:
            raise fail(f"no tensor {name!r} in the file")
        if (got.dtype, got.shape) != (want.dtype, want.shape):
            raise fail(f"{name} is {got.dtype} {got.shape} in the file; the manifest says "
                       f"{want.dtype} {want.shape}")
        if hashes:
            try:
                sha = stored_sha256(path, got)
            except (OSError, TensorFileError) as exc:
                raise fail(str(exc)) from None
            if sha != want.sha256:
                raise fail(f"{name}'s bytes have sha256 {sha[:16]}...; the manifest says "
                           f"{want.sha256[:16]}...")
    extra = sorted(set(stored) - set(call.tensors))
    if extra:
        raise fail(f"the file holds {', '.join(map(repr, extra))}, which the manifest does "
                   "not list")


def cu_lengths(file: Path, name: str) -> tuple[int, ...]:
    """The sequence lengths a saved cu_seqlens tensor (int32 or int64) holds."""
    stored = read_header(file)[name]
    size = {"int32": 4, "int64": 8}.get(stored.dtype)
    if size is None or len(stored.shape) != 1:
        raise TensorFileError(f"{name} is {stored.dtype} {stored.shape}, not int32/int64 [n]")
    with open_regular(file) as fh:
        fh.seek(stored.begin)
        raw = fh.read(stored.end - stored.begin)
    starts = [int.from_bytes(raw[i:i + size], "little", signed=True)
              for i in range(0, len(raw), size)]
    return tuple(b - a for a, b in zip(starts, starts[1:], strict=False))


def _dtype(dtype_name: str, cast_to: str | None) -> str | None:
    """The run's dtype of a call's: its own, or `cast_to` (a float32 call cast)."""
    return cast_to if cast_to is not None and dtype_name == CASTABLE \
        else SHAPE_DTYPES.get(dtype_name)


def varlen_shape(call: Call, file: Path | None,
                 cast_to: str | None = None) -> tuple[Shape | None, str | None]:
    """A sageattn_varlen call as a run of packed sequences (Shape.seqlens)."""
    q, k = call.tensors["q"].shape, call.tensors["k"].shape
    dtype = _dtype(call.dtype, cast_to)
    if file is None or len(q) != 3 or len(k) != 3 or dtype is None:
        return None, "a varlen call whose packed lengths or tensors a run does not take"
    try:
        lq, lk = cu_lengths(file, "cu_seqlens_q"), cu_lengths(file, "cu_seqlens_k")
        return Shape(batch=1, heads=q[1], kv_heads=k[1] if k[1] != q[1] else None,
                     q_len=q[0], kv_len=k[0] if k[0] != q[0] else None, head_dim=q[2],
                     dtype=dtype, layout="NHD", causal=call.is_causal, seqlens=lq,
                     kv_seqlens=lk if lk != lq else None), None
    except (OSError, KeyError, TensorFileError) as exc:
        return None, f"its cu_seqlens cannot be read: {exc}"
    except ValidationError as exc:
        return None, validation_line(exc)


def run_shape(call: Call, file: Path | None = None,
              cast_to: str | None = None) -> tuple[Shape | None, str | None]:
    """The run shape of a call (sagetui's Shape: what `sagetui run` measures), or None and
    why it has none. A varlen call's packed lengths are read from its `file`'s cu_seqlens.
    `cast_to`: the dtype a float32 call is replayed in (none: it is unfit)."""
    if call.varlen is not None:
        return varlen_shape(call, file, cast_to)
    q, k, v = (call.tensors[n].shape for n in ("q", "k", "v"))
    shape, why = call_shape(q, k, v, call.dtype, call.layout, call.is_causal, call.mask,
                            call.dropout_p, cast_to)
    if why is not None and call.dtype == CASTABLE and cast_to is None:
        why += " (--dtype fp16|bf16 replays it cast)"  # a replay's own option
    return shape, why


def call_shape(q: Sequence[int], k: Sequence[int], v: Sequence[int], dtype_name: str,
               layout: str, causal: bool, mask: str, dropout_p: float,
               cast_to: str | None = None) -> tuple[Shape | None, str | None]:
    """The run shape of a (fixed-length) call from its facts, or None and why it has none:
    what a replay runs and what `sagetui swap` sends to a variant (sagetui/swap)."""
    if mask in ("bool", "additive"):
        return None, f"its {mask} attn_mask is not part of a run"
    if dropout_p:
        return None, f"dropout_p {dropout_p:g} is not part of a run"
    if len(q) != 4 or len(k) != 4:
        return None, f"q has {len(q)} dimensions; a run's q has 4"
    if list(v) != list(k):
        return None, f"v's shape {list(v)} is not k's {list(k)}"
    dtype = _dtype(dtype_name, cast_to)
    if dtype is None:
        return None, f"{dtype_name}: a run is fp16 or bf16"
    if layout == "HND":
        (b, h, n, d), (_, hk, nk, _) = q, k
    else:
        (b, n, h, d), (_, nk, hk, _) = q, k
    try:
        return Shape(batch=b, heads=h, kv_heads=hk if hk != h else None, q_len=n,
                     kv_len=nk if nk != n else None, head_dim=d, dtype=dtype,
                     layout="NHD" if layout == "NHD" else "HND", causal=causal), None
    except ValidationError as exc:
        return None, validation_line(exc)
