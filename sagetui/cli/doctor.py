"""`sagetui doctor`: what this machine can run, and the real reason for what it cannot."""

from __future__ import annotations

import argparse
import os

from rich.console import Console
from rich.markup import escape
from rich.table import Table


def cmd_doctor(args: argparse.Namespace) -> int:
    from sagetui.session.probe import probe

    console = Console()
    try:
        info = probe(timeout=300 if getattr(args, "peak", False) else 120,
                     peak=getattr(args, "peak", False))
    except Exception as exc:
        console.print(f"[red]the runner could not start[/]: {exc}")
        return 1
    t = Table(title="sagetui doctor", show_header=False)
    t.add_column("what")
    t.add_column("found")
    torch = info.get("torch", {})
    t.add_row("python", f"{info.get('python')} ({info.get('executable')})")
    t.add_row("torch", f"{torch.get('version')} (CUDA {torch.get('cuda')})" if torch.get("ok")
              else f"[red]{torch.get('error')}[/]")
    gpu = info.get("gpu")
    t.add_row("GPU", f"{gpu['name']} {gpu['capability']}, {gpu['sm_count']} SMs, "
              f"{gpu['memory_gib']:.0f} GiB" if gpu else "none visible to torch")
    nvml = info.get("nvml", {})
    t.add_row("NVML / driver", f"driver {nvml.get('driver')}" if nvml.get("ok")
              else f"unavailable: {nvml.get('error')}")
    t.add_row("sageattention", str(info.get("sageattention_dist")))
    for mod, r in (info.get("modules") or {}).items():
        t.add_row(f"  {mod}", f"loads ({r.get('file')})" if r.get("ok")
                  else f"[yellow]{r.get('error')}[/]")
    for name, why in (info.get("backends") or {}).items():
        t.add_row(f"backend {name}", "[green]can run here[/]" if why is None
                  else f"[yellow]cannot[/]: {why}")
    for spec, why in (info.get("baselines") or {}).items():
        t.add_row(f"baseline {escape(spec)}", "[green]can run here[/]" if why is None
                  else f"[yellow]cannot[/]: {escape(why)}")
    sheet = info.get("datasheet_peak_tops") or {}
    if sheet:
        t.add_row("datasheet peak (dense)", ", ".join(
            f"{k} {v:,.0f} TOPS" for k, v in sheet.items() if v) or "this GPU is not listed")
    pk = info.get("peak")
    if pk:
        t.add_row("measured ceiling", f"int8 {pk.get('int8_tops', 0):,.1f} TOPS, bf16 "
                  f"{pk.get('bf16_tops', 0):,.1f} TOPS ({pk.get('method')})"
                  + "".join(f"; {k}: {v}" for k, v in pk.items() if k.endswith("_error")))
    t.add_row("terminal", f"TERM={os.environ.get('TERM', '')} "
              f"COLORTERM={os.environ.get('COLORTERM', '')} -> colour system "
              f"{console.color_system or 'none'}")
    console.print(t)
    return 0
