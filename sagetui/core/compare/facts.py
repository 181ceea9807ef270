"""Whether reports can be compared, and what differs between them that does not stop it.

The rule (`sagetui compare` refuses with one line and exit 2; `--force` compares anyway and
says what differs; the console's Compare tab shows the same line as a warning):

- **Refused: another workload or another kind of hardware.** The q/k/v shapes (in NHD order),
  the layout, the dtype, causal; the GPU's model (`environment.gpu.name`), or a CPU against a
  GPU. Timings of another workload or another chip say nothing about a change of code.
- **Never refused, but said: which GPU of the model, and the software.** Two H200s (another
  UUID, another node) are comparable: that is how a fleet or a rerun is compared. Each matched
  variant's build (its `.so` files' sha256 in `variants[].provenance`), the SageAttention
  version, torch, CUDA and the driver are what one compares: two builds of `_qattn_sm89` is
  the reason `sagetui compare` exists, and a torch or SageAttention release on one workload
  and GPU is the same question. Refusing them would refuse the question; they are listed
  instead, so that a difference is never a surprise.
- **Said, too: other inputs.** Another synthetic distribution (`--inputs synthetic:NAME`) or
  another inputs file changes the accuracy figures, not what a kernel's time measures. And a
  workload's calls measured call by call against round by round (its block's `order`): a
  replay measured call by call carried moments of the host's pace into its back-to-back totals.
- **Only what both reports state.** A fact one report does not give (the reference reports
  name no GPU, dtype or layout) is no reason to refuse: it cannot be checked, not found to
  differ.
- **Kinds never mix**: a sweep, a run and a profile report have nothing to line up, so they
  are refused even with `--force` (NotComparable).

A sweep's shapes are its points (matched point by point, sweeps.py), a workload's its calls
(workloads.py: another capture is refused there), so for these only dtype, layout and
hardware are compared here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sagetui.core.blocks.base import Provenance
from sagetui.core.config import Shape
from sagetui.core.report.model import Report

KINDS = {"run": "a run report", "sweep": "a sweep report", "profile": "a profile report",
         "workload": "a workload report", "swap": "a swap report"}


POINTS = ("sweep", "workload")  # kinds whose shapes are their points' (matched there)


class NotComparable(ValueError):
    """Reports of different kinds: one line, always refused."""


def kind(report: Report) -> str:
    if report.swap is not None:
        return "swap"
    if report.workload is not None:
        return "workload"
    if report.sweep is not None:
        return "sweep"
    if report.variants or report.phase_timings or report.tail_study:
        return "run"
    return "profile"


@dataclass(frozen=True)
class Facts:
    kind: str
    tensors: dict[str, tuple[int, ...]] = field(default_factory=dict)  # q, k, v: NHD order
    layout: str | None = None
    dtype: str | None = None
    causal: bool | None = None
    hardware: str | None = None  # the GPU's model name, or "cpu"
    uuid: str | None = None
    software: dict[str, str] = field(default_factory=dict)
    inputs: str | None = None  # synthetic:NAME, or the inputs file
    order: str | None = None  # how a workload's calls were measured (its block's `order`)


def config_shape(report: Report) -> Shape | None:
    """The configuration's shape, where it is one (the config is free-form JSON)."""
    cfg = (report.config or {}).get("shape")
    if not isinstance(cfg, dict):
        return None
    try:
        return Shape.model_validate(cfg)
    except ValueError:
        return None


def _nhd(shape: list[int], layout: str | None) -> tuple[int, ...]:
    b, x, y, d = shape
    return (b, y, x, d) if layout == "HND" else (b, x, y, d)


def _text(x: Any) -> str | None:
    return x if isinstance(x, str) and x else None


def facts(report: Report) -> Facts:
    k = kind(report)
    shape = config_shape(report)
    layout = report.layout or (shape.layout if shape else None)
    tensors: dict[str, tuple[int, ...]] = {}
    if k not in POINTS:
        raw = {"q": report.q_shape, "k": report.k_shape, "v": report.v_shape}
        if report.q_shape is None and shape is not None:
            raw = {t[0]: s for t, s in shape.tensor_shapes().items()}
        tensors = {n: _nhd(s, layout) for n, s in raw.items() if s is not None}
    causal = None
    if k not in POINTS:  # a sweep's causal is one of its axes, a workload's calls' own
        causal = shape.causal if shape else (report.scheduler.causal if report.scheduler
                                             else None)
    env = report.environment or {}
    gpu: dict[str, Any] = env["gpu"] if isinstance(env.get("gpu"), dict) else {}
    device = _text(env.get("device"))
    hardware = _text(gpu.get("name")) or ("cpu" if device and device.startswith("cpu")
                                          else None)
    software = {"torch": _text(env.get("torch")), "CUDA": _text(gpu.get("cuda")),
                "driver": _text(gpu.get("driver")), "SageAttention": sage_versions(report),
                "ncu": ncu_version(report)}
    path = _text((report.config or {}).get("inputs_path"))
    inputs = path or (f"synthetic:{shape.distribution}" if shape else None)
    wl = report.workload
    order = None if wl is None else wl.order or "call by call"  # before schema 8: each whole
    return Facts(k, tensors, layout, shape.dtype if shape else None, causal, hardware,
                 _text(gpu.get("uuid")), {n: v for n, v in software.items() if v}, inputs,
                 order)


def ncu_version(report: Report) -> str | None:
    """The environment's ncu, else what the profiles recorded (reports before the block)."""
    ncu = (report.environment or {}).get("ncu")
    if isinstance(ncu, dict) and _text(ncu.get("version")):
        return str(ncu["version"])
    found = {p.ncu_version for p in report.mainloop_profiles or [] if p.ncu_version}
    return ", ".join(sorted(found)) or None


def sage_versions(report: Report) -> str | None:
    provs = [v.provenance for v in report.variants or []] + [
        p.provenance for p in report.mainloop_profiles or []]
    found = {p.sageattention_version or p.sageattention_dist for p in provs if p is not None}
    return ", ".join(sorted(x for x in found if x)) or None


def describe_tensors(t: dict[str, tuple[int, ...]]) -> str:
    """B x N x H x D of q, and kv N x H where they are not q's."""
    q, k = t.get("q"), t.get("k")
    if q is None:
        return "; ".join(f"{n} {'x'.join(map(str, s))}" for n, s in t.items())
    text = "x".join(map(str, q))
    if k is not None and k[1:3] != q[1:3]:
        text += f" kv {k[1]}x{k[2]}"
    return text


def differences(a: Facts, b: Facts) -> tuple[list[str], list[str]]:
    """(why b cannot be compared with a, what differs that does not stop it); only facts both
    state."""
    refuse: list[str] = []
    common = [n for n in ("q", "k", "v") if n in a.tensors and n in b.tensors]
    if any(a.tensors[n] != b.tensors[n] for n in common):
        refuse.append(f"shape {describe_tensors(a.tensors)} vs {describe_tensors(b.tensors)}")
    device = "device" if "cpu" in (a.hardware, b.hardware) else "GPU"
    for what, x, y in (("layout", a.layout, b.layout), ("dtype", a.dtype, b.dtype),
                       ("causal", a.causal, b.causal), (device, a.hardware, b.hardware)):
        if x is not None and y is not None and x != y:
            refuse.append(f"{what} {x} vs {y}")
    said = []
    if a.inputs and b.inputs and a.inputs != b.inputs:
        said.append(f"inputs {a.inputs} vs {b.inputs}")
    if a.order and b.order and a.order != b.order:  # back-to-back totals follow the host's pace
        said.append(f"calls measured {a.order} vs {b.order}")
    if a.uuid and b.uuid and a.uuid != b.uuid and a.hardware == b.hardware:
        said.append(f"another GPU of the model (uuid {a.uuid[:13]} vs {b.uuid[:13]})")
    for name in dict.fromkeys([*a.software, *b.software]):
        x, y = a.software.get(name), b.software.get(name)
        if x and y and x != y:
            said.append(f"{name} {x} vs {y}")
    return refuse, said


def build_difference(a: Provenance | None, b: Provenance | None) -> str | None:
    """How two builds of a matched variant differ: each library whose sha256 is not the same
    ("_qattn_sm89 c037d8f2 vs 5e1f0a93"), or None when they are the same or cannot be told."""
    if a is None or b is None:
        return None
    sa = {f.module: f.sha256 for f in a.files if f.sha256}
    sb = {f.module: f.sha256 for f in b.files if f.sha256}
    diffs = [f"{m} {sa.get(m, 'none')[:8]} vs {sb.get(m, 'none')[:8]}"
             for m in dict.fromkeys([*sa, *sb]) if sa.get(m) != sb.get(m)]
    return ", ".join(diffs) or None


def kinds_line(labels: list[str], kinds: list[str]) -> str:
    """Why reports of different kinds are refused, in one line."""
    from sagetui.core.compare.match import letter

    first = kinds[0]
    other = next(i for i, k in enumerate(kinds) if k != first)
    return (f"{letter(0)} ({labels[0]}) is {KINDS[first]} and {letter(other)} "
            f"({labels[other]}) {KINDS[kinds[other]]}: they cannot be compared")
