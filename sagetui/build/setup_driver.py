"""Run the tree's own setup.py, `build_ext` of the wanted extensions only, in a subprocess.

Why this way: the tree's setup.py is the one place that knows its sources, flags and
architecture rules (TORCH_CUDA_ARCH_LIST, CXX_APPEND_FLAGS/NVCC_APPEND_FLAGS), and torch's
BuildExtension (ninja, MAX_JOBS) compiles them; setup.py has no option to build some of its
extensions, so DRIVER captures what it declares by patching setuptools.setup while it runs
(runpy), keeps the wanted ext_modules and calls the real setup() with its cmdclass. The build
folder (--build-temp) is kept per tree, so ninja recompiles only what changed."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from sagetui.build.errors import BuildFailed, BuildInputError

NOT_DECLARED = 3  # DRIVER's exit status when setup.py did not declare a wanted extension
MARK = "sagetui-build:"

# argv: wanted module names (comma-separated), --build-lib, --build-temp
DRIVER = """
import runpy, sys, setuptools
wanted, out, temp = sys.argv[1].split(","), sys.argv[2], sys.argv[3]
real, seen = setuptools.setup, {}
setuptools.setup = lambda **kw: seen.update(kw)
sys.argv = ["setup.py", "build_ext"]
runpy.run_path("setup.py", run_name="__main__")
setuptools.setup = real
exts = [e for e in seen.get("ext_modules") or [] if e.name.rpartition(".")[2] in wanted]
missing = sorted(set(wanted) - {e.name.rpartition(".")[2] for e in exts})
if missing:
    print("%s setup.py declares no %s here" % (MARK, ", ".join(missing)), flush=True)
    sys.exit(NOT_DECLARED)
real(name=seen.get("name", "sageattention"), version=seen.get("version", "0"),
     ext_modules=exts, cmdclass=seen.get("cmdclass") or {},
     script_args=["build_ext", "--build-lib", out, "--build-temp", temp])
""".replace("MARK", repr(MARK)).replace("NOT_DECLARED", str(NOT_DECLARED))

STEP = re.compile(r"^\[(\d+)/(\d+)\]")
BUILDING = re.compile(r"building '([^']+)' extension")  # setuptools' line before each one
# gcc/clang `file:line:col: error:`, nvcc `file(line): error:`, `fatal error:`, a linker's
_ERROR = re.compile(r"(\berror\b:|: error|\bundefined reference\b|^FAILED:)", re.I)
CONTEXT_BEFORE, CONTEXT_AFTER, TAIL = 3, 12, 15


def error_block(lines: list[str]) -> list[str]:
    """The first compiler error with the lines around it (not the whole log): a few lines
    before (`In function ...`), the error, and what follows until the next build step."""
    first = next((i for i, ln in enumerate(lines)
                  if _ERROR.search(ln) and not ln.startswith("FAILED:")), None)
    if first is None:
        first = next((i for i, ln in enumerate(lines) if _ERROR.search(ln)), None)
    if first is None:
        return lines[-TAIL:]
    start = first
    while start > 0 and first - start < CONTEXT_BEFORE and not STEP.match(lines[start - 1]) \
            and not lines[start - 1].startswith("FAILED:"):
        start -= 1
    end = first + 1
    while end < len(lines) and end - first <= CONTEXT_AFTER and not STEP.match(lines[end]) \
            and not lines[end].startswith(("ninja: build stopped", "FAILED:")):
        end += 1
    return lines[start:end]


Progress = Callable[[str], None]


def run_setup(tree: Path, modules: tuple[str, ...], out: Path, temp: Path,
              env: Mapping[str, str], estimate_s: float | None, progress: Progress) -> None:
    """Build `modules` of `tree` into `out` (build_ext --build-lib), streaming each ninja
    step to `progress`; BuildFailed with the compiler's error lines when it fails."""
    temp.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    last = f", last build {estimate_s:.1f} s" if estimate_s is not None else ""
    lines: list[str] = []
    proc = subprocess.Popen([sys.executable, "-c", DRIVER, ",".join(modules), str(out),
                             str(temp)], cwd=tree, env=dict(env), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace")
    assert proc.stdout is not None
    # ninja runs once per extension, its steps counted from 1 each time: each step is named
    # with its extension (setuptools says which it builds), else counted
    ext, before, name = 1, 0, ""
    for raw in proc.stdout:
        line = raw.rstrip("\n")
        lines.append(line)
        building = BUILDING.search(line)
        if building:
            name = building.group(1).rsplit(".", 1)[-1]
        m = STEP.match(line)
        if m:
            step = int(m.group(1))
            if step <= before and ext < len(modules):
                ext += 1
            before = step
            which = f"{name}: " if name else \
                f"extension {ext}/{len(modules)}, " if len(modules) > 1 else ""
            progress(f"{which}step {step}/{m.group(2)}  {time.monotonic() - t0:.1f} s{last}")
    rc = proc.wait()
    if rc == NOT_DECLARED:
        said = next((ln for ln in lines if ln.startswith(MARK)), "")
        arch = env.get("TORCH_CUDA_ARCH_LIST", "")
        raise BuildInputError(f"{tree}: {said.removeprefix(MARK).strip()} (arch {arch})")
    if rc != 0:
        raise BuildFailed(f"the build of {', '.join(modules)} from {tree} failed (exit {rc})",
                          error_block(lines))
