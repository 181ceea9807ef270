"""A capture in progress: every call the wrappers hand over is counted and its signature
tallied; the selected ones, within --max-calls and --max-bytes, are copied to the host and
written at once, one safetensors file each; at the end, the manifest.

A call made in a forked process (multiprocessing with fork, a DataLoader worker) is not
recorded: the process shares the parent's recording as it was at the fork, and its saves would
take the parent's indices and files. It is counted instead: a byte appended to a file of its
own under FORKED (one per process, named by its pid), which `finish` reads into the manifest
(`forked_calls`, `forked_pids`). `finish` renames FORKED away first, so a process still running
after it counts nowhere and leaves nothing in the capture.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import shutil
import sys
import threading
import weakref
from pathlib import Path
from types import FrameType
from typing import Any

import torch
from pydantic import ValidationError
from safetensors.torch import save_file

from sagetui.core.capture.manifest import (
    MANIFEST,
    VARLEN,
    BudgetCut,
    Call,
    Manifest,
    Settings,
    Tensor,
    Varlen,
    file_name,
)
from sagetui.core.capture.outcome import CaptureError
from sagetui.core.capture.selection import Selection
from sagetui.core.capture.staging import usual_mode
from sagetui.core.report.io import one_line, validation_line
from sagetui.core.version import VERSION
from sagetui.recorder.module_path import ModulePaths
from sagetui.recorder.targets import Target

Signature = tuple[Any, ...]
FORKED = ".forked"  # in the directory: a file per forked process that made calls, a byte a call


class Recording:
    """The wrappers' `record`: called after each wrapped call returned, never raises (a
    failure ends the capture, said by `finish`, and leaves the program alone)."""

    def __init__(self, directory: Path, settings: Settings) -> None:
        # absolute: the program may change directory (Hydra does)
        self.directory, self.settings = Path(os.path.abspath(directory)), settings
        self.pid = os.getpid()
        self.forked = False  # this is a forked copy of the recording: count, do not record
        (self.directory / FORKED).mkdir(exist_ok=True)
        _RECORDINGS.add(self)
        self.selection = Selection.parse(settings.calls)
        self.paths = ModulePaths()
        self.seen = self.selected = self.saved_bytes = 0
        # each raw key (the arguments as given, _record) with its signature and count
        self._tallies: dict[tuple[Any, ...], _Tally] = {}
        self._module_hits: dict[str | None, bool] = {}
        # which parts of the selection a call is asked about (none of them costs a call that
        # --calls module:GLOB leaves out more than a dict lookup)
        self._by_index = self.selection.text is None or bool(self.selection.ranges
                                                             or self.selection.every)
        self._by_module = bool(self.selection.globs)
        self.cut: BudgetCut | None = None
        self.device: str | None = None
        self.device_name: str | None = None
        self.failure: str | None = None
        self._saved: list[tuple[dict[str, Any], Signature]] = []
        self._lock = threading.Lock()

    def __call__(self, target: Target, args: tuple[Any, ...], kwargs: dict[str, Any],
                 frame: FrameType | None) -> None:
        if self.failure is not None:
            return
        if self.forked:
            self._count_forked()
            return
        try:
            self._record(target, args, kwargs, frame)
        except Exception as exc:  # the program must not see the capture fail
            self.failure = (f"the capture failed after {self.seen} calls: "
                            f"{type(exc).__name__}: {exc}")

    @property
    def counts(self) -> dict[Signature, int]:
        """How many calls had each signature."""
        out: dict[Signature, int] = {}
        for tally in self._tallies.values():
            out[tally.signature] = out.get(tally.signature, 0) + tally.count
        return out

    def _module_selected(self, module: str | None) -> bool:
        hit = self._module_hits.get(module)
        if hit is None:
            hit = self._module_hits[module] = self.selection.matches_module(module)
        return hit

    def _in_forked_child(self) -> None:
        self.forked = True
        self._lock = threading.Lock()  # another thread may have held it at the fork

    def _count_forked(self) -> None:
        try:
            fd = os.open(self.directory / FORKED / str(os.getpid()),
                         os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, b".")
            finally:
                os.close(fd)
        except OSError:  # the capture has ended (FORKED renamed away): counted nowhere
            pass

    def _forked_calls(self) -> tuple[int, list[int]]:
        """The calls forked processes made (and their pids), FORKED taken away first."""
        taken = self.directory / (FORKED + ".read")
        try:
            os.rename(self.directory / FORKED, taken)
        except FileNotFoundError:
            return 0, []
        try:
            counts = {int(p.name): p.stat().st_size for p in taken.iterdir()
                      if p.name.isdigit()}
        finally:
            shutil.rmtree(taken, ignore_errors=True)
        return sum(counts.values()), sorted(counts)

    def _record(self, target: Target, args: tuple[Any, ...], kwargs: dict[str, Any],
                frame: FrameType | None) -> None:
        # The cheap part, at every call (issue 29: a call the capture does not save costs a few
        # microseconds): the module (cached per module, module_path.py) and the arguments as
        # given, tensors by their dtype: a raw key that equal signatures may have several of,
        # but never one for two. Its signature is made once, at its first call.
        found = self.paths.at(frame)
        if len(args) >= 3:
            q = args[0]
            raw: tuple[Any, ...] = (target.name, found, q.shape, args[1].shape, args[2].shape,
                                    q.dtype)
            rest = args[3:]
            if rest:  # map(type) and a set's test run in C: no Python call per argument
                raw += rest if _SCALARS.issuperset(map(type, rest)) else tuple(map(_plain, rest))
            if kwargs:
                items = tuple(kwargs.items())
                raw += (items if _SCALARS.issuperset(map(type, kwargs.values()))
                        else tuple((k, _plain(v)) for k, v in items))
        else:  # q, k or v by name: the signature itself
            raw = _signature(target, target.arguments(args, kwargs), found)
        module = found[0]
        with self._lock:
            index = self.seen
            self.seen += 1
            try:
                tally = self._tallies.get(raw)
            except TypeError:  # an argument that cannot be hashed: the signature at once
                raw = _signature(target, target.arguments(args, kwargs), found)
                tally = self._tallies.get(raw)
            if tally is None:
                tally = self._tallies[raw] = _Tally(_signature(
                    target, target.arguments(args, kwargs), found))
            tally.count += 1
            if index == 0:
                a = target.arguments(args, kwargs)
                q = a[target.params[0]]
                self.device = str(q.device)
                self.device_name = torch.cuda.get_device_name(q.device) if q.is_cuda else None
            if not ((self._by_index and self.selection.matches_index(index))
                    or (self._by_module and (self._module_hits.get(module)
                                             or self._module_selected(module)))):
                return
            a = target.arguments(args, kwargs)
            q, k, v = a[target.params[0]], a[target.params[1]], a[target.params[2]]
            key, root = tally.signature, found[1]
            self.selected += 1
            if self.cut is not None or len(self._saved) == self.settings.max_calls:
                return
            tensors = {"q": q, "k": k, "v": v}
            if target.name == VARLEN:
                tensors.update(cu_seqlens_q=a["cu_seqlens_q"], cu_seqlens_k=a["cu_seqlens_k"])
            nbytes = sum(t.numel() * t.element_size() for t in tensors.values())
            budget = self.settings.max_bytes
            if budget is not None and self.saved_bytes + nbytes > budget:
                self.cut = BudgetCut(index=index, call_bytes=nbytes,
                                     saved_bytes=self.saved_bytes, max_bytes=budget)
                return
            facts = _facts(target, a, q, k)
            facts.update(index=index, file=file_name(index), module=module, module_root=root,
                         device=str(q.device))
            facts["tensors"] = self._save(index, tensors, facts)
            self.saved_bytes += nbytes
            self._saved.append((facts, key))

    def _save(self, index: int, tensors: dict[str, torch.Tensor],
              facts: dict[str, Any]) -> dict[str, Tensor]:
        host = {n: _host_copy(t) for n, t in tensors.items()}
        path = self.directory / file_name(index)
        # the file read on its own (sagetui run --inputs) says how its tensors were called
        metadata = {"function": facts["function"], "layout": facts["layout"],
                    "is_causal": str(facts["is_causal"])}
        if facts["varlen"] is not None:
            metadata.update({k: str(v) for k, v in facts["varlen"].model_dump().items()})
        save_file(host, str(path), metadata=metadata)
        usual_mode(path)
        return {n: Tensor(shape=list(t.shape), dtype=str(t.dtype).removeprefix("torch."),
                          sha256=hashlib.sha256(t.reshape(-1).view(torch.uint8).numpy().data)
                          .hexdigest())
                for n, t in host.items()}

    def finish(self, argv: list[str]) -> Manifest:
        """The manifest, written into the directory; CaptureError where the capture failed."""
        forked, pids = self._forked_calls()
        if self.failure is not None:
            raise CaptureError(self.failure)
        sage = sys.modules.get("sageattention")
        try:
            counts = self.counts
            calls = [Call(**facts, count=counts[key],
                          signature=hashlib.sha256(repr(key).encode()).hexdigest()[:12])
                     for facts, key in self._saved]
            manifest = Manifest(
                tool=f"sagetui {VERSION}", created=dt.datetime.now(dt.UTC)
                .astimezone().isoformat(timespec="seconds"),
                torch=torch.__version__, sageattention=_version(sage) if sage else None,
                device=self.device, device_name=self.device_name, argv=argv,
                settings=self.settings, calls_seen=self.seen, calls_selected=self.selected,
                bytes_saved=self.saved_bytes, budget_cut=self.cut, forked_calls=forked,
                forked_pids=pids, calls=calls)
            (self.directory / MANIFEST).write_text(manifest.model_dump_json(indent=2) + "\n",
                                                   encoding="utf-8")
        except ValidationError as exc:  # a dtype the manifest has no name for...
            raise CaptureError(f"the capture's manifest: {validation_line(exc)}") from None
        except OSError as exc:
            raise CaptureError(one_line(f"the capture's manifest: {exc}")) from None
        return manifest


class _Tally:
    __slots__ = ("signature", "count")

    def __init__(self, signature: Signature) -> None:
        self.signature, self.count = signature, 0


_SCALARS = frozenset({bool, int, float, str, type(None)})


def _plain(x: Any) -> Any:
    """An argument in a raw key: a tensor by its dtype (a signature reads a mask's dtype and
    nothing else of a tensor beyond q, k and v), anything else as it is."""
    if type(x) in _SCALARS:
        return x
    return x.dtype if isinstance(x, torch.Tensor) else x


def _signature(target: Target, a: dict[str, Any], found: tuple[str | None, str | None]
               ) -> Signature:
    """Calls alike in function, shapes, dtype, layout, causal, mask, scale, gqa, dropout,
    varlen lengths and module share it (the manifest's `signature` is its hash)."""
    q, k, v = a[target.params[0]], a[target.params[1]], a[target.params[2]]
    mask, scale = a.get("attn_mask"), a.get(target.scale)
    return (target.name, q.shape, k.shape, v.shape, q.dtype, target.layout_of(a) == "NHD",
            bool(a.get("is_causal", False)), None if mask is None else mask.dtype is torch.bool,
            scale if scale is None or type(scale) is float else float(scale),
            bool(a.get("enable_gqa", False)), float(a.get("dropout_p", 0.0)),
            (int(a["max_seqlen_q"]), int(a["max_seqlen_k"])) if target.name == VARLEN
            else None, *found)


_RECORDINGS: weakref.WeakSet[Recording] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for recording in list(_RECORDINGS):
        if recording.pid != os.getpid():
            recording._in_forked_child()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _facts(target: Target, a: dict[str, Any], q: torch.Tensor, k: torch.Tensor
           ) -> dict[str, Any]:
    """What the manifest says of a call, but its tensors, module and count."""
    layout = "NHD" if target.layout_of(a) == "NHD" else "HND"  # SageAttention's rule
    causal = bool(a.get("is_causal", False))
    mask = a.get("attn_mask")
    scale = a.get(target.scale)
    heads = -2 if layout == "NHD" else -3
    varlen = None
    if target.name == VARLEN:
        varlen = Varlen(max_seqlen_q=int(a["max_seqlen_q"]), max_seqlen_k=int(a["max_seqlen_k"]))
    return dict(
        function=target.name, dtype=str(q.dtype).removeprefix("torch."), layout=layout,
        is_causal=causal, scale=None if scale is None else float(scale),
        mask=("causal" if causal else "none" if mask is None
              else "bool" if mask.dtype == torch.bool else "additive"),
        gqa=bool(a.get("enable_gqa", False))
        or (q.dim() == k.dim() >= 3 and q.shape[heads] != k.shape[heads]),
        dropout_p=float(a.get("dropout_p", 0.0)), varlen=varlen)


def _host_copy(t: torch.Tensor) -> torch.Tensor:
    """A contiguous copy on the host, in one copy from any device; the program's tensor is
    only read."""
    return torch.empty(t.shape, dtype=t.dtype, device="cpu").copy_(t.detach())


def _version(module: Any) -> str | None:
    version = getattr(module, "__version__", None)
    if version is None:
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as dist_version

        try:
            return dist_version("sageattention")
        except PackageNotFoundError:
            return None
    return str(version)
