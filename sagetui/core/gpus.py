"""`--gpus`: which devices get a runner each. Parsed before any runner starts (one line, exit 2).

A slot is one runner process: `cuda` slots are pinned through CUDA_VISIBLE_DEVICES (the runner
then sees its GPU as cuda:0, so its own `gpu.index` is 0 and the slot's `visible` holds the
node's index); `cpu` slots are CPU stand-ins (the reference backend) that test the split on a
machine without GPUs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Slot:
    label: str  # "gpu 3", "cpu 1": the console's status line and the report's `measured_on`
    device: str  # the runner's --device: "cuda:0" (pinned) or "cpu"
    visible: str | None = None  # CUDA_VISIBLE_DEVICES for this runner (a node index or UUID)
    env: dict[str, str] = field(default_factory=dict)

    def runner_env(self) -> dict[str, str]:
        env = dict(self.env)
        env["CUDA_VISIBLE_DEVICES"] = self.visible if self.visible is not None else ""
        return env


def node_gpus() -> list[str]:
    """The GPUs this process may use: CUDA_VISIBLE_DEVICES where it is set (Slurm sets it),
    else every GPU nvidia-smi lists. Empty without a GPU or a driver."""
    vis = os.environ.get("CUDA_VISIBLE_DEVICES")
    if vis is not None:
        return [d.strip() for d in vis.split(",") if d.strip() and d.strip() != "-1"]
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        out = subprocess.run([smi, "--query-gpu=index", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [ln.strip() for ln in out.stdout.splitlines() if ln.strip()] if not out.returncode \
        else []


def parse_gpus(text: str, available: list[str] | None = None) -> list[Slot]:
    """`all`, a comma list of GPU indices (`0,2,3`), or `cpu:N` (N CPU stand-ins). ValueError
    with the reason for anything else. `available`: the node's GPUs (node_gpus())."""
    text = text.strip()
    if text.startswith("cpu:"):
        n = text[4:]
        if not n.isdigit() or not 1 <= int(n) <= 64:
            raise ValueError(f"{text!r}: cpu:N wants N from 1 to 64")
        return [Slot(label=f"cpu {i}", device="cpu") for i in range(int(n))]
    gpus = node_gpus() if available is None else available
    if text == "all":
        if not gpus:
            raise ValueError("'all': no GPU found here (nvidia-smi lists none; "
                             "CPU stand-ins: --gpus cpu:N)")
        chosen = gpus
    else:
        parts = [p.strip() for p in text.split(",")]
        if not text or any(not p.isdigit() for p in parts):
            raise ValueError(f"{text!r}: want 'all', a comma list of GPU indices (0,1,3) "
                             "or cpu:N")
        if len(set(parts)) != len(parts):
            raise ValueError(f"{text!r}: a GPU is listed twice")
        bad = [p for p in parts if int(p) >= len(gpus)]
        if bad:
            raise ValueError(f"{text!r}: no GPU {', '.join(bad)} here ({len(gpus)} found)")
        chosen = [gpus[int(p)] for p in parts]
    return [Slot(label=f"gpu {i}", device="cuda:0", visible=g)
            for i, g in zip(_indices(text, len(gpus)), chosen, strict=True)]


def _indices(text: str, n: int) -> list[int]:
    return list(range(n)) if text == "all" else [int(p) for p in text.split(",")]


def measured_on(slot_label: str | None, device: str | None,
                gpu: dict[str, Any] | None) -> dict[str, Any]:
    """Which runner measured a point: its slot (a single runner: its device), and the GPU's
    name and UUID as the runner saw it (its ready event's `gpu`), so that a report says which
    physical GPU each number came from."""
    if slot_label is None:
        dev = device or "cpu"
        slot_label = f"gpu {dev.partition(':')[2] or 0}" if dev.startswith("cuda") else "cpu"
    out: dict[str, Any] = {"runner": slot_label, "name": None, "uuid": None}
    if gpu:
        out.update(name=gpu.get("name"), uuid=gpu.get("uuid"))
    return out
