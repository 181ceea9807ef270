"""The console's source variants and its watch (key w), driven by Textual's Pilot.

What is real: the tree (tests/build_tree.py, a tiny tree that looks like a SageAttention
checkout), its builds in the console's worker (its setup.py, the compiler, the cache; torch's
BuildExtension and ninja where the build's steps are looked at), watchfiles noticing a real
edit, the diff against the previous build, and a run in a real runner process on the CPU. What
is not: a CPU cannot run the built sm89 module, so the flow's `run_as` runs the rebuilt variant
as the reference backend (slowed, `slowdown`), so the verdict and the main-loop delta in the
history come from a real CPU run that the watch's rebuild triggered."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sagetui.core.config import RunConfig, VariantSpec
from sagetui.core.report.io import load_report
from sagetui.tui.app import SageTUI
from sagetui.tui.help_screen import HelpScreen
from sagetui.tui.modals import PathPromptScreen

from ..build_tree import MODULE, set_qattn_source, write_tree
from ..conftest import seed_build_cache
from .conftest import THEME, aio, settle, tiny_config, wait_for
from .test_calibration_console import logged

pytestmark = pytest.mark.skipif(shutil.which("c++") is None or shutil.which("ninja") is None,
                                reason="needs a C++ compiler and ninja")
BUILD_S = 300  # a build of the tiny tree on a loaded two-core machine: tens of seconds


def run_as_reference(config: RunConfig) -> RunConfig:
    return config.model_copy(update={"variants": [
        VariantSpec(name=v.name, backend="reference", options={"slowdown": 1.5})
        if v.build is not None else v for v in config.variants]})


@aio
async def test_r_builds_then_w_rebuilds_on_a_change_and_keeps_the_history(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        tiny_build: tuple[Path, Path, object]) -> None:
    """r's build of the unchanged tree is the session's tiny build, found in the cache this
    test seeds; the watch's rebuild after the edit is a real one (the tree's plain kind: ninja's
    steps in the Log are the next test's)."""
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "8.9")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    seed_build_cache(tiny_build, tmp_path / "xdg")
    tree = write_tree(tmp_path / "tree")
    base = tiny_config()
    config = base.model_copy(update={"variants": [
        *base.variants, VariantSpec(name="mine", backend="sage2-sm89", path=f"src:{tree}")]})
    app = SageTUI(config=config, theme_name=THEME, recovery_path=tmp_path / "r.json",
                  export_dir=tmp_path)
    flow = app.sources_flow
    flow.run_as = run_as_reference
    lines = logged(app)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.press("r")  # builds first (the worker), then runs
        await wait_for(pilot, lambda: app.running or flow.built, timeout=BUILD_S,
                       what="the first build")
        await wait_for(pilot, lambda: not app.running and not flow.building, timeout=120,
                       what="the first run")
        assert "variant mine: cache hit" in "\n".join(lines)
        assert app.data.status == "complete" and set(app.data.variants) == {"ref", "mine"}
        assert flow.history == []  # r's build is not the watch's
        await pilot.press("w")
        await wait_for(pilot, lambda: flow._stop is not None and flow.tree_watch.ready.is_set(),
                       what="the watch")
        set_qattn_source(tree, MODULE.format(value=89) + "// tuned\n")  # one edit, seen once
        await wait_for(pilot, lambda: len(flow.history) == 1, timeout=BUILD_S + 120,
                       what="the rebuild and its run")
        await pilot.press("w")  # stopped: settle waits on every worker, the watch's too
        assert flow._stop is None
        await settle(pilot, app)
        assert len(flow.history) == 1 and not flow.pending  # the one edit, rebuilt once
        log = "\n".join(lines)  # the rebuild, then its time
        assert "variant mine: built in" in log.split("variant mine: cache hit", 1)[1]
        row = flow.history[0]
        assert row.variant == "mine" and row.change.startswith("pybind_sm89.cpp +")
        assert row.change.endswith(" -0")
        assert row.verdict.split()[0] in ("SLOWER", "INCONCLUSIVE", "SAME", "FASTER")
        assert "[" in row.mainloop  # the phase's p50 delta with its interval
        table = app.query_one("#watch-history")
        assert table.row_count == 1 and table.get_row_at(0)[1] == "mine"  # type: ignore[attr-defined]
        assert app.data.status == "complete"


@aio
async def test_a_source_variant_that_fails_to_build_leaves_the_consoles_run_partial(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The console's report is never kinder than `sagetui run`'s: r builds the tree, which does
    not compile; the reference runs; the run ends partial, the header says so, and the report
    (what e exports) lists the variant as never run with the build's failure; a new
    configuration after it runs without it, and so does a calibration's A/A run. The tree is
    the torch kind: ninja's steps stream into the Log before the compiler fails."""
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "8.9")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # no calibration stored
    bad = write_tree(tmp_path / "bad", torch=True)
    set_qattn_source(bad, "int answer() { return 89 }\n")
    base = tiny_config()
    config = base.model_copy(update={"variants": [
        *base.variants, VariantSpec(name="bad", backend="sage2-sm89", path=f"src:{bad}")]})
    app = SageTUI(config=config, theme_name=THEME, recovery_path=tmp_path / "r.json",
                  export_dir=tmp_path)
    lines = logged(app)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        await pilot.press("r")
        await wait_for(pilot, lambda: app.run_control.final_report is not None,
                       timeout=BUILD_S, what="the build and the run")
        await settle(pilot, app)
        report = app.run_control.final_report
        assert report is not None and report.status == "partial"
        assert app.data.status == "partial"  # the header's, from the session's Finished
        bad_v = report.variant("bad")
        assert bad_v is not None and bad_v.status == "failed"
        assert bad_v.error is not None and bad_v.error.startswith("its build failed: ")
        assert any("variant bad never ran" in d for d in report.status_detail or [])
        assert report.variant("ref") is not None and report.variant("ref").status != "failed"  # type: ignore[union-attr]
        assert any(ln.startswith("build: _qattn_sm89: step 1/") for ln in lines), lines
        await pilot.press("e")  # the export is the same report
        await wait_for(pilot, lambda: isinstance(app.screen, PathPromptScreen), what="e's prompt")
        target = tmp_path / "exported.json"
        app.screen.query_one("Input").value = str(target)
        await pilot.press("enter")
        await wait_for(pilot, target.exists, what="the export")
        exported = load_report(target)
        assert exported.status == "partial" and exported.variant("bad").status == "failed"  # type: ignore[union-attr]
        await pilot.press("a")  # a calibration: an A/A run of the baseline alone
        await wait_for(pilot, lambda: app.run_control.final_report not in (None, report)
                       and not app.running, timeout=BUILD_S, what="the calibration")
        aa = app.run_control.final_report
        assert aa is not None and [v.name for v in aa.variants or []] == ["ref", "ref-again"]
        assert aa.status == "complete"  # not partial over a variant it never meant to run
        # a new configuration (what the run editor's apply calls) has no failed build: its
        # run is complete, not partial over the replaced configuration's variant
        app.run_control.reconfigure(tiny_config())
        await settle(pilot, app)
        await pilot.press("r")
        await wait_for(pilot, lambda: app.run_control.final_report is not None,
                       timeout=BUILD_S, what="the run of the new configuration")
        again = app.run_control.final_report
        assert again is not None and again.status == "complete" and again.variant("bad") is None
