"""Every failure path of the profile pass, and the whole driver on the recorded toy fixtures.

Mocks: no GPU or Nsight Compute here, so `ncu`, `cuobjdump` and `nvdisasm` are fake executables
(written below) that print what the real tools print: ncu's ERR_NVGPUCTRPERM text is ncu
2025.3's; the LibraryNotLoaded line keeps the token ncu prints, its wording around it is ours.
In the "ok" mode they serve the fixtures recorded on the H200 (tests/profile_fixtures)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sagetui.core.profile.failures import ProfileError
from sagetui.core.profile.rules import FAMILIES
from sagetui.core.report.model import SCHEMA_VERSION
from sagetui.session.profile_pass import Pass, Tools, profile_target

FIX = Path(__file__).parent / "profile_fixtures"
MANGLED = "_Z20toy_attention_kernelPKiS0_PK6__halfPS1_PKfS6_i"
PERM = ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
        "Performance Counters on the target device 0. For instructions on enabling permissions "
        "and to get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM")
MESSAGES = {
    "perm": PERM,
    "library": "==ERROR== Failed to load the profiling library: LibraryNotLoaded",
    "nokernel": "==WARNING== No kernels were profiled.",
}

FAKE_NCU = r'''#!PYTHON
import gzip, os, subprocess, sys
a = sys.argv[1:]
mode = os.environ["FAKE_MODE"]
fix = os.environ["FAKE_FIX"]
if "--version" in a:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\nVersion 2025.3.1.0 (build 1)")
    sys.exit(0)
if "-i" in a:
    page = a[a.index("--page") + 1]
    if page == "source":
        sys.stdout.write(gzip.open(fix + "/toy_attention.source.csv.gz", "rt").read())
    else:
        print('"ID","Kernel Name","smsp__pcsamp_interval"')
        print('"","",""')
        print('"0","MANGLED","6"')
    sys.exit(0)
target = a[a.index("-o") + 2:]
out = a[a.index("-o") + 1]
code = subprocess.call(target)
if mode in MESSAGES:
    print(MESSAGES[mode])
    sys.exit(0 if mode == "nokernel" else 1)
open(out + ".ncu-rep", "w").write("fake")
print("==PROF== Disconnected from process 1")
sys.exit(code)
'''
FAKE_CUOBJDUMP = r'''#!PYTHON
open("toy_attention.1.sm_90.cubin", "wb").write(b"\x7fELF MANGLED")
'''
FAKE_NVDISASM = r'''#!PYTHON
import gzip, os, sys
text = gzip.open(os.environ["FAKE_FIX"] + "/toy_attention.listing.txt.gz", "rt").read()
if os.environ["FAKE_MODE"] == "nolines":
    text = "\n".join(ln for ln in text.splitlines() if "//##" not in ln)
sys.stdout.write(text)
'''


def _tool(d: Path, name: str, body: str) -> str:
    p = d / name
    p.write_text(body.replace("#!PYTHON", f"#!{sys.executable}")
                 .replace("MESSAGES[", f"{MESSAGES!r}[").replace("mode in MESSAGES",
                                                                 f"mode in {MESSAGES!r}")
                 .replace("MANGLED", MANGLED))
    p.chmod(0o755)
    return str(p)


def fake_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Tools:
    """The three fake tools in tmp_path/bin, serving the recorded toy fixtures."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("FAKE_FIX", str(FIX))
    return Tools(_tool(bin_dir, "ncu", FAKE_NCU), _tool(bin_dir, "cuobjdump", FAKE_CUOBJDUMP),
                 _tool(bin_dir, "nvdisasm", FAKE_NVDISASM))


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    tools = fake_tools(tmp_path, monkeypatch)
    work = tmp_path / "work"
    work.mkdir()
    info = work / "info.json"
    # the profiled "call": writes the module list, as runner/profile_child.py does
    target = [sys.executable, "-c", "import json, sys; json.dump({'files': {'toy_attention': "
              f"'{tmp_path}/toy_attention'}}}}, open(sys.argv[1], 'w'))", str(info)]

    def go(mode: str):
        monkeypatch.setenv("FAKE_MODE", mode)
        p = Pass(workdir=work, tools=tools, source_dirs=[str(FIX)])
        return profile_target(p, target, fam=FAMILIES["toy"], nvtx="toy", variant="toy",
                              backend=None, info_path=info)
    return go


def test_the_driver_end_to_end_on_the_recorded_fixtures(fake):
    prof = fake("ok")
    assert prof.placed_share >= 0.95
    assert prof.ncu_version == "2025.3.1.0" and prof.kernel == MANGLED
    assert prof.sampling_interval == 6 and prof.sampling_interval_cycles == 2048
    assert prof.line_info and prof.hot_lines[0].phase == "pv_accumulation"
    assert "--clock-control" in prof.command and "SourceCounters" in prof.command


@pytest.mark.parametrize(("mode", "kind", "says"), [
    ("perm", "counters_not_permitted", "ERR_NVGPUCTRPERM"),
    ("library", "library_not_loaded", "LibraryNotLoaded"),
    ("nokernel", "kernel_not_found", "no kernel named toy_attention_kernel"),
    ("nolines", "no_line_info", "NVCC_APPEND_FLAGS=-lineinfo"),
])
def test_each_failure_is_one_line_that_says_how_to_fix_it(fake, mode, kind, says):
    with pytest.raises(ProfileError) as exc:
        fake(mode)
    assert exc.value.kind == kind
    assert says in str(exc.value) and "\n" not in str(exc.value)


def test_no_ncu_exits_2_with_one_line_before_a_runner_starts(tmp_path: Path):
    env = {**os.environ, "PATH": str(tmp_path), "CUDA_HOME": str(tmp_path / "none")}
    out = subprocess.run([sys.executable, "-m", "sagetui", "profile", "--backend", "sage2-sm89",
                          "--json", str(tmp_path / "r.json")], capture_output=True, text=True,
                         env=env, timeout=60)
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "ncu (Nsight Compute)" in out.stderr
    assert not (tmp_path / "r.json").exists()


def test_a_report_with_profiles_round_trips(fake, tmp_path: Path):
    from sagetui.core.check.report import check_report
    from sagetui.core.export.report import to_markdown
    from sagetui.core.report.io import load_report, save_report
    from sagetui.core.run.assemble import profile_report

    report = profile_report({}, [fake("ok")], "complete")
    path = save_report(report, tmp_path / "p.json")
    back = load_report(path)
    assert back == report and check_report(back) == []
    md = to_markdown(back)
    assert "Inside the main loop" in md and "pv_accumulation" in md
    assert json.loads(path.read_text())["schema_version"] == SCHEMA_VERSION
