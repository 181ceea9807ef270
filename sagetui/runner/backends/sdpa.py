"""torch's scaled_dot_product_attention: the baseline a user would pick instead of SageAttention.

One leaf phase, "attention". `sdpa[backend=cudnn|flash|efficient|math]` pins torch's backend
with `torch.nn.attention.sdpa_kernel`; `fa3`/`fa4` first swap FlashAttention 3 or 4 into torch's
FLASH backend (`activate_flash_attention_impl`, torch >= 2.11, with the package installed). An
unpinned `sdpa` records which backend torch ran (`which_backend_ran`): on an H200 torch prefers
cuDNN, which a user comparing against "FlashAttention" must know.

NHD inputs are passed as transposed views (no copy: SDPA takes
strided [B, H, N, D] tensors with a contiguous last dimension) and the output comes back as the
matching view, the way a caller with NHD tensors would use it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, ClassVar

import torch

from sagetui.core.options import SDPA_FLASH_IMPLS, validate_options
from sagetui.core.phases import PhaseSpec
from sagetui.runner.backends.base import (
    Backend,
    BackendUnavailable,
    Inputs,
    NullClock,
    PhaseClock,
    VariantLoadError,
)


def require_cuda(device: str) -> None:
    """Raise BackendUnavailable unless `device` names a CUDA device that torch can use."""
    if not device.startswith("cuda"):
        raise BackendUnavailable(f"needs a CUDA device; asked for {device!r}")
    if not torch.cuda.is_available():
        built = torch.version.cuda
        why = "it is a CPU-only build" if built is None else f"built for CUDA {built}, no device"
        raise BackendUnavailable(f"CUDA is not available to torch {torch.__version__} ({why})")
    index = torch.device(device).index or 0
    if index >= torch.cuda.device_count():
        raise BackendUnavailable(f"{device} does not exist: {torch.cuda.device_count()} device(s)")


# sdpa[backend=...] -> torch's SDPBackend member
PINNED = {"cudnn": "CUDNN_ATTENTION", "flash": "FLASH_ATTENTION",
          "efficient": "EFFICIENT_ATTENTION", "math": "MATH", "fa3": "FLASH_ATTENTION",
          "fa4": "FLASH_ATTENTION"}
NAMES = {"CUDNN_ATTENTION": "cudnn", "FLASH_ATTENTION": "flash",
         "EFFICIENT_ATTENTION": "efficient", "MATH": "math"}


def use_flash_impl(impl: str | None) -> None:
    """Make `impl` ("FA3", "FA4", or None: torch's own FlashAttention-2) the one torch's FLASH
    backend runs. It is process-wide state, so it is switched only when it differs: a block of
    one variant's calls switches once, outside its timed region."""
    attn = torch.nn.attention
    current = attn.current_flash_attention_impl() if hasattr(
        attn, "current_flash_attention_impl") else None
    if current == impl:
        return
    if impl is None:
        attn.restore_flash_attention_impl()
    else:
        attn.activate_flash_attention_impl(impl)


class SdpaBackend(Backend):
    name: ClassVar[str] = "sdpa"
    kernel: ClassVar[str | None] = None
    needs_gpu: ClassVar[bool] = True
    description: ClassVar[str] = "torch.nn.functional.scaled_dot_product_attention (baseline)"

    def __init__(self, options: dict[str, Any] | None = None, module_path: str | None = None,
                 variant_name: str = "default") -> None:
        super().__init__(options, module_path, variant_name)
        validate_options(self.name, self.options)
        pinned = self.options.get("backend")  # validate_options: None or a name
        self.pinned: str | None = pinned if isinstance(pinned, str) else None
        self.flash_impl = self.pinned.upper() if self.pinned in SDPA_FLASH_IMPLS else None

    @classmethod
    def check_available(cls, device: str) -> None:
        require_cuda(device)

    def load(self) -> None:
        if self.flash_impl is None:
            return
        listed: list[str] = getattr(torch.nn.attention, "list_flash_attention_impls",
                                    lambda: [])()
        if self.flash_impl not in listed:
            raise VariantLoadError(f"torch {torch.__version__} cannot swap {self.flash_impl} "
                                   f"into SDPA (its flash implementations: {listed or 'none'})")
        try:
            use_flash_impl(self.flash_impl)
        except Exception as exc:  # the package is missing or does not register: say so
            raise VariantLoadError(f"{self.flash_impl} does not activate: "
                                   f"{type(exc).__name__}: {exc}") from exc
        finally:
            use_flash_impl(None)

    def phases(self) -> list[PhaseSpec]:
        return [PhaseSpec("attention")]

    def public_name(self) -> str | None:
        # its one phase is the public function (pinned: inside torch's sdpa_kernel context)
        return "torch.nn.functional.scaled_dot_product_attention"

    def user_call(self, inputs: Inputs) -> tuple[Callable[[], Any], str]:
        """The function bound as a model calls it: NHD tensors handed over as transposed views
        and the output transposed back, GQA with `enable_gqa`; none of run()'s phase clock,
        generator and context, which cost a 0.017 ms enqueue 0.003 ms more on an H100
        (benchmarks/results/h100_host_time_20261206d.txt). The FlashAttention implementation
        it runs is the one run() set (its rounds' blocks and its warm-up come first). A pinned
        backend keeps run(): torch's sdpa_kernel context is part of its call."""
        if self.pinned is not None or self.module_path is not None:
            return super().user_call(inputs)
        sdpa = torch.nn.functional.scaled_dot_product_attention
        q, k, v = inputs.q, inputs.k, inputs.v
        causal, scale = inputs.causal, inputs.sm_scale
        heads = 1 if inputs.layout == "HND" else 2
        # enable_gqa only where the heads differ, as _sdpa: torch before 2.5 has no such
        # argument, and its other calls must not fail for it
        gqa: dict[str, Any] = {"enable_gqa": True} if q.shape[heads] != k.shape[heads] else {}
        if inputs.layout == "NHD":
            def call() -> torch.Tensor:
                return sdpa(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                            is_causal=causal, scale=scale, **gqa).transpose(1, 2)
        else:
            def call() -> torch.Tensor:
                return sdpa(q, k, v, is_causal=causal, scale=scale, **gqa)
        return call, "torch.nn.functional.scaled_dot_product_attention"

    def _context(self) -> contextlib.AbstractContextManager[Any]:
        if self.pinned is None:
            return contextlib.nullcontext()
        backend = getattr(torch.nn.attention.SDPBackend, PINNED[self.pinned])
        return torch.nn.attention.sdpa_kernel(backend)

    def run(self, inputs: Inputs, clock: PhaseClock) -> torch.Tensor:
        use_flash_impl(self.flash_impl)
        nhd = inputs.layout == "NHD"
        q, k, v = (t.transpose(1, 2) if nhd else t for t in (inputs.q, inputs.k, inputs.v))
        with self._context():
            clock.start()
            out = _sdpa(q, k, v, inputs.causal, inputs.sm_scale)
            clock.mark("attention")
        return out.transpose(1, 2) if nhd else out

    def facts(self, inputs: Inputs, out: torch.Tensor) -> dict[str, Any]:
        if self.pinned is not None:
            return {"sdpa_backend": self.pinned, "sdpa_backend_method": "pinned with "
                    "torch.nn.attention.sdpa_kernel" + (
                        f" after activate_flash_attention_impl({self.flash_impl!r})"
                        if self.flash_impl else "")}
        return which_backend_ran(self, inputs, out)


def which_backend_ran(be: SdpaBackend, inputs: Inputs, out: torch.Tensor) -> dict[str, Any]:
    """The backend torch chose for these inputs: its own selector (`torch._fused_sdp_choice`,
    what scaled_dot_product_attention dispatches on), confirmed by re-running the call pinned
    to that backend and comparing output bytes. Without the selector: the first backend in
    torch's default priority whose pinned output has the same bytes."""
    nhd = inputs.layout == "NHD"
    q, k, v = (t.transpose(1, 2) if nhd else t for t in (inputs.q, inputs.k, inputs.v))
    gqa = q.shape[1] != k.shape[1]
    chosen: str | None = None
    method = "torch._fused_sdp_choice"
    try:
        code = torch._fused_sdp_choice(q, k, v, None, 0.0, inputs.causal,
                                       scale=inputs.sm_scale, enable_gqa=gqa)
        chosen = NAMES.get(torch.nn.attention.SDPBackend(code).name)
    except Exception:
        method = "pinned calls in torch's priority order, compared byte for byte"
    candidates = [chosen] if chosen else ["cudnn", "flash", "efficient", "math"]
    for name in candidates:
        pinned = SdpaBackend({"backend": name})
        try:
            again = pinned.run(inputs, NullClock())
        except RuntimeError:  # this backend refuses these inputs
            continue
        if torch.equal(again.contiguous().view(torch.uint8), out.contiguous().view(torch.uint8)):
            return {"sdpa_backend": name,
                    "sdpa_backend_method": f"{method}; confirmed: a call pinned to it with "
                                           "sdpa_kernel gives the same bytes"}
        if chosen:
            return {"sdpa_backend": name, "sdpa_backend_method": f"{method}; NOT confirmed: "
                    "the call pinned to it gives other bytes"}
    return {"sdpa_backend": "unknown", "sdpa_backend_method": method}


def _sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
          scale: float) -> torch.Tensor:
    sdpa = torch.nn.functional.scaled_dot_product_attention
    if q.shape[1] == k.shape[1]:
        return sdpa(q, k, v, is_causal=causal, scale=scale)
    try:
        # GQA without materialising repeated K/V (torch >= 2.5)
        return sdpa(q, k, v, is_causal=causal, scale=scale, enable_gqa=True)
    except TypeError:
        group = q.shape[1] // k.shape[1]
        k, v = (t.repeat_interleave(group, dim=1) for t in (k, v))
        return sdpa(q, k, v, is_causal=causal, scale=scale)
