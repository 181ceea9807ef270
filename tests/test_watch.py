"""The watch's parts on the CPU, with real parts only: watchfiles over a real temp tree
(build_tree.py's) reacting to a real write, the snapshot/diff of a tree against its previous
build, the history row of a real report (sample_results/cpu_reference_variants.json, a
recorded CPU run), and a failing source build leaving its variant out while the other builds
(real builds of the tiny tree through its setup.py)."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

from sagetui.core import format as fmt
from sagetui.core.build_facts import FileDiff, LeftOut
from sagetui.core.report.io import load_report
from sagetui.core.run.load import report_threshold
from sagetui.core.statistics.verdict import paired_speedup
from sagetui.core.watch_history import MAINLOOP, change_text, row_of
from sagetui.kernel_build.errors import BuildFailed
from sagetui.kernel_build.tree import hash_sources
from sagetui.kernel_build.tree_diff import snapshot, tree_diff
from sagetui.kernel_build.watch import TreeWatch

from .build_tree import MODULE, set_qattn_source, write_tree
from .conftest import sagetui_here, seed_build_cache

SAMPLE = Path(__file__).resolve().parents[1] / "sagetui" / "sample_results" / \
    "cpu_reference_variants.json"
needs_compiler = pytest.mark.skipif(shutil.which("c++") is None or shutil.which("ninja") is None,
                                    reason="needs a C++ compiler and ninja")


def test_a_real_write_is_reported_once_with_its_file(tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "tree")
    digest, _ = hash_sources(tree)
    watch = TreeWatch({"mine": tree}, {"mine": digest})
    seen: list[tuple[str, list[str]]] = []
    got, stop = threading.Event(), threading.Event()

    def changed(name: str, files: list[str]) -> None:
        seen.append((name, files))
        got.set()

    thread = threading.Thread(target=watch.run, args=(changed, stop),
                              kwargs={"debounce_ms": 100}, daemon=True)
    thread.start()
    try:
        assert watch.ready.wait(30), "the watch never started"
        (tree / "build").mkdir(exist_ok=True)
        (tree / "build" / "x.o").write_text("1")  # not a source: never reported
        set_qattn_source(tree, MODULE.format(value=89) + "// edit\n")
        assert got.wait(30), "the change was never reported"
    finally:
        stop.set()
        thread.join(10)
    assert not thread.is_alive()
    assert seen == [("mine", ["csrc/qattn/pybind_sm89.cpp"])]  # one write, reported once
    assert watch.hashes["mine"] == hash_sources(tree)[0] != digest


def test_a_batch_that_leaves_the_sources_as_they_were_is_nothing(tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "tree")
    watch = TreeWatch({"mine": tree}, {"mine": hash_sources(tree)[0]})
    path = tree / "csrc" / "qattn" / "pybind_sm89.cpp"
    path.write_text(path.read_text())  # saved without an edit
    assert watch.judge({str(path)}) == []
    assert not watch.wanted(None, str(tree / "build" / "a.o"))
    assert not watch.wanted(None, str(tmp_path / "elsewhere.cpp"))
    assert watch.wanted(None, str(tree / "setup.py"))
    for dropping in (".pybind_sm89.cpp.swp", "pybind_sm89.cpp~", "#pybind_sm89.cpp#",
                     ".#pybind_sm89.cpp"):  # vim's, emacs' backup and lock
        assert not watch.wanted(None, str(path.parent / dropping))
    path.write_text(path.read_text() + "// x\n")
    assert watch.judge({str(path), str(tree / "setup.py")}) == [
        ("mine", ["csrc/qattn/pybind_sm89.cpp", "setup.py"])]


def test_the_change_since_the_previous_build(tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "tree")
    before = snapshot(tree, tmp_path / "copy")
    assert tree_diff(before, tree) == []
    set_qattn_source(tree, MODULE.format(value=90) + "// one\n// two\n")
    (tree / "csrc" / "new.h").write_text("#pragma once\n")
    files = tree_diff(before, tree)
    assert files == [FileDiff(file="csrc/new.h", added=1, deleted=0),
                     FileDiff(file="csrc/qattn/pybind_sm89.cpp", added=3, deleted=1)]
    assert change_text(files) == "new.h +1 -0, pybind_sm89.cpp +3 -1"
    snapshot(tree, before)  # the next build: replaced whole
    assert tree_diff(before, tree) == []


def test_history_rows_of_a_recorded_run() -> None:
    """Each figure against the report and the statistics: the verdict as recorded, the
    main-loop delta from the phase's p50s and the paired interval on its round medians (here
    recomputed from the raw samples with numpy, apart from the code under test)."""
    report = load_report(SAMPLE)
    base = row_of(report, "ref", "first build", when=0)
    assert (base.variant, base.change, base.verdict, base.mainloop) == \
        ("ref", "first build", "baseline", fmt.DASH)
    row = row_of(report, "slow", "pybind_sm89.cpp +1 -0")
    entry = next(v for v in report.variants or [] if v.name == "slow")
    assert entry.verdict is not None
    assert row.verdict == fmt.verdict(entry.verdict.model_dump()) and "[" in row.verdict
    assert report.samples is not None
    p50 = {n: next(v for v in report.variants or [] if v.name == n).phase_timings[MAINLOOP].p50_s
           for n in ("ref", "slow")}
    med = {n: [float(np.median(r)) for r in report.samples[n][MAINLOOP]] for n in p50}
    v = paired_speedup(med["ref"], med["slow"],
                       threshold_percent=report_threshold(report).percent)
    expect = (f"{fmt.pct((p50['ref'] / p50['slow'] - 1) * 100)} "
              f"{fmt.ci(v.ci_low_percent, v.ci_high_percent)}")
    assert row.mainloop == expect
    assert row_of(None, "slow", "x; build failed: e").verdict == fmt.DASH
    assert row_of(report, "gone", "x").verdict == "not run"


@needs_compiler
def test_a_failing_build_leaves_its_variant_out_and_the_others_build(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], tiny_build: tuple[Path, Path, object]) -> None:
    """The bad tree's build fails for real; the good one is the session's tiny build, found in
    the cache this test seeds (its own first build is test_build_cache's)."""
    from sagetui.cli.build import build_sources
    from sagetui.core.config import RunConfig, Shape, VariantSpec

    good = write_tree(tmp_path / "good")
    bad = write_tree(tmp_path / "bad", torch=True)  # ninja's steps, then the compiler's error
    set_qattn_source(bad, "int answer() { return 89 }\n")
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "8.9")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    seed_build_cache(tiny_build, tmp_path / "xdg")
    config = RunConfig(shape=Shape(heads=2, q_len=256, head_dim=64), baseline="bad", variants=[
        VariantSpec(name="bad", backend="sage2-sm89", path=f"src:{bad}"),
        VariantSpec(name="good", backend="sage2-sm89", path=f"src:{good}")])
    failed: dict[str, LeftOut] = {}
    out = build_sources(config, failed)
    assert list(failed) == ["bad"] and failed["bad"].spec == f"sage2-sm89@src:{bad}"
    assert "failed" in failed["bad"].why
    assert [v.name for v in out.variants] == ["good"] and out.baseline is None
    assert out.variants[0].build is not None and out.variants[0].source is None
    err = capsys.readouterr().err
    assert "pybind_sm89.cpp" in err and "error" in err and "bad is left out" in err
    assert "step " in err and "good: cache hit" in err
    with pytest.raises(BuildFailed):  # none left: the last failure is raised
        build_sources(config.model_copy(update={"variants": config.variants[:1],
                                                "baseline": None}), {})


@needs_compiler
def test_a_run_whose_source_variant_failed_to_build_is_partial_and_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`sagetui run` end to end on the CPU: the bad tree's build fails, the reference runs, and
    the report is never kinder than that: partial, the left-out variant in it as failed with
    the build's failure, exit 1, and `check` passes."""
    import json
    import subprocess
    import sys

    bad = write_tree(tmp_path / "bad")
    set_qattn_source(bad, "int answer() { return 89 }\n")
    env = {**os.environ, "TORCH_CUDA_ARCH_LIST": "8.9", "XDG_CACHE_HOME": str(tmp_path / "xdg"),
           "XDG_STATE_HOME": str(tmp_path / "state")}
    out_json = tmp_path / "run.json"
    run = subprocess.run([sys.executable, "-m", "sagetui", "run", "--variant", "ref=reference",
                          "--variant", f"bad=sage2-sm89@src:{bad}", "--heads", "2", "--q-len",
                          "128", "--head-dim", "32", "--rounds", "2", "--iterations", "2",
                          "--device", "cpu", "--json", str(out_json)],
                         capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 1, run.stderr
    report = json.loads(out_json.read_text())
    assert report["status"] == "partial"
    assert any("variant bad never ran: its build failed" in d for d in report["status_detail"])
    bad_v = next(v for v in report["variants"] if v["name"] == "bad")
    assert bad_v["status"] == "failed" and bad_v["error"].startswith("its build failed: ")
    assert bad_v["spec"] == f"sage2-sm89@src:{bad}"
    checked = sagetui_here("check", out_json, cwd=tmp_path)  # its output alone: in this process
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_watch_without_a_source_variant_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from sagetui.cli.main import main

    assert main(["--watch", "--backend", "reference"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--watch needs a variant built from a tree" in err


@needs_compiler
def test_sweeps_and_workloads_with_a_failed_build_are_partial_and_say_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli_here) -> None:
    """`sagetui sweep` (one runner, and two with --gpus cpu:2) and `sagetui run --workload`
    leave the variant out as `run` does: the others measured, the report partial with the
    variant failed, exit 1, and `check` passes (each said complete, exit 0, before)."""
    from sagetui.core.check.report import check_report

    from .test_capture import captured

    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "8.9")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    bad = write_tree(tmp_path / "bad")
    set_qattn_source(bad, "int answer() { return 89 }\n")
    variants = ["--variant", "ref=reference", "--variant", f"bad=sage2-sm89@src:{bad}"]
    measure = ["--warmup", "1", "--rounds", "2", "--iterations", "2", "--quiet"]
    captured(tmp_path / "cap", steps=1, calls="0-1")
    runs = {"sweep": cli_here("sweep", *variants, "--q-len", "64,128", "--heads", "2",
                              "--head-dim", "32", *measure, "--device", "cpu", "--json",
                              "sweep.json"),
            "pool": cli_here("sweep", *variants, "--q-len", "64,128", "--heads", "2",
                             "--head-dim", "32", *measure, "--gpus", "cpu:2", "--json",
                             "pool.json"),
            "workload": cli_here("run", "--workload", tmp_path / "cap", *variants, *measure,
                                 "--device", "cpu", "--json", "workload.json")}
    for name, out in runs.items():
        assert out.returncode == 1, (name, out.stderr)
        report = load_report(tmp_path / f"{name}.json")
        assert report.status == "partial", name
        bad_v = report.variant("bad")
        assert bad_v is not None and bad_v.status == "failed", name
        assert bad_v.error is not None and bad_v.error.startswith("its build failed: ")
        assert any("variant bad never ran" in d for d in report.status_detail or []), name
        assert check_report(report) == [], name
