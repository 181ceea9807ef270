"""Reports side by side: the table core/compare builds from each saved source's report (the
same columns and cells `sagetui compare` prints), its legend and notes, and, under it, the
reports' main-loop profiles and their profile diff. The comparison derives verdicts (scipy),
so it is built in a thread worker, never on the UI thread."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.dom import DOMNode
from textual.widgets import Static

from sagetui.core.compare.comparison import Comparison, compare_reports
from sagetui.core.compare.facts import NotComparable
from sagetui.core.compare.profiles import profile_diffs
from sagetui.core.format import short_phase
from sagetui.tui.fitted_tables import comparison_table
from sagetui.tui.source import Source
from sagetui.tui.widgets.mainloop_panel import compare_text, diff_text


def sync_compare(root: DOMNode, sources: list[Source]) -> None:
    """The Compare tab under `root`: the saved reports' comparison (built off the UI thread,
    then shown) and their main loops' profiles (the panel shown only when they have some)."""
    saved = [s for s in sources if not s.live and s.report is not None]
    reports = [(s.label, s.report) for s in saved if s.report is not None]
    table = root.query_one(CompareTable)
    table.generation += 1
    generation = table.generation

    def build() -> None:
        try:
            result: Comparison | str = compare_reports(reports)
        except NotComparable as exc:
            result = str(exc)
        root.app.call_from_thread(_show, root, generation, len(reports), result)

    if reports:
        root.app.run_worker(build, group="compare", thread=True, exit_on_error=False)
    else:
        _show(root, generation, 0, None)
    panel = root.query_one("#compare-mainloop", Static)
    text = compare_text([(s.model.profiles, s.baseline) for s in saved])
    diffs = diff_text(profile_diffs(reports)) if reports else Text()
    panel.update(Text("\n").join([x for x in (text, diffs) if x.plain]))
    root.query_one("#compare-mainloop-box").display = bool(text.plain or diffs.plain)


def _show(root: DOMNode, generation: int, reports: int,
          result: Comparison | str | None) -> None:
    table = root.query_one(CompareTable)
    if generation != table.generation:
        return  # a later call's comparison is on its way
    root.query_one("#compare-hint", Static).update(compare_hint(reports, result))
    table.show(result if isinstance(result, Comparison) else None)


def compare_hint(reports: int, result: Comparison | str | None = None) -> Text:
    """The line above the Compare table: what to do, or what stands in the way."""
    if isinstance(result, str):
        return Text(f"Not comparable: {result}.", style="bold red")
    if reports < 2:
        return Text("Open two or more reports to compare them: sagetui view A.json B.json, "
                    "or o to open one here.", style="dim")
    text = Text(f"{reports} reports side by side; * marks a verdict computed from a report's "
                "round medians.", style="dim")
    if result is not None and result.refusals:
        text.append(f"\nNot comparable as they are (sagetui compare refuses them): "
                    f"{result.refusal_line()}.", style="bold red")
    if result is not None and result.differences:
        text.append(f"\nDiffering, and compared: {'; '.join(result.differences)}.",
                    style="dim")
    return text


class CompareTable(VerticalScroll):
    """The comparison as `sagetui compare` prints it (tui/fitted_tables.py), fitted to the
    tab's width: every cell whole, the columns that do not fit in a further table under the
    first, the legend over them; it scrolls (j/k, page keys)."""

    BINDINGS = [Binding("j", "scroll_down", "Down", show=False),
                Binding("k", "scroll_up", "Up", show=False)]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.shown: Comparison | None = None  # as shown: its phases' names shortened
        self.generation = 0  # sync_compare's calls: only the latest one's result is shown
        self._laid_out: tuple[int, int] | None = None  # the comparison and the width of it

    def compose(self) -> ComposeResult:
        yield Static(id="compare-body")

    @property
    def row_count(self) -> int:
        return len(self.shown.lines) if self.shown is not None else 0

    def show(self, c: Comparison | None) -> None:
        if c is not None:  # the console's phase names are short, as in its other tabs
            phase = [i for i, col in enumerate(c.columns) if col.kind == "phase"]
            c = replace(c, lines=[replace(line, cells=[
                short_phase(x, 16) if i in phase else x for i, x in enumerate(line.cells)])
                for line in c.lines])
        self.shown = c
        self._lay_out()

    def on_resize(self) -> None:
        self._lay_out()

    def _lay_out(self) -> None:
        width = self.scrollable_content_region.width or self.app.size.width
        if self._laid_out == (id(self.shown), width):
            return
        self._laid_out = (id(self.shown), width)
        body = self.query_one("#compare-body", Static)
        c = self.shown
        # the legend (which file is A, what a sign means) over the tables, in sight at once
        body.update(Group(Text(" · ".join(c.notes), style="dim"),
                          comparison_table(c, width, title="Compare", legend=False))
                    if c is not None else "")
