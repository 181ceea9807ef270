"""The run editor (docs/console.md, "The run editor"): E or the palette opens it; it edits the
next run as `sagetui run`'s options and hands them to the CLI's own parser and rules (the real
builder, cli/main.run_config): a refused value is the CLI's very line, inline, the form open; a
valid edit is what the next run measures. A real runner on the CPU (the reference backend:
`sdpa` needs CUDA here, so the second variant is the reference one slowed down)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from textual.widgets import Input

from sagetui.cli.main import main, run_config
from sagetui.tui.app import SageTUI
from sagetui.tui.edit_flow import STOP_FIRST
from sagetui.tui.modals import ChoiceScreen, ConfirmScreen, PathPromptScreen
from sagetui.tui.run_editor import RunEditorScreen, VariantList

from .conftest import THEME, aio, palette, screen_text, settle, tiny_config, viewer, wait_for
from .test_keep_result import finished_run

SLOW = "slow=reference[slowdown=1.5]"


def console(tmp_path: Path, build: bool = True, **config: object) -> SageTUI:
    return SageTUI(config=tiny_config(**config), theme_name=THEME,  # type: ignore[arg-type]
                   recovery_path=tmp_path / "recovery.json", export_dir=tmp_path,
                   build_config=run_config if build else None)


def editor(app: SageTUI) -> RunEditorScreen:
    assert isinstance(app.screen, RunEditorScreen), type(app.screen).__name__
    return app.screen


def problem(app: SageTUI) -> str:
    return str(editor(app).query_one("#ed-problem").render())


async def open_editor(pilot, app: SageTUI) -> RunEditorScreen:
    await pilot.press("E")
    await pilot.pause()
    return editor(app)


async def type_into(pilot, app: SageTUI, field: str, text: str) -> None:
    box = editor(app).query_one(f"#{field}")
    box.focus()
    box.value = ""  # type: ignore[attr-defined]
    await pilot.press(*text)


async def add_variant(pilot, app: SageTUI, text: str) -> None:
    await type_into(pilot, app, "ed-new", text)
    await pilot.press("enter")
    await pilot.pause()


async def applied(pilot, app: SageTUI) -> None:
    await app.workers.wait_for_complete()
    await wait_for(pilot, lambda: not isinstance(app.screen, RunEditorScreen), timeout=30,
                   what="the editor to close")
    await settle(pilot, app)


def cli_error_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """What `sagetui run ARGV` itself prints for a refused argument (exit status 2)."""
    capsys.readouterr()
    try:
        code = main(["run", *argv])
    except SystemExit as exc:  # argparse's refusals exit from the parser
        code = int(exc.code or 0)
    assert code == 2
    return capsys.readouterr().err.strip()


@aio
async def test_the_editor_opens_from_its_footer_key_and_from_the_palette(
        tmp_path: Path) -> None:
    app = console(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        assert "E Edit" in screen_text(app).splitlines()[-1]
        await open_editor(pilot, app)
        assert "Edit the next run" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, RunEditorScreen)
        main_screen = app.screen_stack[0]
        for word in ("shape", "rounds", "variant", "dtype", "configure"):
            await palette(pilot, app, word)
            assert "Edit the run" in screen_text(app), word
            for _ in range(2):  # escape clears the search, then closes
                if app.screen is not main_screen:
                    await pilot.press("escape")
                    await pilot.pause()
            await wait_for(pilot, lambda: app.screen is main_screen, what="the palette closed")
        await palette(pilot, app, "shape")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunEditorScreen),
                       what="the editor from the palette")


REFUSED = [  # (field, text): each a value `sagetui run` refuses
    ("ed--q-len", "-3"),  # negative q len
    ("ed--q-len", "x"),  # a q len that is no number
    ("ed-new", "mine=nosuch"),  # an unknown backend
    ("ed-new", "mine=sage2-sm89@/no/such/build/_qattn_sm89.so"),  # a build that is not there
]


def test_a_refused_value_shows_the_clis_own_line_and_keeps_the_form_open(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each refused value in turn in one console (escape drops each edit before the next):
    the CLI's very line, in the form, which stays open with nothing applied."""
    @aio
    async def check() -> list[tuple[list[str], str]]:
        app = console(tmp_path)
        seen = []
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot, app)
            before = app.config
            fresh: list[str] | None = None
            for field, text in REFUSED:
                await open_editor(pilot, app)
                untouched = editor(app).argv()
                fresh = fresh or untouched
                assert untouched == fresh, text  # afresh: no edit of the case before
                if field == "ed-new":
                    await add_variant(pilot, app, text)
                else:
                    await type_into(pilot, app, field, text)
                argv = editor(app).argv()
                await pilot.press("ctrl+s")
                await app.workers.wait_for_complete()
                await pilot.pause()
                shown = problem(app)
                assert isinstance(app.screen, RunEditorScreen), text  # still open
                assert app.config is before, text  # nothing applied
                assert " ".join(shown.split()[:4]) in screen_text(app), text  # in the form
                seen.append((argv, shown))
                await pilot.press("escape")  # the edit dropped: the next starts afresh
                await wait_for(pilot, lambda: not isinstance(app.screen, RunEditorScreen),
                               what="the editor closed")
        return seen

    seen = check()
    assert len(seen) == len(REFUSED)
    for (_, text), (argv, shown) in zip(REFUSED, seen, strict=True):
        assert shown == cli_error_line(argv, capsys), text


@aio
async def test_a_valid_edit_is_what_the_next_run_measures(tmp_path: Path) -> None:
    app = console(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        await open_editor(pilot, app)
        await add_variant(pilot, app, SLOW)
        await type_into(pilot, app, "ed--rounds", "3")
        await type_into(pilot, app, "ed--iterations", "2")
        await type_into(pilot, app, "ed--q-len", "128")
        await pilot.pause()
        shown = str(editor(app).query_one("#ed-command").render())
        words = shlex.split(shown)
        assert words[:2] == ["sagetui", "run"]
        expected = run_config(words[2:])  # what `sagetui run` accepts, parsed back
        assert "sagetui run --variant ref=reference" in screen_text(app)
        await pilot.press("enter")  # in the q-len field: apply
        await applied(pilot, app)
        config = app.config
        assert config == expected
        assert [v.name for v in config.variants] == ["ref", "slow"]
        assert config.shape.q_len == 128 and config.rounds == 3 and config.iterations == 2
        await pilot.press("6")  # the Log tab (a hidden RichLog holds its lines back)
        await settle(pilot, app)
        log = squeezed(log_text(app))  # the Log wraps long lines
        assert squeezed(f"the next run: {shown}") in log
        assert squeezed("ready: reference, reference[slowdown=1.5] at 1x128x2x64") in log
        assert set(app.data.variants) == {"ref", "slow"}  # pending, for t and b
        assert all(v.status == "pending" for v in app.data.variants.values())
        await finished_run(pilot, app)
        report = app.final_report
        assert report is not None and report.status == "complete"
        assert report.rounds == 3 and report.config["shape"]["q_len"] == 128
        for name in ("ref", "slow"):
            assert len(report.samples[name]["total"]) == 3
            assert all(len(r) == 2 for r in report.samples[name]["total"])


def log_text(app: SageTUI) -> str:
    from textual.widgets import RichLog

    return "\n".join(line.text for line in app.query_one("#log-view", RichLog).lines)


def squeezed(text: str) -> str:
    return "".join(text.split())


@aio
async def test_toggles_and_baseline_chosen_in_the_editor_reach_the_next_run(
        tmp_path: Path) -> None:
    app = console(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await open_editor(pilot, app)
        await add_variant(pilot, app, SLOW)
        table = editor(app).query_one(VariantList)
        table.focus()
        table.move_cursor(row=1)
        await pilot.press("b")  # slow: the baseline
        table.move_cursor(row=0)
        await pilot.press("t")  # ref: off
        await pilot.pause()
        assert "--baseline slow" in editor(app).command()
        await pilot.press("ctrl+s")
        await applied(pilot, app)
        data = app.data
        assert app.config is not None and app.config.baseline == "slow"
        assert data.baseline == "slow"
        assert not data.is_enabled("ref") and data.is_enabled("slow")
        await finished_run(pilot, app)  # the run measures only what is on
        report = app.final_report
        assert report is not None and report.baseline == "slow"
        assert not report.samples.get("ref", {}).get("total")
        assert len(report.samples["slow"]["total"]) == 2


@aio
async def test_during_a_run_the_editor_says_stop_first(tmp_path: Path) -> None:
    app = console(tmp_path, rounds=500, iterations=20)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        await open_editor(pilot, app)  # opened between runs ...
        await type_into(pilot, app, "ed--rounds", "3")
        # ... and a run started under it: no key can (the editor holds them), the guard holds
        app.run_control.start()
        await wait_for(pilot, lambda: app.running, timeout=10, what="the run")
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert problem(app) == STOP_FIRST and isinstance(app.screen, RunEditorScreen)
        assert app.config is not None and app.config.rounds == 500
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("E")  # during the run it does not open
        await pilot.pause()
        assert not isinstance(app.screen, RunEditorScreen)
        assert STOP_FIRST in [n.message for n in app._notifications]
        await pilot.press("r")
        await wait_for(pilot, lambda: not app.running, timeout=15, what="the stop")


@aio
async def test_without_a_builder_the_editor_says_it_cannot_run(tmp_path: Path) -> None:
    app = console(tmp_path, build=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await open_editor(pilot, app)
        assert "cannot run" in problem(app)
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, RunEditorScreen) and "cannot run" in problem(app)
    view = viewer(Path(__file__).with_name("data") / "synthetic_report.json")
    async with view.run_test(size=(120, 40)) as pilot:
        await settle(pilot, view)
        await pilot.press("E")  # not bound in view mode (nor shown in the footer)
        await pilot.pause()
        assert not isinstance(view.screen, RunEditorScreen)
        await pilot.press("ctrl+p", *"configure")  # nor offered in the palette: it says so
        await wait_for(pilot, lambda: "No matches found" in screen_text(view),
                       what="the palette's answer")
        assert "Edit the run" not in screen_text(view)
        await pilot.press("escape")
        await pilot.pause()
        view.action_edit_run()  # called directly, nothing else offers it here: it explains
        await pilot.pause()
        assert not isinstance(view.screen, RunEditorScreen)
        assert any("no run to edit" in n.message for n in view._notifications)


def test_an_untouched_form_gives_the_configurations_own_command_line() -> None:
    """Opening the editor and applying changes nothing (the inverse and the form agree)."""
    from sagetui.core.run_argv import config_argv
    from sagetui.tui.edit_model import EditModel

    for config in (run_config([]), tiny_config(variants=2),
                   run_config(["--q-len", "300", "--rounds", "2", "--cold"])):
        model = EditModel(config)
        assert model.argv({}) == config_argv(config)
        assert run_config(model.argv({})) == config


def test_an_untouched_form_keeps_every_field() -> None:
    """Each option's field changed alone (tests/test_run_argv.py's values): the form's command
    line is the configuration's own, and builds it again."""
    from sagetui.core.run_argv import config_argv
    from sagetui.tui.edit_model import EditModel

    from ..test_run_argv import BASES, _fields, _with

    for field, (_, values) in _fields().items():
        for base in BASES.values():
            try:
                config = _with(base(), {field: values[-1]})
            except ValueError:  # a baseline the default's variants do not have
                continue
            argv = EditModel(config).argv({})
            assert argv == config_argv(config), field
            assert run_config(argv) == config, field


def test_the_form_has_a_place_for_every_option_the_table_labels() -> None:
    from sagetui.tui import run_editor
    from sagetui.tui.edit_model import FIELDS

    placed = [flag for flag, *_ in (*run_editor.SHAPE, *run_editor.MEASURE,
                                    *run_editor.CHOICES, *run_editor.CHECKS)]
    assert sorted([*placed, run_editor.INPUTS]) == sorted(FIELDS)



def test_the_ready_line_says_what_a_gpu_node_would_change() -> None:
    """After an edit gives a shape but no backend, the greeting no longer promises the
    reference shape."""
    from sagetui.core.eventlog import LogLine
    from sagetui.tui.run_control import RunControl
    from sagetui.tui.source import live_source

    lines: list[str] = []

    class View:
        def write_log(self, line: LogLine) -> None:
            lines.append(line.text)

    for argv, said in (([], "(auto: a GPU node upgrades it to SageAttention at the reference "
                            "shape)"),
                       (["--q-len", "256"], "(auto: a GPU node upgrades it to SageAttention)"),
                       (["--backend", "reference"], "(auto: a GPU node runs it at the reference "
                                                    "shape)"),
                       (["--backend", "reference", "--q-len", "256"], "iterations; press r")):
        config = run_config(argv)
        lines.clear()
        RunControl(None, View(), config, live_source(config), None).greet()  # type: ignore
        assert len(lines) == 1 and said in lines[0], argv


async def edit_then_export_first(pilot, app: SageTUI, rounds: str) -> None:
    """E over the unexported result, rounds changed, enter, then "Export JSON first"."""
    await open_editor(pilot, app)
    await type_into(pilot, app, "ed--rounds", rounds)
    await pilot.press("enter")
    await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen), timeout=30,
                   what="the question")
    await pilot.press("e")
    await wait_for(pilot, lambda: isinstance(app.screen, PathPromptScreen), timeout=10,
                   what="the path prompt")


async def back_in_the_editor(pilot, app: SageTUI, rounds: str) -> None:
    await wait_for(pilot, lambda: isinstance(app.screen, RunEditorScreen), timeout=10,
                   what="the editor again")
    assert f"--rounds {rounds}" in editor(app).command()
    assert app.config is not None and app.config.rounds == 2  # not applied yet
    said = " ".join(n.message for n in app._notifications)
    assert "not applied" in said and "back in the editor" in said


@aio
async def test_over_an_unexported_result_it_asks_and_export_first_keeps_the_edit(
        tmp_path: Path) -> None:
    """One finished run, unexported, under three questions in turn (each but the last leaves
    it as it was; the toasts are cleared between them, so each says its own):

    - Escape at the path prompt, or keeping the file that is there: the edit is not lost
      either; escape in the editor then drops it, as always.
    - An edit applied over the result asks first; escape stays (the result still shown,
      nothing applied).
    - Once, "Export JSON first" whose write fails (the path is a directory) threw the edit
      away while the toast said nothing was lost. The edit comes back in the editor, and
      applying it asks again; yes replaces the result with the edit."""
    app = console(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await finished_run(pilot, app)
        result = app.final_report
        assert result is not None
        # abandoned: escape at the path prompt, then "keep it" at the overwrite question
        await edit_then_export_first(pilot, app, "7")
        await pilot.press("escape")
        await back_in_the_editor(pilot, app, "7")
        await pilot.press("escape")
        await settle(pilot, app)
        existing = tmp_path / "there.json"
        existing.write_text("{}")
        app.clear_notifications()
        await edit_then_export_first(pilot, app, "6")
        app.screen.query_one("#path", Input).value = str(existing)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), timeout=10,
                       what="overwrite?")
        await pilot.press("n")  # keep it: nothing written
        await back_in_the_editor(pilot, app, "6")
        assert existing.read_text() == "{}"
        await pilot.press("escape")  # the edit dropped, as always
        await settle(pilot, app)
        assert not isinstance(app.screen, RunEditorScreen)
        assert app.final_report is result and app.config.rounds == 2  # type: ignore[union-attr]
        # asked before replacing it: escape stays
        await open_editor(pilot, app)
        await type_into(pilot, app, "ed--rounds", "4")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen), timeout=30,
                       what="the question")
        assert "not exported" in app.screen.question  # type: ignore[attr-defined]
        await pilot.press("escape")
        await settle(pilot, app)
        assert app.final_report is result and app.config.rounds == 2  # type: ignore
        assert app.data.rounds_done == 2
        # a failed export first: the edit comes back, applying it asks again, yes applies it
        (tmp_path / "a-directory").mkdir()
        app.clear_notifications()
        await edit_then_export_first(pilot, app, "4")
        path = app.screen.query_one("#path", Input)
        path.value = str(tmp_path / "a-directory")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), timeout=10,
                       what="overwrite?")
        await pilot.press("y")  # overwrite: the write fails, the directory is no file
        await back_in_the_editor(pilot, app, "4")
        assert any("Could not write" in n.message for n in app._notifications)
        assert app.final_report is result
        await pilot.press("ctrl+s")  # applied again: asked again, and this time it runs
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen), timeout=30,
                       what="the question again")
        assert "not exported" in app.screen.question  # type: ignore[attr-defined]
        await pilot.press("y")
        await applied(pilot, app)
        assert app.config is not None and app.config.rounds == 4
        assert app.final_report is None and app.data.rounds_done == 0
        assert app.data.model.config.rounds == 4
