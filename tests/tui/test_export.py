"""Exports from the console: JSON, CSV, Markdown, SVG; asking before overwriting; a failed
write that says why and keeps the data."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from sagetui.core.report.io import load_report
from sagetui.tui import export_contents
from sagetui.tui.modals import ConfirmScreen, PathPromptScreen

from .conftest import SYNTHETIC, aio, screen_text, settle, viewer

STEM = "synthetic_report-sagetui"


async def _export(pilot, app, key: str, path: Path | None = None) -> None:
    await pilot.press(key)
    await pilot.pause()
    assert isinstance(app.screen, PathPromptScreen)
    if path is not None:
        app.screen.query_one("Input").value = str(path)
    await pilot.press("enter")
    await pilot.pause()


def _messages(app) -> list[str]:
    return [n.message for n in app._notifications]


@aio
async def test_each_export_writes_its_file(tmp_path: Path) -> None:
    app = viewer(SYNTHETIC, export_dir=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        for key in ("e", "c", "m", "s"):
            await _export(pilot, app, key)
        original = load_report(SYNTHETIC)
        report = load_report(tmp_path / f"{STEM}.json")
        assert report == original  # every field kept
        csv = (tmp_path / f"{STEM}.csv").read_text().splitlines()
        assert csv[0] == "variant,phase,round (from 1),iteration (from 1),seconds"
        assert len(csv) - 1 == sum(len(r) for v in original.samples.values()
                                   for ph in v.values() for r in ph)
        md = (tmp_path / f"{STEM}.md").read_text()
        assert "| fast |" in md and "FASTER" in md
        svg = (tmp_path / f"{STEM}.svg").read_text()
        assert svg.lstrip().startswith("<svg") and "synthetic_report.json" in svg
        assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp left
        messages = _messages(app)
        assert any(str(tmp_path / f"{STEM}.csv") in m for m in messages)  # says where


@aio
async def test_overwrite_is_asked_and_both_answers_are_honoured(tmp_path: Path) -> None:
    target = tmp_path / f"{STEM}.json"
    target.write_text("keep me")
    app = viewer(SYNTHETIC, export_dir=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await _export(pilot, app, "e")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await pilot.pause()
        assert target.read_text() == "keep me"
        assert any("was kept" in m for m in _messages(app))
        await _export(pilot, app, "e")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await pilot.pause()
        assert load_report(target) == load_report(SYNTHETIC)


@aio
async def test_a_failed_write_says_why_and_keeps_the_data(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    app = viewer(SYNTHETIC, export_dir=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await _export(pilot, app, "e", tmp_path / "no-such-dir" / "r.json")
        assert app.is_running
        errors = [n.message for n in app._notifications if n.severity == "error"]
        assert errors and "directory does not exist" in errors[-1]
        assert "Nothing is lost" in errors[-1]

        def disk_full(*args: object, **kwargs: object) -> Path:
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(export_contents, "atomic_write_text", disk_full)
        await _export(pilot, app, "c")
        errors = [n.message for n in app._notifications if n.severity == "error"]
        assert "the disk is full" in errors[-1]
        monkeypatch.undo()
        if os.geteuid() != 0:  # root writes into a read-only directory anyway
            ro = tmp_path / "ro"
            ro.mkdir()
            ro.chmod(0o500)
            await _export(pilot, app, "m", ro / "r.md")
            errors = [n.message for n in app._notifications if n.severity == "error"]
            assert "permission denied" in errors[-1]
        await _export(pilot, app, "e")  # the data is still there: a good path works
        assert load_report(tmp_path / f"{STEM}.json") == load_report(SYNTHETIC)


@aio
async def test_after_b_the_exports_hold_the_verdicts_the_screen_shows(tmp_path: Path) -> None:
    """`b` after a run made another variant the baseline on screen, while `e` and `m` wrote
    the run's first baseline's verdicts without a word. They now hold the new baseline's, the
    report `check` passes; a saved report's exports say plainly whose verdicts they hold."""
    from sagetui.core.check.report import check_report
    from sagetui.tui.app import SageTUI

    from .conftest import THEME, tiny_config, wait_for

    app = SageTUI(config=tiny_config(rounds=3, variants=2), theme_name=THEME,  # type: ignore[arg-type]
                  recovery_path=tmp_path / "recovery.json", export_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("r")
        await wait_for(pilot, lambda: app.final_report is not None, what="the run's end")
        await settle(pilot, app)
        assert app.final_report.baseline == "ref"
        await pilot.press("v")
        assert app.selected == "slow"
        await pilot.press("b")
        await settle(pilot, app)
        shown = app.data.model.variants["ref"].verdict
        assert app.data.baseline == "slow" and shown is not None
        await _export(pilot, app, "e", tmp_path / "after-b.json")
        await _export(pilot, app, "m", tmp_path / "after-b.md")
        report = load_report(tmp_path / "after-b.json")
        assert report.baseline == "slow" and report.status == "complete"
        ref = report.variant("ref")
        assert ref.verdict is not None and ref.verdict.state == shown["state"]
        assert ref.verdict.estimate_percent == pytest.approx(shown["estimate_percent"])
        assert report.variant("slow").verdict is None  # the baseline has none
        assert check_report(report) == []
        md = (tmp_path / "after-b.md").read_text()
        assert "- baseline `slow`;" in md and f"| {ref.verdict.state} " in md, md
        assert app.exports.exported(app.final_report)  # quitting does not ask again
    saved = viewer(tmp_path / "after-b.json", export_dir=tmp_path)
    async with saved.run_test(size=(160, 48)) as pilot:
        await settle(pilot, saved)
        for _ in range(2):
            if saved.selected != "ref":
                await pilot.press("v")
        assert saved.selected == "ref"
        await pilot.press("b")
        await settle(pilot, saved)
        await pilot.press("m")
        await pilot.pause()
        prompt = saved.screen
        assert isinstance(prompt, PathPromptScreen)
        assert prompt.title_text == (
            "Export the Markdown summary (its verdicts are against slow, the report's baseline; "
            "the screen shows them against ref) to:")
        said = screen_text(saved)  # wrapped in the dialog, whole
        assert "the report's baseline; the screen shows them against" in said
        assert "  ref) to:  " in said
