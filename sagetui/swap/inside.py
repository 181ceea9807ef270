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
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

import torch

from sagetui.core import accuracy
from sagetui.core.blocks.swap import (
    UNCHANGED,
    Compared,
    OutputSums,
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
    start: Any = None  # torch.cuda.Event
    end: Any = None


def _mask_kind(mask: Any) -> str:
    if mask is None:
        return "none"
    return "bool" if getattr(mask, "dtype", None) == torch.bool else "additive"


class Swapper:
    def __init__(self, settings: ProcessSettings) -> None:
        self.settings = settings
        self.backend = load_backend(settings.variant) if settings.variant is not None else None
        self.selection = Selection.parse(settings.calls)
        self.paths = ModulePaths() if self.selection.globs else None
        self._reasons: dict[tuple[Any, ...], str | None] = {}
        self.seen = 0
        self.device: str | None = None
        self.cuda = False
        self.calls: list[tuple[_Timing, bool, tuple[str, ...]]] = []  # + the regions open
        self.first_host: float | None = None
        self.last_host: float | None = None
        self.passed: dict[str, int] = {}
        self.regions: list[tuple[str, _Timing]] = []
        self._open: list[str] = []  # the regions open now, innermost last
        self.named: dict[str, torch.Tensor] = {}
        self.last: torch.Tensor | None = None
        self.telemetry: dict[str, Any] | None = None  # __main__'s sampler's summary

    # -- the wrapper (recorder/install.Installed's `wrap`) -----------------------------------
    def wrap(self, target: Target, original: Callable[..., Any], record: Record,
             inside: _Inside) -> Callable[..., Any]:
        import functools

        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if inside.active:  # a wrapped function called by another (or by the backend)
                return original(*args, **kwargs)
            inside.active = True
            try:
                return self.call(target, original, args, kwargs, sys._getframe(1))
            finally:
                inside.active = False

        wrapper.__sagetui_original__ = original  # type: ignore[attr-defined]
        return wrapper

    def call(self, target: Target, original: Callable[..., Any], args: tuple[Any, ...],
             kwargs: dict[str, Any], frame: FrameType | None) -> Any:
        a = target.arguments(args, kwargs)
        q = a[target.params[0]]
        index = self.seen
        self.seen += 1
        why = self.reason(target, a, index, frame)
        timing = _Timing()
        on_cuda = bool(getattr(q, "is_cuda", False))
        if self.device is None:
            self.device = str(getattr(q, "device", "cpu"))
            self.cuda = on_cuda
        if on_cuda:
            timing.start = torch.cuda.Event(enable_timing=True)
            timing.start.record()
        t0 = time.perf_counter()
        out = original(*args, **kwargs) if why is not None else self.run(target, a)
        t1 = time.perf_counter()
        if on_cuda:
            timing.end = torch.cuda.Event(enable_timing=True)
            timing.end.record()
        timing.host_s = t1 - t0
        self.calls.append((timing, why is None, tuple(self._open)))
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
               frame: FrameType | None) -> str | None:
        """Why the call is passed through to the original, or None: the backend runs it. The
        unchanged arm reads the call as the others do before it passes it through: every arm
        pays the same wrapper."""
        selected = True
        if self.selection.text is not None:
            module = self.paths.of(frame)[0] if self.paths is not None else None
            selected = self.selection.matches(index, module)
        q, k, v = (a[target.params[i]] for i in range(3))
        mask, layout = a.get("attn_mask"), target.layout_of(a)
        grad = torch.is_grad_enabled() and any(getattr(t, "requires_grad", False)
                                               for t in (q, k, v))
        key = (target.name, tuple(q.shape), tuple(k.shape), tuple(v.shape), q.dtype,
               q.device.type, layout, bool(a.get("is_causal", False)), _mask_kind(mask),
               float(a.get("dropout_p", 0.0) or 0.0), bool(a.get("return_lse", False)), grad)
        if key not in self._reasons:
            self._reasons[key] = self._why(target, a, q, k, v, grad)
        why = self._reasons[key]
        if self.backend is None:
            return PASSED_UNCHANGED
        return why if selected or why is not None else NOT_SELECTED

    def _why(self, target: Target, a: dict[str, Any], q: torch.Tensor, k: torch.Tensor,
             v: torch.Tensor, grad: bool) -> str | None:
        if self.backend is None:
            return PASSED_UNCHANGED
        name = type(self.backend).name
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
        if type(self.backend).needs_gpu and not q.is_cuda:
            return f"on {q.device}: {name} runs on CUDA"
        return None

    def run(self, target: Target, a: dict[str, Any]) -> torch.Tensor:
        """The backend's call on the program's tensors, with its options; in their layout."""
        assert self.backend is not None
        q, k, v = (a[target.params[i]] for i in range(3))
        scale = a.get(target.scale)
        sm_scale = float(scale) if scale is not None else 1.0 / math.sqrt(q.shape[-1])
        inputs = Inputs(q=q, k=k, v=v, layout="NHD" if target.layout_of(a) == "NHD" else "HND",
                        causal=bool(a.get("is_causal", False)), sm_scale=sm_scale)
        variant = self.settings.variant
        if variant is not None and variant.path is None and self.backend.has_public:
            # the installed library's public function (its Python and its launches), as a user's
            # swap calls it: its host time is what the model pays (docs/architecture.md, the
            # swap); the decomposition is byte-equal but skips the wrapper. Another build of the
            # extension (a path) has no public function of its own.
            out = self.backend.public(inputs)
            if out is not None:
                return out
        return self.backend.run(inputs, NullClock())

    # -- what the program marks (swap/api.py) ------------------------------------------------
    def region_start(self, name: str) -> tuple[str, _Timing, float]:
        timing = _Timing()
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            timing.start = torch.cuda.Event(enable_timing=True)
            timing.start.record()
        self._open.append(name)
        return name, timing, time.perf_counter()

    def region_end(self, token: tuple[str, _Timing, float]) -> None:
        name, timing, t0 = token
        if name in self._open:
            del self._open[len(self._open) - 1 - self._open[::-1].index(name)]
        if timing.start is not None:
            timing.end = torch.cuda.Event(enable_timing=True)
            timing.end.record()
            torch.cuda.synchronize()
        timing.host_s = time.perf_counter() - t0
        self.regions.append((name, timing))

    def output(self, name: str, tensor: Any) -> None:
        if isinstance(tensor, torch.Tensor):
            self.named[name] = tensor.detach().clone()

    # -- the end ----------------------------------------------------------------------------
    def finish(self) -> ProcessResult:
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()
        clock = "cuda events" if self.cuda else "host"
        result = ProcessResult(arm=self.settings.arm, device=self.device, clock=clock,
                               telemetry=self.telemetry)
        for name, t in self.regions:
            into = result.regions.setdefault(name, Timed(gpu_s=None if t.start is None
                                                         else 0.0))
            into.count += 1
            into.host_s += t.host_s
            if t.start is not None and into.gpu_s is not None:
                into.gpu_s += t.start.elapsed_time(t.end) / 1e3
        result.attention = self._timed(c for c in self.calls)
        result.swapped = self._timed(c for c in self.calls if c[1])
        for name in result.regions:
            result.region_attention[name] = self._timed(c for c in self.calls if name in c[2])
        if self.calls and self.first_host is not None and self.last_host is not None:
            first, last = self.calls[0][0], self.calls[-1][0]
            result.first_to_last = Timed(
                count=1, host_s=self.last_host - self.first_host,
                gpu_s=first.start.elapsed_time(last.end) / 1e3 if first.start is not None
                and last.end is not None else None)
        result.passed = dict(self.passed)
        outputs = self._outputs()
        result.named_outputs = bool(self.named)
        result.outputs = {n: f"{str(t.dtype).removeprefix('torch.')} {list(t.shape)}"
                          for n, t in outputs.items()}
        from safetensors.torch import load_file, save_file

        save_file(outputs, self.settings.outputs)
        for e in self.settings.compare:
            theirs = load_file(e.outputs) if os.path.exists(e.outputs) else {}
            if self.settings.arm == UNCHANGED:
                result.compared.append(Compared(arm=e.arm, outputs=compare(theirs, outputs)))
            else:
                result.compared.append(Compared(arm=self.settings.arm,
                                                outputs=compare(outputs, theirs)))
        atomic_write_text(self.settings.result, result.model_dump_json(indent=1),
                          overwrite=True)
        return result

    def _timed(self, calls: Any) -> Timed:
        t = Timed(gpu_s=0.0 if self.cuda else None)
        for timing, _, _ in calls:
            t.count += 1
            t.host_s += timing.host_s
            if timing.start is not None and t.gpu_s is not None:
                t.gpu_s += timing.start.elapsed_time(timing.end) / 1e3
        return t

    def _outputs(self) -> dict[str, torch.Tensor]:
        chosen = self.named or ({LAST_OUTPUT: self.last} if self.last is not None else {})
        return {n: t.detach().to("cpu").contiguous() for n, t in chosen.items()}


def compare(out: dict[str, torch.Tensor], ref: dict[str, torch.Tensor]) -> dict[str, OutputSums]:
    """Each named output of `out` against `ref` (the unchanged arm's): core/accuracy's sums."""
    result = {}
    for name in sorted(set(out) | set(ref)):
        o, r = out.get(name), ref.get(name)
        if o is None or r is None:
            result[name] = OutputSums(problem="the unchanged arm has no such output" if r is None
                                      else "this arm has no such output")
        elif o.shape != r.shape:
            result[name] = OutputSums(problem=f"shape {list(o.shape)} against the unchanged "
                                      f"arm's {list(r.shape)}")
        else:
            on, rn = o.float().numpy(), r.float().numpy()
            diff = abs(on.astype("float64") - rn.astype("float64"))
            result[name] = OutputSums(sums=accuracy.sums_of(on, rn),
                                      max_abs=float(diff.max()) if diff.size else 0.0,
                                      elements=int(on.size))
    return result
