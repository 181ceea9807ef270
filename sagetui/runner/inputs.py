"""Attention inputs: synthetic from a seed (standard normal, or a distribution that stresses
quantization: core/distributions.py), or real q/k/v from a file.

Files load without pickle: safetensors (tensors named q, k, v), .npz / .npy through numpy with
allow_pickle=False (.npy holds q, k and v stacked on a leading axis of 3), and torch files only
through torch.load(weights_only=True).
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import torch

from sagetui.core import distributions
from sagetui.core.capture.inputs_file import shape_mismatch
from sagetui.core.config import INPUT_SUFFIXES, RunConfig
from sagetui.runner.backends.base import Inputs, Packed, to_hnd

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


class InputError(ValueError):
    pass


def synthetic(config: RunConfig, device: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """q, k, v drawn from the shape's distribution (core/distributions.py) with the run's seed,
    in fp32 (one tensor at a time: at the reference shape each is 1.1 GB), then cast."""
    s = config.shape
    shapes = s.tensor_shapes()
    dist = distributions.TABLE[s.distribution]
    gen = torch.Generator(device=device).manual_seed(config.seed)

    def draw(name: str) -> torch.Tensor:
        shape = shapes[name]
        if dist.name == "heavytail":
            return _student_t(shape, int(dist.params["df"]), gen, device)
        return torch.randn(shape, generator=gen, device=device, dtype=torch.float32)

    # drawn in the same order for every distribution: q, k, v, then what the distribution adds
    q, k, v = (to_hnd(draw(n), s.layout) for n in ("q_shape", "k_shape", "v_shape"))
    p = dist.params
    if dist.name == "kbias":  # [B, Hkv, 1, D]: one offset per channel, every token alike
        k += p["bias_std"] * torch.randn((*k.shape[:2], 1, k.shape[3]), generator=gen,
                                         device=device)
    elif dist.name == "outliers":
        n = int(p["channels"])
        perm = torch.randperm(q.shape[-1], generator=gen, device=device)
        q[..., perm[:n]] *= p["scale"]
        k[..., perm[n:2 * n]] *= p["scale"]
    elif dist.name == "sinks":
        _sinks(q, k, int(p["tokens"]), p["query_bias"], p["sink_logit"],
               s.head_dim ** -0.5, gen)
    dtype = DTYPES[s.dtype]
    q, k, v = (to_hnd(t, s.layout).to(dtype).contiguous() for t in (q, k, v))
    return q, k, v


def _student_t(shape: list[int], df: int, gen: torch.Generator, device: str) -> torch.Tensor:
    """Student-t with `df` degrees of freedom, scaled to unit variance: z / sqrt(chi2 / df),
    chi2 a sum of df squared normals (torch's own Student-t takes no generator)."""
    z = torch.randn(shape, generator=gen, device=device)
    chi2 = torch.zeros(shape, device=device)
    for _ in range(df):
        chi2.add_(torch.randn(shape, generator=gen, device=device).square_())
    return z.mul_(chi2.div_(df).rsqrt_()).mul_(math.sqrt((df - 2) / df))


def _sinks(q: torch.Tensor, k: torch.Tensor, tokens: int, query_bias: float, sink_logit: float,
           sm_scale: float, gen: torch.Generator) -> None:
    """Every query gets `query_bias` along a unit direction u of its KV head; the first
    `tokens` keys become s u with query_bias s sm_scale = sink_logit (q, k: [B, H, N, D])."""
    b, h_kv, _, d = k.shape
    u = torch.randn((b, h_kv, 1, d), generator=gen, device=k.device)
    u /= u.norm(dim=-1, keepdim=True)
    q += query_bias * u.repeat_interleave(q.shape[1] // h_kv, dim=1)
    k[:, :, :tokens] = (sink_logit / (query_bias * sm_scale)) * u


def from_file(path: str, config: RunConfig, device: str):
    p = Path(path)
    if not p.is_file():
        raise InputError(f"inputs file {p} does not exist")
    suffix = p.suffix.lower()
    try:
        if suffix == ".safetensors":
            from safetensors.torch import load_file

            t = load_file(str(p))
            q, k, v = t["q"], t["k"], t["v"]
            _check_cu_seqlens(p, t, config)
        elif suffix in (".npz", ".npy"):
            import numpy as np

            arr = np.load(p, allow_pickle=False)
            if suffix == ".npz":
                q, k, v = (torch.from_numpy(arr[n]) for n in ("q", "k", "v"))
            else:
                if arr.shape[0] != 3:
                    raise InputError(f"{p}: a .npy input holds q, k, v stacked as [3, ...]")
                q, k, v = (torch.from_numpy(arr[i]) for i in range(3))
        elif suffix in (".pt", ".pth"):
            t = torch.load(p, map_location="cpu", weights_only=True)
            q, k, v = t["q"], t["k"], t["v"]
        else:
            raise InputError(f"{p}: unknown inputs format {suffix!r} "
                             f"(use {', '.join(INPUT_SUFFIXES)})")
    except KeyError as exc:
        raise InputError(f"{p}: missing tensor {exc} (need q, k and v)") from None
    except InputError:
        raise
    except Exception as exc:
        if _is_pickle_refusal(exc):
            raise InputError(f"{p}: holds pickled Python objects, not only tensors; inputs are "
                             "loaded without running pickle code: save q, k and v as plain "
                             "tensors (safetensors, .npy/.npz of numbers, or torch.save of a "
                             "dict of tensors)") from None
        raise InputError(f"{p}: cannot load: {type(exc).__name__}: {exc}") from None
    if config.shape.seqlens is not None:  # a captured sageattn_varlen call's [tokens, H, D]
        q, k, v = (x.unsqueeze(0) if x.dim() == 3 else x for x in (q, k, v))
    why = shape_mismatch({"q": list(q.shape), "k": list(k.shape), "v": list(v.shape)},
                         config.shape)
    if why:
        raise InputError(f"{p}: {why}")
    dtype = DTYPES[config.shape.dtype]
    return tuple(t.to(device=device, dtype=dtype).contiguous() for t in (q, k, v))


def _check_cu_seqlens(path: Path, tensors: dict[str, torch.Tensor], config: RunConfig) -> None:
    """A captured varlen call's cu_seqlens_q/_k are the lengths the configuration packs."""
    s = config.shape
    for name, lengths in (("cu_seqlens_q", s.seqlens), ("cu_seqlens_k", s.n_kv_seqlens)):
        if name not in tensors:
            continue
        got = tuple(int(x) for x in tensors[name].diff().tolist())
        if lengths is None or got != tuple(lengths):
            raise InputError(f"{path}: {name} packs sequences of {list(got)} tokens; the "
                             f"configuration says {list(lengths) if lengths else 'none'}")


def packed(config: RunConfig, device: str) -> Packed | None:
    """The shape's packed sequences, their cu_seqlens made on `device` (outside every timed
    region), or None."""
    s = config.shape
    if s.seqlens is None:
        return None

    def cu(lengths: tuple[int, ...]) -> torch.Tensor:
        starts = [0]
        for n in lengths:
            starts.append(starts[-1] + n)
        return torch.tensor(starts, dtype=torch.int32, device=device)

    kv = s.n_kv_seqlens
    return Packed(seqlens=tuple(s.seqlens), kv_seqlens=kv, cu_seqlens_q=cu(s.seqlens),
                  cu_seqlens_k=cu(kv))


def _is_pickle_refusal(exc: Exception) -> bool:
    """numpy's allow_pickle=False or torch's weights_only=True refusing a pickled object."""
    import pickle

    text = str(exc)
    return (isinstance(exc, pickle.UnpicklingError) or "Weights only load failed" in text
            or "allow_pickle=False" in text)


def build_inputs(config: RunConfig, device: str) -> Inputs:
    if config.inputs_path:
        q, k, v = from_file(config.inputs_path, config, device)
    else:
        q, k, v = synthetic(config, device)
    s = config.shape
    return Inputs(q=q, k=k, v=v, layout=s.layout, causal=s.causal, sm_scale=s.head_dim ** -0.5,
                  packed=packed(config, device))


def host_bytes(*tensors: torch.Tensor) -> list[torch.Tensor]:
    """The tensors' raw bytes on the host, in order (a device-to-host copy: outside every timed
    region, and on the thread that issues the timed work, so that the copy never lands on the
    stream between two timed kernels)."""
    out = []
    for t in tensors:
        flat = t.detach().contiguous().view(-1).view(torch.uint8)
        if flat.is_cuda:  # pinned: torch's host allocator keeps the block for the next copy
            # (H200, 1.6 GB: 0.90 s the first time, 0.03 s after; pageable 1.10 s every time:
            # benchmarks/results/h200_i22_cold_start.txt)
            host = torch.empty(flat.shape, dtype=torch.uint8, pin_memory=True)
            host.copy_(flat)
            flat = host
        out.append(flat)
    return out


def sha256_of(buffers: list[torch.Tensor]) -> str:
    """sha256 of host byte buffers, in order: hashlib reads each in place without the GIL, so
    this can run on a thread while the next block runs."""
    h = hashlib.sha256()
    for b in buffers:
        h.update(b.numpy().data)
    return h.hexdigest()


def tensor_sha256(*tensors: torch.Tensor) -> str:
    """sha256 of the tensors' raw bytes, in order (outside every timed region)."""
    return sha256_of(host_bytes(*tensors))


def checksum(t: torch.Tensor) -> float:
    """Sum of |output| in float32, as the reference reports' checksums."""
    return float(t.detach().abs().to(torch.float32).sum().item())
