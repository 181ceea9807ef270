"""Issue 24 on a GPU: `sagetui profile` over two variants of one build (an A/A pair) under the
real Nsight Compute. The diff must flag nothing, match its hot lines by their code keys in place,
keep every stall reason, and check clean. Needs ncu on PATH and SageAttention built with
NVCC_APPEND_FLAGS=-lineinfo; SAGETUI_SAGE_SRC names its csrc when the recorded paths are gone.

SAGETUI_GPU_STATS=<file.json> records the diff's largest |change| / error per kind."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from gpu_stats import GPU_MARKS, stats_fixture

from sagetui.core.check.report import check_report
from sagetui.core.report.io import load_report

pytestmark = [*GPU_MARKS,
              pytest.mark.skipif(shutil.which("ncu") is None, reason="needs ncu on PATH")]

STATS: dict[str, Any] = {}
_write_stats = stats_fixture(STATS, "_profile_diff")


def test_sagetui_profile_of_one_build_twice_changes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "aa.json"
    src = os.environ.get("SAGETUI_SAGE_SRC")
    cmd = [sys.executable, "-m", "sagetui", "profile", "--variant", "a=sage2-sm90",
           "--variant", "b=sage2-sm90", "--q-len", "8192", "--kv-len", "8192", "--heads", "16",
           "--json", str(out), "--markdown", str(tmp_path / "aa.md")] \
        + (["--source-dir", src] if src else [])
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    report = load_report(out)
    assert check_report(report) == []
    (d,) = report.mainloop_diff.variants
    assert (report.mainloop_diff.baseline, d.b) == ("a", "b")
    assert not [p.phase for p in d.phases if p.beyond]
    assert d.stalls is not None and not [s.reason for s in d.stalls if s.beyond]
    matched = [h for h in d.hot_lines if h.matched_by is not None]
    assert len(matched) >= 5 and all(h.matched_by == "code" and not h.moved for h in matched)
    # the last places of the hot list may swap between runs: only lines of under 0.5 %
    assert all((h.a or h.b).share < 0.005 for h in d.hot_lines if h.matched_by is None)
    assert "b vs a: phases" in done.stdout
    STATS["max_z"] = {kind: max((abs(x.change) / x.error for x in xs if x.error), default=0.0)
                      for kind, xs in (("phases", d.phases), ("stalls", d.stalls))}
    STATS["samples"] = [d.a_samples, d.b_samples]
