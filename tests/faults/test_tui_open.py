"""The console: opening a bad report from inside it (key `o`, a path, enter) shows the file's
one-line error and keeps the console up, with what it already showed, for every file of the
corpus and the ones made at run time; a good report opens after all of them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from .conftest import SAMPLE_000, SAMPLE_001
from .test_bad_reports import _cases

# opened through the keys and the prompt, as a user does; the rest through the prompt's
# callback directly (a prompt round-trip costs half a second of Textual's time)
BY_KEYS = {"unknown_field_escape_codes.json", "nan_token.json", "binary_garbage.bin",
           "a_directory.json", "huge_samples.json", "empty.json", "report.json", "zero"}


def test_every_bad_report_opened_in_the_console_is_refused_and_it_stays_up(tmp_path):
    from sagetui.core.report.io import load_report
    from sagetui.tui.app import SageTUI
    from sagetui.tui.modals import PathPromptScreen

    cases = _cases(tmp_path)
    assert {p.name for p, _ in cases} >= BY_KEYS

    async def scenario() -> None:
        app = SageTUI(reports=[(str(SAMPLE_001), load_report(SAMPLE_001))],
                      theme_name="sage-dark")

        async def open_by_keys(path: Path) -> None:
            await pilot.press("o")
            await pilot.pause()
            assert isinstance(app.screen, PathPromptScreen)
            app.screen.query_one("Input").value = str(path)  # type: ignore[attr-defined]
            await pilot.press("enter")
            await pilot.pause()

        async with app.run_test(size=(140, 40)) as pilot:
            await pilot.pause()
            for path, fragment in cases:
                if path.name in BY_KEYS:
                    await open_by_keys(path)
                else:
                    app._open_report(str(path))
                    await pilot.pause()
                assert app.is_running and not isinstance(app.screen, PathPromptScreen)
                assert len(app.sources) == 1, path  # nothing half-opened
                note = list(app._notifications)[-1]
                assert note.severity == "error" and str(path) in note.message, note.message
                assert fragment in note.message, (fragment, note.message)
                app.clear_notifications()  # toasts pile up otherwise
            await pilot.pause()
            await open_by_keys(SAMPLE_000)
            await app.workers.wait_for_complete()
            assert len(app.sources) == 2 and app.data.label == Path(SAMPLE_000).name

    asyncio.run(scenario())


@pytest.mark.parametrize("name", ["[/x]",
                                  "\x1b[2J[bold red]b"])
def test_a_report_with_markup_or_escape_codes_in_its_names_opens(name, tmp_path, fresh_report):
    from sagetui.core.report.io import load_report
    from sagetui.tui.app import SageTUI

    d = json.loads(json.dumps(fresh_report))
    d["variants"][0]["name"] = d["baseline"] = name
    d["samples"][name] = d["samples"].pop("a")
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(d))

    async def scenario() -> None:
        app = SageTUI(reports=[(str(path), load_report(path))], theme_name="sage-dark")
        async with app.run_test(size=(140, 40)) as pilot:
            await pilot.pause()
            await app.workers.wait_for_complete()
            for key in "1256":
                await pilot.press(key)
                await pilot.pause()
            assert app.is_running

    asyncio.run(scenario())
