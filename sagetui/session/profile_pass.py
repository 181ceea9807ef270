"""The profile pass: a variant's call run once under Nsight Compute, its per-instruction
warp-stall samples placed in the fused main loop's phases (core/profile).

Session layer: it only spawns processes (ncu launching `python -m sagetui.runner.profile_child`,
then ncu's exporter, cuobjdump and nvdisasm) and reads what they wrote. Never during timed
rounds: ncu replays the kernel (docs/architecture.md, Processes).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sagetui.core.blocks.base import Provenance
from sagetui.core.blocks.profile import MainloopProfile
from sagetui.core.config import RunConfig, VariantSpec
from sagetui.core.environment import environment_block, host_facts
from sagetui.core.paths import cuda_tool
from sagetui.core.profile.attribute import attribute, choose_function
from sagetui.core.profile.failures import NO_LINE_INFO, NO_NCU, ProfileError, ncu_failure
from sagetui.core.profile.listing import Function, parse_listing
from sagetui.core.profile.ncu_csv import CsvFormatError, parse_source_csv
from sagetui.core.profile.place import KernelNotInSource, Placer
from sagetui.core.profile.rules import FAMILIES, Family
from sagetui.core.profile.source import SourceIndex, resolve_source
from sagetui.core.profile.summary import to_profile

Progress = Callable[[str], None]
SECTIONS = ("SourceCounters", "WarpStateStats")
TOOL_TIMEOUT_S = 600.0


class ProfileCancelled(Exception):
    pass


@dataclass
class Tools:
    ncu: str
    cuobjdump: str | None
    nvdisasm: str | None

    @classmethod
    def find(cls) -> Tools:
        ncu = cuda_tool("ncu")
        if ncu is None:
            raise ProfileError("no_ncu", NO_NCU)
        return cls(ncu, cuda_tool("cuobjdump"), cuda_tool("nvdisasm"))


@dataclass
class Pass:
    """One profile pass's settings and plumbing, and what its profiled processes said of where
    they ran (`environment`: the report's block)."""

    workdir: Path
    tools: Tools
    source_dirs: list[str] = field(default_factory=list)
    progress: Progress = lambda _step: None
    cancel: threading.Event = field(default_factory=threading.Event)
    ran_on: dict[str, Any] = field(default_factory=dict)  # the last profiled process's
    ncu: dict[str, Any] = field(default_factory=dict)  # ncu's path, version and version line

    @property
    def environment(self) -> dict[str, Any]:
        """The report's environment block (core/environment.py): the profiled process's python,
        torch, device and GPU (name, uuid, driver...), this machine, and ncu."""
        return environment_block(runner=self.ran_on, ready=self.ran_on, host=host_facts(),
                                 ncu=self.ncu or None)

    def run(self, cmd: list[str], what: str, cwd: Path | None = None) -> tuple[int, str]:
        """Run `cmd`, return (status, stdout + stderr); cancel ends it (it alone, by pid)."""
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=cwd,
                                    start_new_session=True)
            deadline = time.monotonic() + TOOL_TIMEOUT_S
            while proc.poll() is None:
                if self.cancel.is_set() or time.monotonic() > deadline:
                    os.killpg(proc.pid, 15)
                    proc.wait()
                    if self.cancel.is_set():
                        raise ProfileCancelled(f"cancelled during {what}")
                    raise ProfileError("timeout", f"{what} ran past {TOOL_TIMEOUT_S:.0f} s")
                time.sleep(0.1)
            log.seek(0)
            return proc.returncode, log.read()


def family_of(backend: str) -> Family:
    fam = FAMILIES.get(backend.removeprefix("sage2-"))
    if fam is None or fam.name == "toy":
        known = ", ".join(f"sage2-{n}" for n in FAMILIES if n != "toy")
        raise ProfileError("not_profilable", f"{backend} has no fused main-loop kernel to "
                           f"profile (profiled backends: {known})")
    return fam


def nvtx_name(variant: str) -> str:
    return "sagetui_" + re.sub(r"[^A-Za-z0-9_.-]", "_", variant)


def ncu_version(p: Pass) -> str | None:
    """ncu's version number; its path and version line are kept in p.ncu for the report."""
    _, out = p.run([p.tools.ncu, "--version"], "ncu --version")
    m = re.search(r"^.*Version\s+(\S+).*$", out, re.MULTILINE)
    p.ncu = {"path": p.tools.ncu, "version": m.group(1) if m else None,
             "version_line": m.group(0).strip() if m else None}
    return m.group(1) if m else None


def ncu_command(p: Pass, report: Path, kernel: str, nvtx: str, target: list[str]) -> list[str]:
    cmd = [p.tools.ncu, "--nvtx", "--nvtx-include", f"{nvtx}/", "-k", f"regex:{kernel}",
           "--launch-count", "1"]
    for s in SECTIONS:
        cmd += ["--section", s]
    return [*cmd, "--clock-control", "none", "--cache-control", "none", "-f",
            "-o", str(report), *target]


def export(p: Pass, report: Path) -> tuple[str, dict[str, str]]:
    """ncu's source page (SASS rows) and the launch's raw metrics (name -> value)."""
    code, page = p.run([p.tools.ncu, "-i", str(report), "--page", "source", "--csv",
                        "--print-source", "sass"], "ncu's source export")
    if code:
        raise ProfileError("ncu_error", f"ncu could not export {report}: "
                           f"{page.strip().splitlines()[-1:]}")
    _, raw = p.run([p.tools.ncu, "-i", str(report), "--page", "raw", "--csv",
                    "--print-kernel-base", "mangled"], "ncu's raw export")
    (p.workdir / "raw.csv").write_text(raw)
    return page, _raw_metrics(raw)


def _raw_metrics(text: str) -> dict[str, str]:
    import csv
    import io

    rows = [r for r in csv.reader(io.StringIO(text)) if r]
    head = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
    if head is None or head + 1 >= len(rows):
        return {}
    data = next((r for r in rows[head + 1:] if len(r) == len(rows[head]) and r[0].strip()
                 and not r[0].startswith("=") and r[0] != ""), rows[-1])
    return dict(zip(rows[head], data, strict=False))


def sampling_interval(raw: dict[str, str]) -> int | None:
    try:
        return int(float(raw.get("smsp__pcsamp_interval", "").replace(",", "")))
    except ValueError:
        return None


def listings(p: Pass, module: str, kernel: str, mangled: str | None) -> dict[str, Function]:
    """The functions named like `kernel` (only `mangled`, the sampled one, when ncu named it)
    of the module's cubins that hold it, with their inline chains."""
    if not p.tools.cuobjdump or not p.tools.nvdisasm:
        raise ProfileError("no_tools", "cuobjdump and nvdisasm (CUDA toolkit) are not on PATH: "
                           "install the CUDA toolkit or set CUDA_HOME")
    out_dir = Path(tempfile.mkdtemp(prefix="cubins-", dir=p.workdir))
    code, text = p.run([p.tools.cuobjdump, "-xelf", "all", os.path.abspath(module)],
                       "cuobjdump", cwd=out_dir)
    cubins = sorted(out_dir.glob("*.cubin"))
    if code or not cubins:
        raise ProfileError("no_cubin", f"cuobjdump found no cubin in {module}: "
                           f"{text.strip()[-200:]}")
    funcs: dict[str, Function] = {}
    for c in cubins:
        if (mangled or kernel).encode() not in c.read_bytes():
            continue
        code, listing = p.run([p.tools.nvdisasm, "-c", "-g", "-gi", str(c)], f"nvdisasm {c.name}")
        if code:
            raise ProfileError("nvdisasm", f"nvdisasm failed on {c.name}: {listing[-200:]}")
        (p.workdir / f"{c.stem}.listing.txt").write_text(listing)
        funcs.update(parse_listing(listing, only=mangled))
    return funcs


def analyse(p: Pass, page: str, funcs: dict[str, Function], fam: Family, *, module: str,
            variant: str, backend: str | None, version: str | None, interval: int | None,
            wall_s: float, command: list[str]) -> MainloopProfile:
    try:
        rows = parse_source_csv(page)
    except CsvFormatError as exc:
        raise ProfileError("csv", f"ncu's source page: {exc}") from None
    func = choose_function_or_fail(funcs, rows, fam, module)
    if not func.has_line_info:
        raise ProfileError("no_line_info", NO_LINE_INFO.format(function=fam.kernel,
                                                               module=module))
    recorded = next((fr.file for i in func.instructions for fr in reversed(i.chain)
                     if os.path.basename(fr.file) == fam.file), None)
    if recorded is None:
        raise ProfileError("no_kernel_frames", f"no instruction of {fam.kernel} has an inline "
                           f"frame in {fam.file}: is this SageAttention's kernel?")
    path = resolve_source(recorded, p.source_dirs)
    if path is None:
        raise ProfileError("no_source", f"cannot read the kernel's source {recorded} (recorded "
                           "by -lineinfo): pass --source-dir with the folder of SageAttention's "
                           "csrc")
    try:
        placer = Placer(fam, SourceIndex(path.read_text(encoding="utf-8", errors="replace")))
    except KernelNotInSource as exc:
        raise ProfileError("kernel_not_in_source", f"{path}: {exc}") from None
    att = attribute(rows, func, fam.file, placer)
    return to_profile(att, variant=variant, family=fam.name, backend=backend,
                      ncu_version=version, sampling_interval=interval, wall_s=wall_s,
                      command=command)


def choose_function_or_fail(funcs: dict[str, Function], rows, fam: Family,
                            module: str) -> Function:
    from sagetui.core.profile.attribute import ListingMismatch

    try:
        return choose_function(funcs, rows, fam.kernel)
    except ListingMismatch as exc:
        raise ProfileError("kernel_not_found", f"{module}: {exc}") from None


def profile_target(p: Pass, target: list[str], *, fam: Family, nvtx: str, variant: str,
                   backend: str | None, info_path: Path) -> MainloopProfile:
    """Profile the process `target` (it runs the call inside NVTX range `nvtx` and writes the
    module files it used to `info_path`) and attribute its main-loop kernel."""
    version = ncu_version(p)
    report = p.workdir / nvtx
    cmd = ncu_command(p, report, fam.kernel, nvtx, target)
    p.progress(f"ncu: profiling {variant} ({' '.join(SECTIONS)}; replays the kernel)")
    t0 = time.monotonic()
    code, out = p.run(cmd, f"ncu on {variant}")
    wall = time.monotonic() - t0
    (p.workdir / f"{nvtx}.ncu.log").write_text(out)
    failure = ncu_failure(out, kernel=fam.kernel, nvtx=nvtx)
    if failure is None and code:
        tail = [ln for ln in out.strip().splitlines() if ln.strip()][-1:] or ["no output"]
        failure = ProfileError("target_failed", f"the profiled call failed (exit {code}): "
                               f"{tail[0][:300]}")
    if failure is not None:
        raise failure
    rep = Path(f"{report}.ncu-rep")  # ncu appends the suffix to -o
    p.progress("ncu: exporting the source page")
    page, raw = export(p, rep)
    (p.workdir / f"{nvtx}.source.csv").write_text(page)
    info = _child_info(info_path)
    module = _module_from(info, fam)
    ran_on = info.get("environment")
    p.ran_on = ran_on if isinstance(ran_on, dict) else {}
    p.progress(f"cuobjdump + nvdisasm: inline chains of {Path(module).name}")
    name = raw.get("Kernel Name", "")
    funcs = listings(p, module, fam.kernel, name if name.startswith("_Z") else None)
    prof = analyse(p, page, funcs, fam, module=module, variant=variant, backend=backend,
                   version=version, interval=sampling_interval(raw), wall_s=wall,
                   command=cmd)
    try:
        build = Provenance.model_validate(info["provenance"]) if info.get("provenance") \
            else None
    except ValueError:  # what a child wrote, checked: a bad entry is left out, not fatal
        build = None
    return prof.model_copy(update={"provenance": build})


def _child_info(info_path: Path) -> dict[str, Any]:
    """What the profiled process wrote (runner/profile_child.py's child_info)."""
    try:
        info = json.loads(info_path.read_text())
    except (OSError, ValueError):
        raise ProfileError("target_failed", "the profiled call wrote no module list") from None
    return info if isinstance(info, dict) else {}


def _module_from(info: dict[str, Any], fam: Family) -> str:
    files = info.get("files") or {}
    module = files.get(fam.module)
    if not module:
        raise ProfileError("not_profilable", f"the call ran no {fam.module} module ({files})")
    return str(module)


def profile_variant(config: RunConfig, spec: VariantSpec, p: Pass) -> MainloopProfile:
    fam = family_of(spec.backend)
    nvtx = nvtx_name(spec.name)
    cfg = p.workdir / f"{nvtx}.config.json"
    cfg.write_text(config.model_dump_json())
    info = p.workdir / f"{nvtx}.info.json"
    target = [sys.executable, "-m", "sagetui.runner.profile_child", "--config", str(cfg),
              "--variant", spec.name, "--nvtx", nvtx, "--info", str(info),
              "--warmup", str(max(1, config.warmup))]
    return profile_target(p, target, fam=fam, nvtx=nvtx, variant=spec.name,
                          backend=spec.backend, info_path=info)
