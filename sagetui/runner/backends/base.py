"""What every backend is: a list of named phases, a way to run them one after another under a
clock, and an honest answer to "can this run here?".

A backend times *leaf* phases only. The clock records one mark between consecutive leaves, so a
single pass yields every leaf's time and the total; a parent phase (for instance
`qk_int8_quantization`) is the sum of its children and is computed by the runner, not timed
separately.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from sagetui.core.options import option
from sagetui.core.phases import PhaseSpec

if TYPE_CHECKING:
    import torch


class BackendUnavailable(Exception):
    """The backend cannot run here; the message is the real reason (an import error, no GPU...)."""


class VariantLoadError(Exception):
    """A variant's module could not be loaded; the message is the real reason."""


@dataclass
class Packed:
    """Packed sequences (`--seqlens`), as sageattn_varlen takes them: where each sequence's
    queries and keys start in the packed tokens (int32 on the inputs' device, made outside every
    timed region) and the longest of each."""

    seqlens: tuple[int, ...]
    kv_seqlens: tuple[int, ...]
    cu_seqlens_q: torch.Tensor
    cu_seqlens_k: torch.Tensor

    @property
    def max_seqlen_q(self) -> int:
        return max(self.seqlens)

    @property
    def max_seqlen_k(self) -> int:
        return max(self.kv_seqlens)

    def segments(self) -> list[tuple[int, int, int, int]]:
        """Each sequence's query rows and key rows in the packed tokens: (q0, q1, k0, k1)."""
        out, q0, k0 = [], 0, 0
        for lq, lk in zip(self.seqlens, self.kv_seqlens, strict=True):
            out.append((q0, q0 + lq, k0, k0 + lk))
            q0, k0 = q0 + lq, k0 + lk
        return out


def segments_of(inputs: Inputs) -> list[tuple[int, int, int, int]]:
    """The sequences of `inputs`: the packed ones, or one of every token."""
    if inputs.packed is not None:
        return inputs.packed.segments()
    n_q, n_kv = (to_hnd(t, inputs.layout).shape[2] for t in (inputs.q, inputs.k))
    return [(0, n_q, 0, n_kv)]


@dataclass
class Inputs:
    """q, k, v on the device, in the configured layout, plus what every backend needs to know."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    layout: str  # "NHD" ([B, N, H, D]) or "HND" ([B, H, N, D])
    causal: bool
    sm_scale: float
    extra: dict[str, Any] = field(default_factory=dict)
    packed: Packed | None = None  # packed sequences: q, k, v are [1, tokens, heads, head_dim]


def to_hnd(x: torch.Tensor, layout: str) -> torch.Tensor:
    """[B, H, N, D] from a tensor in `layout`, and back (a transpose is its own inverse)."""
    return x.transpose(1, 2) if layout == "NHD" else x


def tiny_inputs(like: Inputs, tokens: int = 128) -> Inputs:
    """Inputs of `like`'s dtype, layout, head dim and mask, one head of `tokens` tokens: a call
    on them costs what a first call costs beyond its kernels (imports, registrations)."""
    import torch

    d = like.q.shape[-1]
    shape = (1, tokens, 1, d) if like.layout == "NHD" else (1, 1, tokens, d)
    q, k, v = (torch.randn(shape, dtype=like.q.dtype, device=like.q.device) for _ in range(3))
    return Inputs(q=q, k=k, v=v, layout=like.layout, causal=like.causal, sm_scale=like.sm_scale)


class PhaseClock(Protocol):
    """Marks the end of each leaf phase. `start()` opens the pass; `mark(name)` closes a leaf."""

    def start(self) -> None: ...

    def mark(self, phase: str) -> None: ...


class NullClock:
    """A clock that records nothing: warm-up calls and correctness passes."""

    def start(self) -> None:
        pass

    def mark(self, phase: str) -> None:
        pass


class Backend(ABC):
    """One way of computing attention, split into phases."""

    name: ClassVar[str]
    #: the tile configuration the scheduler geometry uses ("sm89", "sm90") or None
    kernel: ClassVar[str | None] = None
    #: True when it needs a CUDA device
    needs_gpu: ClassVar[bool] = True
    description: ClassVar[str] = ""

    def __init__(self, options: dict[str, Any] | None = None, module_path: str | None = None,
                 variant_name: str = "default") -> None:
        self.options = dict(options or {})
        self.module_path = module_path
        self.variant_name = variant_name
        # with return_lse: the last call's log-sum-exp, [B, H, Nq] fp32 (natural log), which the
        # runner hashes with the output and compares with fp32's
        self.last_lse: torch.Tensor | None = None
        # a simulated device's stream (runner/timing.SimStream: the reference backend's test
        # knobs), timed like a GPU's on the CPU; None: the device's own (or the CPU's clock)
        self.stream: Any = None

    @property
    def return_lse(self) -> bool:
        return bool(option(self.name, self.options, "return_lse"))

    @classmethod
    @abstractmethod
    def check_available(cls, device: str) -> None:
        """Raise BackendUnavailable with the real reason if this backend cannot run on `device`."""

    def load(self) -> None:  # noqa: B027 - most backends have nothing to load
        """Load modules (a variant's .so included). Raise VariantLoadError with the real reason."""

    @abstractmethod
    def phases(self) -> list[PhaseSpec]:
        """Every phase, parents and leaves, in execution order (a parent before its leaves)."""

    @abstractmethod
    def run(self, inputs: Inputs, clock: PhaseClock) -> torch.Tensor:
        """One attention call, decomposed: `clock.start()`, then `clock.mark(leaf)` after each
        leaf phase in order. Returns the output in the inputs' layout and dtype."""

    def public(self, inputs: Inputs) -> torch.Tensor | None:
        """The same call through the library's public API, for the decomposition check, or None
        when the backend has no separate public entry point."""
        call = self.public_call(inputs.layout, inputs.causal, inputs.sm_scale)
        return None if call is None else call(inputs.q, inputs.k, inputs.v)

    def public_call(self, layout: str, causal: bool,
                    sm_scale: float) -> Callable[..., torch.Tensor] | None:
        """The public function with every argument but q, k and v bound (bound_public), or None:
        `sagetui swap` calls it for each call of one kind, as the program would."""
        return None

    @property
    def has_public(self) -> bool:
        return type(self).public is not Backend.public or \
            type(self).public_call is not Backend.public_call

    def public_name(self) -> str | None:
        """The public function a user calls, by its name ("sageattention.sageattn"), where
        public_call does not say it (its bound function's own name, user_call); None: none."""
        return None

    def user_call(self, inputs: Inputs) -> tuple[Callable[[], Any], str]:
        """The call the user makes, its inputs bound, and what it is: what the three times of
        core/host_time.py time. A stock backend's public function as a user calls it (its
        Python, its checks, its launches); a build given by path has no public function of its
        own, nor has a backend without one: its decomposition, unclocked (said so)."""
        if self.module_path is not None:
            return (lambda: self.run(inputs, NullClock())), \
                "the decomposition (a build given by path has no public function of its own)"
        call = self.public_call(inputs.layout, inputs.causal, inputs.sm_scale)
        if call is not None:
            q, k, v = inputs.q, inputs.k, inputs.v
            return (lambda: call(q, k, v)), \
                self.public_name() or function_name(getattr(call, "func", call))
        name = self.public_name()
        if type(self).public is not Backend.public:
            return (lambda: self.public(inputs)), name or f"{self.name}'s public function"
        return (lambda: self.run(inputs, NullClock())), \
            name or f"the decomposition ({self.name} has no public function)"

    def facts(self, inputs: Inputs, out: torch.Tensor) -> dict[str, Any]:
        """Facts about what ran, found once outside the timed regions (sdpa: which backend)."""
        return {}

    def provenance_files(self) -> dict[str, str]:
        """module name -> the shared library this backend calls (empty: none of its own)."""
        return {}

    def main_loop_kernel(self) -> tuple[str, str] | None:
        """(the .so file, the pybind function) that launches its fused main-loop kernel, for
        its kernel facts (runner/kernel_facts.py); None when it launches no SageAttention CUDA
        kernel of its own choosing."""
        return None

    def mainloop(self, inputs: Inputs, clock: PhaseClock) -> torch.Tensor:
        """Only the fused main loop on already-quantized inputs (the tail study times it).
        Default: the whole call, with the main loop as the last leaf phase."""
        return self.run(inputs, clock)

    def leaves(self) -> list[str]:
        parents = {p.parent for p in self.phases() if p.parent}
        return [p.name for p in self.phases() if p.name not in parents]


def function_name(fn: Any) -> str:
    """A function as a user names it: its top-level package and its name
    ("sageattention.sageattn_qk_int8_pv_fp8_cuda_sm90")."""
    module = (getattr(fn, "__module__", None) or "").split(".")[0]
    name = getattr(fn, "__name__", None) or type(fn).__name__
    return f"{module}.{name}" if module else name


def bound_public(fn: Callable[..., Any], return_lse: bool,
                 **kwargs: Any) -> Callable[..., torch.Tensor]:
    """`fn(q, k, v, **kwargs)` as a callable of q, k and v; its output alone where it returns
    the lse too (lse.output_of). Either way `.func` is `fn` (user_call names it)."""
    import functools

    if not return_lse:
        return functools.partial(fn, **kwargs)
    from sagetui.runner.backends.lse import output_of

    def with_lse(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return output_of(fn(q, k, v, return_lse=True, **kwargs))

    with_lse.func = fn  # type: ignore[attr-defined]
    return with_lse
