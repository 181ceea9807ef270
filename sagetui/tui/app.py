"""SageTUI: the live console and the report viewer (one app, the same panels for both).

The app composes the panels (layout.py), keeps the open sources (Source: a live run, saved
reports) and syncs the panels from a timer at `refresh_hz`, only when what they show changed;
plots also only when on screen. It delegates a run to its RunControl (run_control.py: a Session
in a Textual thread worker, its events arriving as messages) and exports to its ExportFlow.
"""

from __future__ import annotations

import gc
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.css.query import NoMatches
from textual.notifications import SeverityLevel
from textual.widget import Widget
from textual.widgets import DataTable, RichLog, Static, TabbedContent, TabPane, Tabs
from textual.worker import Worker

from sagetui.core.config import RunConfig
from sagetui.core.eventlog import LogLine
from sagetui.core.report.io import ReportError, load_report
from sagetui.core.report.model import Report
from sagetui.core.sweep.plan import Axes

if TYPE_CHECKING:
    from sagetui.session.session import Session

from sagetui.tui import keymap
from sagetui.tui.analysis_worker import AnalysisWorker, fold_message
from sagetui.tui.commands import SageCommands
from sagetui.tui.edit_flow import Builder, EditFlow
from sagetui.tui.export_flow import ExportFlow
from sagetui.tui.help_screen import HelpScreen
from sagetui.tui.layout import PANEL_TITLES, compose_console
from sagetui.tui.log_lines import opened_lines, write_line
from sagetui.tui.messages import DerivedReady, SessionEvent
from sagetui.tui.modals import PathPromptScreen
from sagetui.tui.profile_flow import ProfileFlow
from sagetui.tui.run_control import RunControl
from sagetui.tui.settings import ConsoleSettings
from sagetui.tui.source import Source, live_source, saved_source
from sagetui.tui.sweep_tab import SweepTab, WorkloadPlan
from sagetui.tui.themes import OKABE_ITO, install_themes
from sagetui.tui.unsaved_guard import UnsavedGuard
from sagetui.tui.variant_controls import set_baseline, toggle_variant
from sagetui.tui.view_context import ViewContext
from sagetui.tui.watch_flow import BuildLine, BuildsDone, SourceFlow, TreeChanged
from sagetui.tui.widgets.compare_table import sync_compare
from sagetui.tui.widgets.head_accuracy import HeadAccuracy
from sagetui.tui.widgets.phase_table import PhaseTable
from sagetui.tui.widgets.phase_view import PhaseView
from sagetui.tui.widgets.plots import SeriesPlot
from sagetui.tui.widgets.scheduler_panel import (
    DecompositionInfo,
    KernelFactsTable,
    SchedulerFacts,
    TailTable,
)
from sagetui.tui.widgets.status_panel import StatusPanel
from sagetui.tui.widgets.swap_panel import SwapPanel
from sagetui.tui.widgets.sweep_panel import SweepPanel
from sagetui.tui.widgets.variant_table import VariantTable
from sagetui.tui.widgets.verdict_table import VerdictTable

YOUNG_GC_OBJECTS = 50_000  # see SageTUI.on_mount


class SageTUI(App[int]):
    CSS_PATH = str(Path(__file__).with_name("app.tcss"))  # absolute: subclasses live elsewhere
    TITLE = "sagetui"
    BINDINGS = keymap.bindings()
    COMMANDS = App.COMMANDS | {SageCommands}
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (140, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (36, "-tall")]

    def __init__(self, config: RunConfig | None = None,
                 reports: list[tuple[str, Report]] | None = None, *,
                 refresh_hz: float | None = None, theme_name: str | None = None,
                 recovery_path: str | Path | None = None,
                 export_dir: str | Path | None = None, sweep_axes: Axes | None = None,
                 workload: WorkloadPlan | None = None,
                 build_config: Builder | None = None,  # cli's: the run editor's
                 watch: bool = False,  # --watch: source variants' trees
                 arch: str | None = None) -> None:  # --arch: what those trees are built for
        super().__init__()
        if "TEXTUAL_ANIMATIONS" not in os.environ:  # no 0.3 s slide of the tab underline at
            self.animation_level = "none"  # 60 Hz, over SSH, in the way of the next key's frame
        # the command line's --refresh and --theme (None: the default)
        self.settings = ConsoleSettings.given(refresh_hz, theme_name)
        self.sources: list[Source] = []
        self.live: Source | None = None
        if config is not None:
            self.live = live_source(config)
            self.sources.append(self.live)
        for path, report in reports or []:
            self.sources.append(saved_source(report, Path(path).name, path=str(path)))
        if not self.sources:
            self.sources.append(Source("nothing open", live=False))
        self.current = 0
        self.selected: str | None = self._first_variant()
        self.sweeps = SweepTab(sweep_axes, self.live, workload)
        self.run_control = RunControl(self, self, config, self.live,
                                      Path(recovery_path) if recovery_path else None,
                                      make_session=self.sweeps.make_session,
                                      on_point=self.sweeps.on_point)
        self.sweeps.final_report = lambda: self.run_control.final_report
        if self.live is not None:
            self.live.final = lambda: self.run_control.final_report
        self.exports = ExportFlow(self, self, self.run_control,
                                  Path(export_dir) if export_dir else Path.cwd())
        self.unsaved = UnsavedGuard(self, self.run_control, self.exports)
        self.deriving = AnalysisWorker(self)
        self.profiling = ProfileFlow(self, self.run_control)
        self.editing = EditFlow(self, self, self.run_control, self.unsaved, build_config)
        self.sources_flow = SourceFlow(self, self, self.run_control, config, watch=watch,
                                       arch=arch)
        self.run_control.prepare = self.sources_flow.prepare
        self.run_control.on_finished = self.sources_flow.on_finished
        self.run_control.on_reconfigure = self.sources_flow.drop
        self._synced: dict[str, tuple[Any, ...]] = {}
        self._swap_shown = False
        self._series, self._theme_problems = install_themes(self, self.settings.theme)

    # -- building ---------------------------------------------------------------------------
    def _first_variant(self) -> str | None:
        if not self.sources:
            return None
        data = self.sources[self.current]
        if data.baseline in data.variants:
            return data.baseline
        return next(iter(data.variants), None)

    def compose(self) -> ComposeResult:
        yield from compose_console(self._first_tab())

    def _first_tab(self) -> str:
        """Compare with two or more reports open, Sweep for a sweep, Scheduler (its main-loop
        panel) for a report of main-loop profiles alone, else Overview."""
        if sum(not s.live for s in self.sources) >= 2:
            return "compare"
        if any(s.report is not None and (s.report.sweep or s.report.workload)
               for s in self.sources) \
                or self.sweeps.axes:
            return "sweep"
        if self.live is None and self.data.kind() == "main-loop profile":
            return "scheduler"
        return "overview"

    def on_mount(self) -> None:
        # The cyclic GC's young generation: collected every YOUNG_GC_OBJECTS allocations
        # instead of Python's 700. A run streaming 10,000 events a second allocates ~40,000
        # containers a second; with the default, whatever is in flight at each of ~60
        # collections a second is promoted, the old generation fills, and a full collection
        # (70-250 ms with every thread stopped: the console freezes) comes every ~3 s.
        # Now a young collection (a few ms) comes every second or so, and full ones seldom.
        self._gc_thresholds = gc.get_threshold()
        self._notice_shown = 0  # notifications shown in the notice line
        gc.set_threshold(YOUNG_GC_OBJECTS, *self._gc_thresholds[1:])
        for wid, title in PANEL_TITLES.items():
            self.query_one(f"#{wid}").border_title = title
        self._plots = list(self.query(SeriesPlot))
        self.set_interval(1.0 / self.settings.refresh_hz, self.tick)
        self.unsaved.install_signal_handlers()
        for line in self._theme_problems:
            self.write_log(LogLine(line, "warning"))
            self.notify(line, severity="warning")
        self.run_control.greet()
        self.sources_flow.mount()
        for data in self.sources:
            if not data.live:
                self._log_report(data)
                self.rederive(data, recompute=False)
        sync_compare(self, self.sources)
        self.sync_panels()
        self.action_show_tab(self.query_one(TabbedContent).active or "overview")
        self.call_after_refresh(self.flush_redraws)

    def on_unmount(self) -> None:
        self.sources_flow.shut_down()
        self.run_control.shut_down()
        gc.set_threshold(*self._gc_thresholds)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # saved reports only: a run's keys are neither shown, bound nor in the palette
        return self.live is not None or action not in keymap.RUN_ONLY

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = False) -> None:
        # plain text by default: file names, variant names and OS errors are never markup
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)
        self._show_notice(message, title, severity, timeout or self.NOTIFICATION_TIMEOUT)

    def _show_notice(self, message: str, title: str, severity: SeverityLevel,
                     timeout: float) -> None:
        """The newest notification in the notice line over the footer, for `timeout` s."""
        try:
            notice = self.query_one("#notice", Static)
        except NoMatches:  # not composed yet, or torn down
            return
        notice.update(Text((f"{title}: " if title else "") + message))
        notice.set_classes(f"-{severity}")
        notice.display = True
        shown = self._notice_shown = self._notice_shown + 1

        def hide() -> None:
            if self._notice_shown == shown:  # not replaced by a newer one since
                notice.display = False

        self.set_timer(timeout, hide)

    # -- syncing ----------------------------------------------------------------------------
    @property
    def data(self) -> Source:
        """The source the panels show."""
        return self.sources[self.current]

    # the run control's state, for the panels and the tests
    @property
    def running(self) -> bool:
        return self.run_control.running

    @property
    def session(self) -> Session | None:
        return self.run_control.session

    @property
    def final_report(self) -> Report | None:
        return self.run_control.final_report

    @property
    def config(self) -> RunConfig | None:
        return self.run_control.config

    def context(self) -> ViewContext:
        theme = self.current_theme
        return ViewContext(selected=self.selected, series=self._series.get(self.theme, OKABE_ITO),
                           error_colour=theme.error or "#D55E00",
                           mark_colour=theme.foreground or "#FFFFFF", running=self.running)

    def sync_panels(self, force: bool = False) -> None:
        try:
            panels = [self.query_one(t) for t in (VariantTable, VerdictTable, PhaseTable,
                                                  PhaseView, SchedulerFacts, DecompositionInfo,
                                                  KernelFactsTable, HeadAccuracy, TailTable)]
            status = self.query_one(StatusPanel)
            sweep = self.query_one(SweepPanel)
        except NoMatches:  # a timer that fires while the app is shutting down
            return
        data, ctx = self.data, self.context()
        key = (id(data), data.version, ctx, self.theme)
        for widget in panels:  # a hidden tab's panels catch up when it is shown (a tab switch
            # flushes): rebuilt while hidden, they would all be drawn again in the switch's frame
            if force or (widget.is_on_screen and self._synced.get(widget.id or "") != key):
                widget.sync(data, ctx)  # type: ignore[attr-defined]  # every panel has sync
                self._synced[widget.id or ""] = key
        status.sync(data, ctx)  # cheap, and its ETA moves with time
        swapped = self.query_one(SwapPanel).sync(data.report)
        if swapped != self._swap_shown:  # a swap report's table takes the run's panels' place
            self._swap_shown = swapped
            for wid in ("#tables", "#overview-main"):
                self.query_one(wid).display = not swapped
            self.query_one("#swap-box").display = swapped
        self.sweeps.sync(data, ctx, sweep)
        for plot in self._plots:
            plot.sync(data, ctx)
        self._stack_tables(panels[0], panels[1])

    def _stack_tables(self, variants: Widget, verdicts: Widget) -> None:
        """The variants and verdicts tables one under the other where, side by side, they
        would not both fit whole, the verdicts' title (its rule) included: at 160 columns an
        H200 report's variants table cut its right-hand columns and the title was cut."""
        title = cell_len(str(verdicts.border_title or ""))
        need = (variants.virtual_size.width + variants.styles.gutter.width
                + max(verdicts.virtual_size.width, title + 4) + verdicts.styles.gutter.width)
        tables = self.query_one("#tables")
        stacked = need > self.size.width
        if tables.has_class("-stacked") != stacked:
            tables.set_class(stacked, "-stacked")

    def flush_redraws(self, force: bool = False, tick: bool = False) -> None:
        """Sync every panel and redraw the visible plots that changed, never a plot more often
        than the refresh rate allows, unless forced (tests: hidden tabs' panels too)."""
        self.sync_panels(force=force)
        # a tick may come a little early (timer jitter): 0.9 of the period keeps every tick
        interval = 0.0 if force else (0.9 if tick else 1.0) / self.settings.refresh_hz
        for plot in self._plots:
            if plot.is_attached:
                plot.redraw_if_due(min_interval_s=interval)

    def tick(self) -> None:
        """The refresh timer's: a flush after the frame that is due. Between a tab switch and
        its frame the tab just hidden still counts as on screen, and its plots would be redrawn
        (tens of ms) before the new tab is drawn."""
        self.call_after_refresh(self.flush_redraws, tick=True)

    @on(TabbedContent.TabActivated)
    def _tab_activated(self) -> None:
        self.call_after_refresh(self.flush_redraws)

    @on(DataTable.RowHighlighted, "#variants")
    def _variant_highlighted(self, event: DataTable.RowHighlighted) -> None:
        name = event.row_key.value if event.row_key else None
        if name and name in self.data.variants and name != self.selected:
            self.selected = name
            self.sync_panels()

    def watch_theme(self, theme: str) -> None:
        if getattr(self, "_plots", None):
            self.sync_panels(force=True)
            self.call_after_refresh(self.flush_redraws)

    # -- log --------------------------------------------------------------------------------
    def write_log(self, line: LogLine) -> None:
        write_line(self.query_one("#log-view", RichLog), line)

    def _log_report(self, data: Source) -> None:
        for line in opened_lines(data):
            self.write_log(line)

    # -- the run and exports: delegated ---------------------------------------------------------
    def on_session_event(self, message: SessionEvent) -> None:
        self.run_control.on_event(message.event)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        self.run_control.on_worker_state_changed(event)
        self.sources_flow.on_worker_state_changed(event)

    # -- source variants: their builds and the watch (watch_flow.py) --------------------------
    def on_build_line(self, message: BuildLine) -> None:
        self.sources_flow.on_line(message)

    def on_builds_done(self, message: BuildsDone) -> None:
        self.sources_flow.on_done(message)

    def on_tree_changed(self, message: TreeChanged) -> None:
        self.sources_flow.on_changed(message)

    def action_watch(self) -> None:
        self.sources_flow.toggle_watch()

    def action_toggle_run(self) -> None:
        self.unsaved.toggle_run()

    def action_edit_run(self) -> None:
        self.editing.open()

    def action_until_ci(self) -> None:
        self.run_control.ask_until_ci()

    def action_calibrate(self) -> None:
        self.unsaved.calibrate()

    def action_calibrations(self) -> None:
        self.run_control.calibrations()

    def action_profile(self, which: str) -> None:
        self.profiling.start(which, self.query_one(VariantTable).selected() or self.selected)

    async def action_quit(self) -> None:
        self.unsaved.quit()

    def action_export(self, kind: str) -> None:
        self.exports.export(kind)

    def show_live(self) -> None:
        if self.live is not None:
            self.current = self.sources.index(self.live)

    def live_ready(self) -> None:
        if self.selected not in self.data.variants:
            self.selected = self._first_variant()

    # -- variants ---------------------------------------------------------------------------
    def _selected_variant(self) -> str | None:
        name = self.query_one(VariantTable).selected() or self.selected
        if name not in self.data.variants:
            self.notify("No variant to act on here.", severity="warning")
            return None
        return name

    def action_next_variant(self) -> None:
        names = list(self.data.variants)
        if names:
            i = names.index(self.selected) if self.selected in names else -1
            self.selected = names[(i + 1) % len(names)]
            self.query_one(VariantTable).select(self.selected)
            self.sync_panels()

    def action_toggle_variant(self) -> None:
        name = self._selected_variant()
        if name is not None:
            self.write_log(toggle_variant(self.data, name, self.session))
            self.sync_panels()

    def action_set_baseline(self) -> None:
        name = self._selected_variant()
        if name is None:
            return
        if self.data.baseline == name:
            self.notify(f"{name} is already the baseline.")
            return
        self.write_log(set_baseline(self.data, name, self.session))
        self.rederive(self.data, recompute=True)
        self.sync_panels()

    def rederive(self, data: Source, recompute: bool = True) -> None:
        """Drift and verdicts a source lacks, or all again (a new baseline or threshold)."""
        self.deriving.start(data, recompute)

    def on_derived_ready(self, message: DerivedReady) -> None:
        data = next((s for s in self.sources if id(s) == message.source_id), None)
        if data is not None:
            fold_message(data, message)
            self.sync_panels()
            sync_compare(self, self.sources)

    # -- sources, tabs, themes, help --------------------------------------------------------
    def action_show_tab(self, tab: str) -> None:
        tabs = self.query_one(TabbedContent)
        tabs.active = tab
        # Focus moves with the tab (one left in a hidden pane would hand it to a neighbour
        # there, switching the pane back), without TabPane.Focused: Textual answers a focus
        # with it some hops later and makes its pane active; in a burst ("42") tab 4's came
        # after key 2 and switched back. Prevention travels with the focus's own messages.
        target = next((w for w in tabs.get_pane(tab).query("*") if w.focusable), None)
        with self.prevent(TabPane.Focused):
            (target or tabs.query_one(Tabs)).focus()

    def action_next_source(self) -> None:
        if len(self.sources) < 2:
            self.notify("Only one source is open; o opens a report.")
            return
        self.current = (self.current + 1) % len(self.sources)
        self.selected = self._first_variant()
        data = self.data
        self.notify(f"Showing {data.label}")
        self._synced.clear()
        self.sync_panels(force=True)
        self.query_one(VariantTable).select(self.selected)
        self.call_after_refresh(self.flush_redraws)

    def action_open_report(self) -> None:
        self.push_screen(PathPromptScreen(
            "Open a report JSON", f"{self.exports.export_dir}/",
            hint="enter: open  ·  tab: complete the path  ·  escape: cancel"), self._open_report)

    def _open_report(self, path: str | None) -> None:
        if not path:
            return
        try:
            report = load_report(Path(path).expanduser())
        except ReportError as exc:
            self.write_log(LogLine(f"cannot open: {exc}", "error"))
            self.notify(f"Cannot open that report: {exc}", severity="error", timeout=10)
            return
        data = saved_source(report, Path(path).name, path=path)
        self.sources.append(data)
        self.current = len(self.sources) - 1
        self.selected = self._first_variant()
        self._log_report(data)
        self.rederive(data, recompute=False)
        sync_compare(self, self.sources)
        self._synced.clear()
        self.sync_panels(force=True)
        self.notify(f"Opened {data.label}")

    def action_next_theme(self) -> None:
        names = sorted(self._series)
        if not names:
            return
        i = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(i + 1) % len(names)]
        self.notify(f"Theme: {self.theme}")

    def action_help_quit(self) -> None:
        """Ctrl-C: say how to quit (Textual's own note is markup, and notify here is plain)."""
        self.notify("Press q or ctrl+q to quit.", title="Do you want to quit?")

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())
