"""Reports side by side: the table core/compare builds from each saved source's report (the
same columns and cells `sagetui compare` prints), its legend and notes, and, under it, the
reports' main-loop profiles and their profile diff. The comparison derives verdicts (scipy),
so it is built in a thread worker, never on the UI thread."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.dom import DOMNode
from textual.widgets import Static

from sagetui.core.compare.comparison import Comparison, compare_reports
from sagetui.core.compare.facts import NotComparable
from sagetui.core.compare.profiles import profile_diffs
from sagetui.core.format import short_phase
from sagetui.tui.source import Source
from sagetui.tui.widgets.mainloop_panel import compare_text, diff_text
from sagetui.tui.widgets.steady_table import SteadyTable
from sagetui.tui.widgets.vim_keys import VIM_KEYS


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


class CompareTable(SteadyTable):
    BINDINGS = VIM_KEYS

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, fixed_columns=2,
                         **kwargs)
        self._columns_for: tuple[str, ...] = ()
        self.generation = 0  # sync_compare's calls: only the latest one's result is shown

    def _columns(self, titles: tuple[str, ...]) -> None:
        if titles == self._columns_for:
            self.clear()
            return
        self.clear(columns=True)
        for i, title in enumerate(titles):
            self.add_column(title, key=str(i))
        self._columns_for = titles

    def show(self, c: Comparison | None) -> None:
        if c is None:
            self._columns(())
            self.border_title = self.border_subtitle = Text("")
            return
        self._columns(tuple(col.title for col in c.columns))
        for line in c.lines:
            style = "bold" if line.total else ""
            cells: list[object] = []
            for col, text in zip(c.columns, line.cells, strict=True):
                if col.kind == "phase":
                    cells.append(Text(short_phase(text, 16), style=style or "dim"))
                elif col.kind == "matched":
                    cells.append(Text(text, style="dim"))
                else:
                    cells.append(Text(text, style=style if not col.numeric else ""))
            self.add_row(*cells)
        self.border_title = Text(f"Compare · {' · '.join(c.notes[:2])}")
        self.border_subtitle = Text(" · ".join(c.notes[2:]))
