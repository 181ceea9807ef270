"""The swap inside the user's program: every attention call goes through the recorder's
wrappers (recorder/install.py), which hand it to `Swapper.call`. A call the arm's backend can
run (and `--calls` selects) is sent to the backend's `run` on the program's own tensors with
its own options (causal, scale, GQA, layout: runner/backends); any other goes to the original
function, counted under the reason it was passed through. The unchanged arm passes every call
through the same wrapper, so that every arm pays the same wrapper.

Each call is timed (host time around it; CUDA events on the current stream where its tensors
are on CUDA); `sagetui.region(NAME)` blocks are timed alike and synchronised at their end. At
the end the outputs (`sagetui.output`, else the last attention call's) are saved, compared
with the other arms' of the round that ran before (the unchanged arm's is the reference), and
the process's ProcessResult is written.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import FrameType
from typing import Any

import torch

from sagetui.core.blocks.swap import (
    UNCHANGED,
    Compared,
    ProcessResult,
    ProcessSettings,
    Timed,
)
from sagetui.core.capture.loaded import call_shape
from sagetui.core.capture.manifest import VARLEN
from sagetui.core.capture.selection import Selection
from sagetui.core.config import VariantSpec
from sagetui.core.file_writes import atomic_write_text
from sagetui.recorder.install import Record, _Inside
from sagetui.recorder.module_path import ModulePaths
from sagetui.recorder.targets import Target
from sagetui.runner.backends import backend_class
from sagetui.runner.backends.base import Backend, Inputs, NullClock
from sagetui.swap.clocks import bring_to_clocks, reading
from sagetui.swap.outputs import compare_all, flatten

PASSED_UNCHANGED = "the program unchanged"
NOT_SELECTED = "not selected by --calls"
LAST_OUTPUT = "last attention output"


def load_backend(spec: VariantSpec) -> Backend:
    """The variant's backend, loaded, on this machine's device; BackendUnavailable or
    VariantLoadError with the real reason."""
    cls = backend_class(spec.backend)
    cls.check_available("cuda" if cls.needs_gpu else "cpu")
    backend = cls(options=dict(spec.options), module_path=spec.path, variant_name=spec.name)
    backend.load()
    return backend


@dataclass
class _Timing:
    host_s: float = 0.0
    cpu_s: float | None = None  # the process's CPU time, off CUDA (the CPU's clock)
    start: Any = None  # torch.cuda.Event
    end: Any = None

    def record_start(self) -> None:
        self.start = torch.cuda.Event(enable_timing=True)
        self.start.record()

    def record_end(self) -> None:
        self.end = torch.cuda.Event(enable_timing=True)
        self.end.record()

    def gpu_seconds(self, end: _Timing | None = None) -> float | None:
        """Its start to its end (or to `end`'s) in seconds, once both were recorded and have
        run; None off CUDA."""
        stop = (end or self).end
        return None if self.start is None or stop is None else self.start.elapsed_time(
            stop) / 1e3

    @classmethod
    def region(cls) -> _Timing:
        """A region's timing, its start recorded where CUDA is in use."""
        t = cls()
        if _cuda_ready():
            t.record_start()
        return t


# a call: its timing (None: not timed), swapped or not, the regions open, why it passed through
Call = tuple[_Timing | None, bool, tuple[str, ...], str | None]


def _mask_kind(mask: Any) -> str:
    if mask is None:
        return "none"
    return "bool" if getattr(mask, "dtype", None) == torch.bool else "additive"


class Swapper:
    """The processes mode: one arm in this process (its backend, or None: the program
    unchanged). interleaved.py's InterleavedSwapper switches among every arm's backend."""

    def __init__(self, settings: ProcessSettings, sampler: Any = None) -> None:
        self.settings = settings
        self.backend = load_backend(settings.variant) if settings.variant is not None else None
        self.selection = Selection.parse(settings.calls)
        self.paths = ModulePaths() if self.selection.globs else None
        self._reasons: dict[tuple[Any, ...], str | None] = {}
        self.seen = 0
        self.device: str | None = None
        self.cuda = False
        # each call: its timing, swapped or not, the regions open, why it passed through
        self.calls: list[Call] = []
        self.first_host: float | None = None
        self.last_host: float | None = None
        self.passed: dict[str, int] = {}
        self.regions: list[tuple[str, _Timing]] = []
        self._open: list[str] = []  # the outermost blocks open now, innermost last
        self._depth: dict[str, int] = {}  # blocks open by name: a nested one is not timed
        self.named: dict[str, torch.Tensor] = {}
        self.not_comparable: dict[str, str] = {}
        self.last: torch.Tensor | None = None
        self.sampler = sampler  # runner/telemetry's, on a GPU (__main__)
        self.telemetry: dict[str, Any] | None = None  # __main__'s sampler's summary
        self.step_clocks: list[float] = []
        self.warmed_clocks: str | None = None
        self.bare = False  # the wrapper passes every call straight through (interleaved.py)
        self.lean = False  # the wrapper takes interleaved.py's lean_call
        self.forked = Forked(settings.result + ".forked")

    # -- the wrapper (recorder/install.Installed's `wrap`) -----------------------------------
    def wrap(self, target: Target, original: Callable[..., Any], record: Record,
             inside: _Inside) -> Callable[..., Any]:
        import functools

        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if self.bare or inside.active:  # no wrapper's work, or a call from another
                return original(*args, **kwargs)
            inside.active = True
            try:
                if self.lean:
                    return self.lean_call(target, original, args, kwargs)
                return self.call(target, original, args, kwargs, sys._getframe(1))
            finally:
                inside.active = False

        wrapper.__sagetui_original__ = original  # type: ignore[attr-defined]
        return wrapper

    def lean_call(self, target: Target, original: Callable[..., Any], args: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> Any:
        raise NotImplementedError  # the interleaved mode's (interleaved.py)

    def backend_now(self) -> tuple[Backend | None, bool]:
        """The backend of the arm that runs the program now (None: the program unchanged), and
        whether it is the installed library's own (no build given by path)."""
        v = self.settings.variant
        return self.backend, v is not None and v.path is None

    def call(self, target: Target, original: Callable[..., Any], args: tuple[Any, ...],
             kwargs: dict[str, Any], frame: FrameType | None) -> Any:
        a = target.arguments(args, kwargs)
        q = a[target.params[0]]
        index = self.seen
        self.seen += 1
        if self.forked.here():
            self.forked.count()
        backend, stock = self.backend_now()
        why = self.reason(target, a, index, frame, backend)
        timing = _Timing()
        on_cuda = bool(getattr(q, "is_cuda", False))
        if self.device is None:
            self.device = str(getattr(q, "device", "cpu"))
            self.cuda = on_cuda
        if on_cuda:
            timing.record_start()
        c0 = None if on_cuda else time.process_time()
        t0 = time.perf_counter()
        out = original(*args, **kwargs) if why is not None or backend is None \
            else self.run(target, a, backend, stock)
        t1 = time.perf_counter()
        if on_cuda:
            timing.record_end()
        else:
            timing.cpu_s = time.process_time() - c0  # type: ignore[operator]
        timing.host_s = t1 - t0
        self.calls.append((timing, why is None, tuple(self._open), why))
        if self.first_host is None:
            self.first_host = t0
        self.last_host = t1
        if why is not None:
            self.passed[why] = self.passed.get(why, 0) + 1
        first = out[0] if isinstance(out, tuple) and out else out
        if isinstance(first, torch.Tensor):
            self.last = first
        return out

    def reason(self, target: Target, a: dict[str, Any], index: int,
               frame: FrameType | None, backend: Backend | None = None) -> str | None:
        """Why the call is passed through to the original, or None: the backend runs it. The
        unchanged arm reads the call as the others do before it passes it through: every arm
        pays the same wrapper."""
        selected = True
        if self.selection.text is not None:
            module = self.paths.of(frame)[0] if self.paths is not None else None
            selected = self.selection.matches(index, module)
        p = target.params
        q, k, v = a[p[0]], a[p[1]], a[p[2]]
        mask, layout = a.get("attn_mask"), target.layout_of(a)
        # the wrapper's own cost is in every step it wraps (the unwrapped arm measures it): the
        # key is read from what is already at hand (a Size hashes as it is)
        grad = torch.is_grad_enabled() and bool(getattr(q, "requires_grad", False)
                                                or getattr(k, "requires_grad", False)
                                                or getattr(v, "requires_grad", False))
        key = (type(backend), target.name, q.shape, k.shape, v.shape, q.dtype, q.device,
               layout, a.get("is_causal", False), mask is None or _mask_kind(mask),
               a.get("dropout_p", 0.0), a.get("return_lse", False), grad)
        if key not in self._reasons:
            self._reasons[key] = self._why(target, a, q, k, v, grad, backend)
        why = self._reasons[key]
        if backend is None:
            return PASSED_UNCHANGED
        return why if selected or why is not None else NOT_SELECTED

    def _why(self, target: Target, a: dict[str, Any], q: torch.Tensor, k: torch.Tensor,
             v: torch.Tensor, grad: bool, backend: Backend | None) -> str | None:
        if backend is None:
            return PASSED_UNCHANGED
        name = type(backend).name
        if target.name == VARLEN:
            return "a varlen call (the swap sends fixed-length calls)"
        if a.get("return_lse"):
            return "return_lse"
        if grad:
            return "it needs gradients: a variant's backend has no backward"
        _, why = call_shape(q.shape, k.shape, v.shape, str(q.dtype).removeprefix("torch."),
                            "NHD" if target.layout_of(a) == "NHD" else "HND",
                            bool(a.get("is_causal", False)), _mask_kind(a.get("attn_mask")),
                            float(a.get("dropout_p", 0.0) or 0.0))
        if why is not None:
            return why
        if type(backend).needs_gpu and not q.is_cuda:
            return f"on {q.device}: {name} runs on CUDA"
        return None

    def run(self, target: Target, a: dict[str, Any], backend: Backend,
            stock: bool) -> torch.Tensor:
        """The backend's call on the program's tensors, with its options; in their layout."""
        q, k, v = (a[target.params[i]] for i in range(3))
        layout, causal, sm_scale = call_options(target, a)
        inputs = Inputs(q=q, k=k, v=v, layout=layout, causal=causal, sm_scale=sm_scale)
        if stock and backend.has_public:
            # the installed library's public function (its Python and its launches), as a user's
            # swap calls it: its host time is what the model pays (docs/architecture.md, the
            # swap); the decomposition is byte-equal but skips the wrapper. Another build of the
            # extension (a path) has no public function of its own.
            out = backend.public(inputs)
            if out is not None:
                return out
        return backend.run(inputs, NullClock())

    # -- what the program marks (swap/api.py) ------------------------------------------------
    def region_start(self, name: str) -> tuple[str, _Timing, float] | None:
        """A block of the region `name` begins; None for one nested in another of its name
        (the outer block is the one timed)."""
        depth = self._depth.get(name, 0)
        self._depth[name] = depth + 1
        if depth:
            return None
        if self.settings.warm_clocks and self.warmed_clocks is None and _cuda_ready():
            self.warmed_clocks = bring_to_clocks(self.sampler)
        timing = _Timing.region()
        self._open.append(name)
        return name, timing, time.perf_counter()

    def region_end(self, name: str, token: tuple[str, _Timing, float] | None) -> None:
        self._depth[name] = max(0, self._depth.get(name, 0) - 1)
        if token is None:  # a nested block's end: its outer block goes on
            return
        _, timing, t0 = token
        if name in self._open:
            del self._open[len(self._open) - 1 - self._open[::-1].index(name)]
        if timing.start is not None:
            timing.record_end()
            torch.cuda.synchronize()
        timing.host_s = time.perf_counter() - t0
        self.regions.append((name, timing))
        clock, _ = reading(self.sampler)
        if clock is not None:
            self.step_clocks.append(clock)

    def output(self, name: str, value: Any) -> None:
        tensors, problems = flatten(name, value)
        for n, t in tensors.items():
            self.named[n] = t.clone()
            self.not_comparable.pop(n, None)
        self.not_comparable.update(problems)

    # -- the end ----------------------------------------------------------------------------
    def finish(self) -> ProcessResult:
        if _cuda_ready():
            torch.cuda.synchronize()
        clock = "cuda events" if self.cuda else "host"
        result = ProcessResult(arm=self.settings.arm, device=self.device, clock=clock,
                               telemetry=self.telemetry, step_clocks_mhz=self.step_clocks,
                               warmed_clocks=self.warmed_clocks,
                               forked_calls=self.forked.total(), calls_seen=self.seen,
                               ran=self.settings.arms_run())
        for name, t in self.regions:
            into = result.regions.setdefault(name, Timed(gpu_s=None if t.start is None
                                                         else 0.0))
            into.count += 1
            into.host_s += t.host_s
            gpu = t.gpu_seconds()
            if gpu is not None and into.gpu_s is not None:
                into.gpu_s += gpu
        result.attention = timed_calls(self.calls, self.cuda)
        result.swapped = timed_calls((c for c in self.calls if c[1]), self.cuda)
        for name in result.regions:
            result.region_attention[name] = timed_calls((c for c in self.calls
                                                         if name in c[2]), self.cuda)
            result.region_swapped[name] = timed_calls((c for c in self.calls
                                                       if c[1] and name in c[2]), self.cuda)
        if self.calls and self.first_host is not None and self.last_host is not None:
            first, last = self.calls[0][0], self.calls[-1][0]
            assert first is not None and last is not None  # this mode times every call
            result.first_to_last = Timed(count=1, host_s=self.last_host - self.first_host,
                                         gpu_s=first.gpu_seconds(last))
        result.passed = dict(self.passed)
        outputs = self._outputs()
        result.named_outputs = bool(self.named)
        result.outputs = {n: f"{str(t.dtype).removeprefix('torch.')} {list(t.shape)}"
                          for n, t in outputs.items()}
        save_outputs(outputs, self.settings.outputs)
        for e in self.settings.compare:
            theirs = load_outputs(e.outputs) if os.path.exists(e.outputs) else {}
            if self.settings.arm == UNCHANGED:
                result.compared.append(Compared(arm=e.arm, outputs=compare_all(
                    theirs, outputs)))
            else:
                result.compared.append(Compared(arm=self.settings.arm, outputs=compare_all(
                    outputs, theirs, self.not_comparable)))
        self.write(result)
        return result

    def write(self, result: ProcessResult) -> None:
        atomic_write_text(self.settings.result, result.model_dump_json(indent=1),
                          overwrite=True)

    def _outputs(self) -> dict[str, torch.Tensor]:
        chosen = self.named or ({LAST_OUTPUT: self.last} if self.last is not None else {})
        return {n: t.detach().to("cpu").contiguous() for n, t in chosen.items()}


def call_options(target: Target, a: dict[str, Any]) -> tuple[str, bool, float]:
    """A call's layout, causality and softmax scale, from its arguments (defaults filled)."""
    scale = a.get(target.scale)
    q = a[target.params[0]]
    sm_scale = float(scale) if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    layout = "NHD" if target.layout_of(a) == "NHD" else "HND"
    return layout, bool(a.get("is_causal", False)), sm_scale


def _cuda_ready() -> bool:
    return torch.cuda.is_available() and torch.cuda.is_initialized()


def timed_calls(calls: Iterable[Call], cuda: bool) -> Timed:
    """The calls' count, host time and (on CUDA) GPU time, added up."""
    t = Timed(gpu_s=0.0 if cuda else None, cpu_s=None if cuda else 0.0)
    for timing, *_ in calls:
        t.count += 1
        if timing is None:
            t.cpu_s = None  # not timed: no time of any kind
            continue
        t.host_s += timing.host_s
        if t.cpu_s is not None:
            t.cpu_s = t.cpu_s + timing.cpu_s if timing.cpu_s is not None else None
        gpu = timing.gpu_seconds()
        if gpu is not None and t.gpu_s is not None:
            t.gpu_s += gpu
    return t


def save_outputs(outputs: dict[str, torch.Tensor], path: str) -> None:
    """safetensors under positional keys, the names in its metadata: a name is the program's
    own (`__metadata__` included)."""
    from safetensors.torch import save_file

    keys = {f"o{i}": n for i, n in enumerate(outputs)}
    save_file({k: outputs[n] for k, n in keys.items()}, path, metadata=keys)


def load_outputs(path: str) -> dict[str, torch.Tensor]:
    from safetensors import safe_open

    with safe_open(path, framework="pt") as f:
        names = f.metadata() or {}
        return {names.get(k, k): f.get_tensor(k) for k in f.keys()}  # noqa: SIM118


_FORKED = [False]  # set in a child of this process, by the hook below
os.register_at_fork(after_in_child=lambda: _FORKED.__setitem__(0, True))


class Forked:
    """Attention calls made in processes the program forked (a data loader's workers, a
    multiprocessing pool): swapped there as here, and counted by a byte each appended to a file
    beside the result, since a fork's counters never come back."""

    def __init__(self, path: str) -> None:
        self.path, self.pid = path, os.getpid()

    def here(self) -> bool:
        # getpid only once this process has forked: a system call on every attention call
        # costs microseconds where system calls are slow (gVisor), in every step compared
        return _FORKED[0] and os.getpid() != self.pid

    def count(self) -> None:
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, b".")
            finally:
                os.close(fd)
        except OSError:
            pass

    def total(self) -> int:
        try:
            return os.path.getsize(self.path)
        except OSError:
            return 0


