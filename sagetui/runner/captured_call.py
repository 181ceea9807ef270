"""A captured call's tensors, for a run of a captured workload: q, k, v (and a varlen call's
cu_seqlens_q/_k) from the call's safetensors file, on a device. Finding and checking the
capture is core's (core/capture/loaded.load_workload: it needs no torch)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sagetui.core.capture.loaded import WorkloadCall, WorkloadError


@dataclass(frozen=True)
class CallTensors:
    """As the program passed them, in the call's layout (WorkloadCall.facts.layout)."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    cu_seqlens_q: torch.Tensor | None = None
    cu_seqlens_k: torch.Tensor | None = None


def load_call(call: WorkloadCall, device: str = "cpu") -> CallTensors:
    """The tensors of `call` (from a Workload that load_workload checked) on `device`."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        tensors = load_file(str(call.file), device=device)
        return CallTensors(**{name: tensors[name] for name in call.facts.tensors})
    except (OSError, KeyError, SafetensorError) as exc:
        raise WorkloadError(f"call {call.index} ({call.file}): cannot load: {exc}") from None
