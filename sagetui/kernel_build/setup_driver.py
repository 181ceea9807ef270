"""Run the tree's own setup.py, `build_ext` of the wanted extensions only, in a subprocess.

Why this way: the tree's setup.py is the one place that knows its sources, flags and
architecture rules (TORCH_CUDA_ARCH_LIST, CXX_APPEND_FLAGS/NVCC_APPEND_FLAGS), and torch's
BuildExtension (ninja, MAX_JOBS) compiles them; setup.py has no option to build some of its
extensions, so DRIVER captures what it declares by patching setuptools.setup while it runs
(runpy), keeps the wanted ext_modules and calls the real setup() with its cmdclass. The build
folder (--build-temp) is kept per tree, so ninja recompiles only what changed.

setup.py leads a process group of its own, which stop.py signals and waits for (a signal to
sagetui ends setup.py, ninja and the compilers, and none outlives the build); DRIVER ends that
group when sagetui dies without a word (SIGKILL: PR_SET_PDEATHSIG)."""

from __future__ import annotations

import codecs
import os
import re
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from sagetui.kernel_build import stop
from sagetui.kernel_build.errors import BuildFailed, BuildInputError

NOT_DECLARED = 3  # DRIVER's exit status when setup.py did not declare a wanted extension
MARK = "sagetui-build:"

# argv: wanted module names (comma-separated), --build-lib, --build-temp, sagetui's pid.
# SIGTERM or SIGHUP to setup.py alone (sagetui died: PR_SET_PDEATHSIG) is passed to its whole
# group, so that ninja and the compilers end with it.
DRIVER = """
import os, signal, sys
def _end(signum, _frame):
    signal.signal(signum, signal.SIG_DFL)
    os.killpg(0, signum)
for _sig in (signal.SIGTERM, signal.SIGHUP):
    signal.signal(_sig, _end)
try:
    import ctypes
    ctypes.CDLL(None).prctl(1, signal.SIGTERM)
except Exception:
    pass
try:  # sagetui died before the line above: nothing will send the signal
    os.kill(int(sys.argv[4]), 0)
except ProcessLookupError:
    _end(signal.SIGTERM, None)
import runpy, setuptools
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


POLL_S = 0.1
DRAIN_S = 1.0  # after setup.py ended, how long what it left behind may go on writing


def _output(proc: subprocess.Popen[bytes]) -> Iterator[str]:
    """setup.py's output, line by line, until it ends: the end of the pipe, or setup.py's own
    end when a process it left behind holds the pipe open (stop.group then ends that one)."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    pending, ended = "", None
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            ready = sel.select(POLL_S)
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                *done, pending = (pending + decoder.decode(chunk)).split("\n")
                yield from done
            if proc.poll() is not None:
                ended = ended or time.monotonic()
                if not ready or time.monotonic() - ended > DRAIN_S:
                    break
    pending += decoder.decode(b"", final=True)
    if pending:
        yield pending


def _how_it_ended(rc: int, lines: list[str]) -> str:
    """Why setup.py failed, in words, also when it printed nothing."""
    if rc < 0:
        return f"setup.py was killed by {signal.Signals(-rc).name}"
    said = "" if any(ln.strip() for ln in lines) else " and printed nothing"
    return f"setup.py exited with status {rc}{said}"


def run_setup(tree: Path, modules: tuple[str, ...], out: Path, temp: Path,
              env: Mapping[str, str], estimate_s: float | None, progress: Progress) -> None:
    """Build `modules` of `tree` into `out` (build_ext --build-lib), streaming each ninja
    step to `progress`; BuildFailed with the compiler's error lines when it fails,
    BuildInterrupted when a signal stopped it (stop.py)."""
    what = f"the build of {', '.join(modules)} from {tree}"
    stop.check(what)
    temp.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    last = f", last build {estimate_s:.1f} s" if estimate_s is not None else ""
    lines: list[str] = []
    try:
        proc = subprocess.Popen([sys.executable, "-c", DRIVER, ",".join(modules), str(out),
                                 str(temp), str(os.getpid())], cwd=tree, env=dict(env),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                process_group=0)
    except OSError as exc:
        raise BuildFailed(f"{what} could not start setup.py: {exc}", []) from None
    # ninja runs once per extension, its steps counted from 1 each time: each step is named
    # with its extension (setuptools says which it builds), else counted
    ext, before, name = 1, 0, ""
    with proc, stop.group(proc.pid):
        for line in _output(proc):
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
                progress(f"{which}step {step}/{m.group(2)}  {time.monotonic() - t0:.1f} s"
                         f"{last}")
        rc = proc.wait()
    stop.check(f"{what}: setup.py and its compilers have ended and nothing of it was cached")
    said = next((ln for ln in lines if ln.startswith(MARK)), None)
    if rc == NOT_DECLARED and said is not None:
        arch = env.get("TORCH_CUDA_ARCH_LIST", "")
        raise BuildInputError(f"{tree}: {said.removeprefix(MARK).strip()} (arch {arch})")
    if rc != 0:
        raise BuildFailed(f"{what} failed: {_how_it_ended(rc, lines)}", error_block(lines))
