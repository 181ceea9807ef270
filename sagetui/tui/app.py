"""SageTUI: the live console and the report viewer (one app, the same panels for both).

A run is a Session driven from a Textual thread worker (run_control.py); its events arrive
as messages (session_bridge.py) and update a RunData on the UI thread. Panels are synced from
a timer at `refresh_hz`, and only when what they show changed; plots also only when on
screen. Exports are export_flow.py's.
"""

from __future__ import annotations

import gc
import os
import time
from functools import partial
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.notifications import SeverityLevel
from textual.widgets import DataTable, Footer, RichLog, Static, TabbedContent, TabPane, Tabs

from sagetui.core.config import RunConfig
from sagetui.core.io import ReportError, load_report
from sagetui.core.report import Report
from sagetui.session.session import Session

from . import keymap
from .commands import SageCommands
from .derive import Derived, apply_derived, derive, derive_inputs
from .export_flow import ExportFlow
from .help_screen import HelpScreen
from .messages import DerivedReady
from .modals import PathPromptScreen
from .run_control import RunControl
from .run_data import RunData
from .sweep_tab import SweepTab
from .themes import OKABE_ITO, default_theme_name, load_themes
from .view_context import ViewContext
from .widgets.compare_table import CompareTable
from .widgets.phase_table import PhaseTable
from .widgets.phase_view import PhaseView
from .widgets.plots import IterationPlot, RoundPlot, SeriesPlot
from .widgets.scheduler_panel import DecompositionInfo, SchedulerFacts, TailTable
from .widgets.status_panel import StatusPanel
from .widgets.sweep_plot import SweepPlot
from .widgets.sweep_table import SweepTable
from .widgets.variant_table import VariantTable
from .widgets.verdict_table import VerdictTable

YOUNG_GC_OBJECTS = 50_000  # see SageTUI.on_mount


class SageTUI(RunControl, ExportFlow, SweepTab, App[int]):
    CSS_PATH = str(Path(__file__).with_name("app.tcss"))  # absolute: subclasses live elsewhere
    TITLE = "sagetui"
    BINDINGS = keymap.bindings()
    COMMANDS = App.COMMANDS | {SageCommands}
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (140, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (36, "-tall")]

    def __init__(self, config: RunConfig | None = None,
                 reports: list[tuple[str, Report]] | None = None, *, refresh_hz: float = 2.0,
                 theme_name: str | None = None, recovery_path: str | Path | None = None,
                 export_dir: str | Path | None = None) -> None:
        super().__init__()
        self.config = config
        self.refresh_hz = min(30.0, max(0.1, float(refresh_hz or 2.0)))
        self.recovery_path = Path(recovery_path) if recovery_path else None
        self.export_dir = Path(export_dir) if export_dir else Path.cwd()
        self.sources: list[RunData] = []
        self.live: RunData | None = None
        if config is not None:
            self.live = self._live_source(config)
            self.sources.append(self.live)
        for path, report in reports or []:
            self.sources.append(RunData.from_report(report, Path(path).name, path=str(path)))
        if not self.sources:
            self.sources.append(RunData("nothing open", live=False))
        self.current = 0
        self.selected: str | None = self._first_variant()
        self.session: Session | None = None
        self.final_report: Report | None = None
        self.run_stem = f"sagetui-{time.strftime('%Y%m%d-%H%M%S')}"
        self._quitting = False
        self._runs = 0
        self.resolved_config: RunConfig | None = None
        self.calibrating: RunConfig | None = None
        self.run_recovery: Path | None = None  # the recovery file of the latest run
        self._synced: dict[str, tuple] = {}
        specs, self._theme_problems = load_themes()
        self._series = {name: spec.series for name, spec in specs.items()}
        for spec in specs.values():
            self.register_theme(spec.theme)
        wanted = theme_name or default_theme_name(os.environ)
        if wanted not in self.available_themes:
            self._theme_problems.append(
                f"unknown theme {wanted!r}; known: {', '.join(sorted(self.available_themes))}")
            wanted = default_theme_name(os.environ)
        if wanted in self.available_themes:
            self.theme = wanted

    # -- building ---------------------------------------------------------------------------
    @staticmethod
    def _live_source(config: RunConfig) -> RunData:
        data = RunData("live run", live=True)
        for spec in config.variants:
            v = data.variant(spec.name)
            v.backend, v.path = spec.backend, spec.path
        data.baseline = config.baseline_name
        data.shape = config.shape.describe()
        data.iterations_per_round = config.iterations
        data.warmup = config.warmup
        data.progress.rounds_planned = config.rounds
        return data

    def _first_variant(self) -> str | None:
        if not self.sources:
            return None
        data = self.sources[self.current]
        if data.baseline in data.variants:
            return data.baseline
        return next(iter(data.variants), None)

    def compose(self) -> ComposeResult:
        many = sum(not s.live for s in self.sources) >= 2
        titles = dict(keymap.TABS)
        label = {tab: f"{i + 1} {titles[tab]}" for i, (tab, _) in enumerate(keymap.TABS)}
        sweep = any(s.report is not None and s.report.sweep for s in self.sources)
        initial = "compare" if many else ("sweep" if sweep or self.sweep_axes else "overview")
        with TabbedContent(initial=initial, id="tabs"):
            with TabPane(label["overview"], id="overview"):
                yield StatusPanel(id="status")
                with Horizontal(id="tables"):
                    yield VariantTable(id="variants")
                    yield VerdictTable(id="verdicts")
                with Horizontal(id="overview-main"):
                    yield PhaseTable(id="phase-table")
                    with Vertical(id="overview-plots"):
                        yield RoundPlot(id="overview-rounds", hide_when_empty=True)
                        yield IterationPlot(id="overview-iterations", hide_when_empty=True)
            with TabPane(label["rounds"], id="rounds"):
                yield RoundPlot(id="rounds-plot")
            with TabPane(label["iterations"], id="iterations"):
                yield IterationPlot(id="iterations-plot")
            with TabPane(label["phases"], id="phases"):
                yield PhaseView(id="phase-view")
            with TabPane(label["scheduler"], id="scheduler"):
                with VerticalScroll(id="scheduler-body"):
                    with Horizontal(id="scheduler-top"):
                        yield SchedulerFacts(id="facts")
                        yield DecompositionInfo(id="decomposition")
                    yield TailTable(id="tail")
            with TabPane(label["log"], id="log"):
                yield RichLog(id="log-view", wrap=True, markup=False, highlight=False)
            with TabPane(label["compare"], id="compare"):
                yield Static(id="compare-hint")
                yield CompareTable(id="compare-table")
            with TabPane(label["sweep"], id="sweep"):
                with Vertical(id="sweep-body"):
                    yield SweepPlot(id="sweep-plot")
                    yield SweepTable(id="sweep-table")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        # The cyclic GC's young generation: collected every YOUNG_GC_OBJECTS allocations
        # instead of Python's 700. A run streaming 10,000 events a second allocates ~40,000
        # containers a second; with the default, whatever is in flight at each of ~60
        # collections a second is promoted, the old generation fills, and a full collection
        # (70-250 ms with every thread stopped: the console freezes) comes every ~3 s.
        # Now a young collection (a few ms) comes every second or so, and full ones seldom.
        self._gc_thresholds = gc.get_threshold()
        gc.set_threshold(YOUNG_GC_OBJECTS, *self._gc_thresholds[1:])
        titles = {"variants": "Variants · t toggle · b baseline",
                  "verdicts": "Verdicts vs baseline", "facts": "Scheduler grid",
                  "tail": "Tail study (main loop)", "compare-table": "Compare",
                  "decomposition": "Correctness"}
        for wid, title in titles.items():
            self.query_one(f"#{wid}").border_title = title
        self._plots = list(self.query(SeriesPlot))
        self.set_interval(1.0 / self.refresh_hz, self._tick)
        self.install_signal_handlers()
        for line in self._theme_problems:
            self.log_line(line, "warning")
            self.notify(line, severity="warning")
        if self.live is not None and self.config is not None:
            cfg = self.config
            auto = " (auto: a GPU node upgrades it to SageAttention at the reference shape)" \
                if cfg.auto else ""
            self.log_line(f"ready: {', '.join(v.spec for v in cfg.variants)} at "
                          f"{cfg.shape.describe()}, {cfg.rounds} rounds x {cfg.iterations} "
                          f"iterations{auto}; press r to run")
        for data in self.sources:
            if not data.live:
                self._log_report(data)
                self._derive(data, recompute=False)
        self._sync_compare()
        self._sync_panels()
        self.action_show_tab(self.query_one(TabbedContent).active or "overview")
        self.call_after_refresh(self.flush_redraws)

    def on_unmount(self) -> None:  # RunControl.on_unmount runs too (Textual calls both)
        gc.set_threshold(*self._gc_thresholds)

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = False) -> None:
        """Plain text by default: messages carry file names, variant names and OS errors,
        which must never be read as markup."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    # -- syncing ----------------------------------------------------------------------------
    @property
    def data(self) -> RunData:
        """The source the panels show."""
        return self.sources[self.current]

    @property
    def running(self) -> bool:
        return self.session is not None

    def context(self) -> ViewContext:
        theme = self.current_theme
        return ViewContext(selected=self.selected, series=self._series.get(self.theme, OKABE_ITO),
                           error_colour=theme.error or "#D55E00",
                           mark_colour=theme.foreground or "#FFFFFF", running=self.running)

    def _sync_panels(self, force: bool = False) -> None:
        try:
            panels = [self.query_one(t) for t in (VariantTable, VerdictTable, PhaseTable,
                                                  PhaseView, SchedulerFacts, DecompositionInfo,
                                                  TailTable)]
            status = self.query_one(StatusPanel)
        except NoMatches:  # a timer that fires while the app is shutting down
            return
        data, ctx = self.data, self.context()
        key = (id(data), data.version, ctx, self.theme)
        for widget in panels:
            if force or self._synced.get(widget.id or "") != key:
                widget.sync(data, ctx)  # type: ignore[attr-defined]
                self._synced[widget.id or ""] = key
        status.sync(data, ctx)  # cheap, and its ETA moves with time
        self._sync_sweep(ctx)
        for plot in self._plots:
            plot.sync(data, ctx)

    def _tick(self) -> None:
        self.flush_redraws(force=False, tick=True)

    def flush_redraws(self, force: bool = False, tick: bool = False) -> None:
        """Sync every panel and redraw the visible plots that changed, never a plot more often
        than the refresh rate allows, unless forced (tests)."""
        self._sync_panels()
        # a tick may come a little early (timer jitter): 0.9 of the period keeps every tick
        interval = 0.0 if force else (0.9 if tick else 1.0) / self.refresh_hz
        for plot in self._plots:
            if plot.is_attached:
                plot.redraw_if_due(min_interval_s=interval)

    def _sync_compare(self) -> None:
        reports = [s for s in self.sources if not s.live]
        hint = self.query_one("#compare-hint", Static)
        if len(reports) < 2:
            hint.update(Text("Open two or more reports to compare them: sagetui view A.json "
                             "B.json, or o to open one here.", style="dim"))
        else:
            hint.update(Text(f"{len(reports)} reports side by side; * marks a verdict computed "
                             "from a report's round p50s.", style="dim"))
        self.query_one(CompareTable).show(reports)

    @on(TabbedContent.TabActivated)
    def _tab_activated(self) -> None:
        self.call_after_refresh(self.flush_redraws)

    @on(DataTable.RowHighlighted, "#variants")
    def _variant_highlighted(self, event: DataTable.RowHighlighted) -> None:
        name = event.row_key.value if event.row_key else None
        if name and name in self.data.variants and name != self.selected:
            self.selected = name
            self._sync_panels()

    def watch_theme(self, theme: str) -> None:
        if getattr(self, "_plots", None):
            self._sync_panels(force=True)
            self.call_after_refresh(self.flush_redraws)

    # -- log --------------------------------------------------------------------------------
    def log_line(self, message: str, severity: str = "information",
                 detail: list[str] | None = None) -> None:
        styles = {"error": "bold red", "warning": "yellow", "information": ""}
        text = Text(time.strftime("%H:%M:%S "), style="dim")
        text.append(message, style=styles.get(severity, ""))
        log = self.query_one("#log-view", RichLog)
        log.write(text)
        for line in detail or []:
            log.write(Text("    " + line, style="dim"))

    def _log_report(self, data: RunData) -> None:
        n = len(data.variants)
        self.log_line(f"opened {data.path}: {data.kind()}, {n} variant{'s' * (n != 1)}, "
                      f"{data.rounds_done} rounds, {len(data.tail_rows)} tail rows")
        for f in data.faults:
            self._log_fault(f, notify=False)

    def _log_fault(self, f: dict[str, Any], notify: bool = True) -> None:
        where = ", ".join(f"{k} {f[k]}" for k in ("variant", "phase", "round")
                          if f.get(k) is not None)
        msg = f"FAULT {f.get('kind', 'error')}: {f.get('message', '')}" + (
            f" ({where})" if where else "")
        tail = list(f.get("stderr_tail") or (f.get("traceback") or "").splitlines())[-8:]
        self.log_line(msg, "error", detail=tail)
        if notify:
            self.notify(f"{msg}. The last stderr lines are in the Log (6).",
                        severity="error", timeout=10)

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
            self._sync_panels()

    def action_toggle_variant(self) -> None:
        name = self._selected_variant()
        if name is None:
            return
        data = self.data
        v = data.variants[name]
        v.enabled = not v.enabled
        state = "on" if v.enabled else "off"
        if data.live and self.session is not None:
            self.session.set_enabled(name, v.enabled)
            self.log_line(f"variant {name} {state}: from the next round")
        else:
            self.log_line(f"variant {name} {state}" + (" (shown)" if not data.live and v.enabled
                                                      else " (hidden)" if not data.live else ""))
        data.touch()
        self._sync_panels()

    def action_set_baseline(self) -> None:
        name = self._selected_variant()
        if name is None:
            return
        data = self.data
        if data.baseline == name:
            self.notify(f"{name} is already the baseline.")
            return
        data.baseline = name
        if data.live and self.session is not None:
            self.session.set_baseline(name)
            self.log_line(f"baseline: {name} (verdicts from the next round)")
        else:
            self.log_line(f"baseline: {name}; speedups and verdicts recomputed")
        self._derive(data, recompute=True)
        data.touch()
        self._sync_panels()

    def _derive(self, data: RunData, recompute: bool) -> None:
        """Fill in drift and verdicts (recompute: all, for a new baseline) off the UI thread."""
        args = derive_inputs(data, recompute)
        if args is not None:
            job = partial(self._derive_thread, id(data), args, recompute)
            self.run_worker(job, group="derive", thread=True, exit_on_error=False)

    def _derive_thread(self, source_id: int, args: dict[str, Any], recompute: bool) -> None:
        d = derive(**args)
        self.post_message(DerivedReady(source_id, d.drift, d.verdicts, d.speedups, recompute))

    def on_derived_ready(self, message: DerivedReady) -> None:
        data = next((s for s in self.sources if id(s) == message.source_id), None)
        if data is None:
            return
        apply_derived(data, Derived(message.drift, message.verdicts, message.speedups),
                      message.recompute)
        self._sync_panels()
        self._sync_compare()

    # -- sources, tabs, themes, help --------------------------------------------------------
    def action_show_tab(self, tab: str) -> None:
        tabs = self.query_one(TabbedContent)
        tabs.active = tab
        # Focus moves with the tab: a focused widget left in a hidden pane would hand the focus
        # to its neighbour there, and that would switch the pane straight back.
        pane = tabs.get_pane(tab)
        target = next((w for w in pane.query("*") if w.focusable), None)
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
        self._sync_panels(force=True)
        self.query_one(VariantTable).select(self.selected)
        self.call_after_refresh(self.flush_redraws)

    def action_open_report(self) -> None:
        self.push_screen(PathPromptScreen(
            "Open a report JSON", f"{self.export_dir}/",
            hint="enter: open  ·  tab: complete the path  ·  escape: cancel"), self._open_report)

    def _open_report(self, path: str | None) -> None:
        if not path:
            return
        try:
            report = load_report(Path(path).expanduser())
        except ReportError as exc:
            self.log_line(f"cannot open: {exc}", "error")
            self.notify(f"Cannot open that report: {exc}", severity="error", timeout=10)
            return
        data = RunData.from_report(report, Path(path).name, path=path)
        self.sources.append(data)
        self.current = len(self.sources) - 1
        self.selected = self._first_variant()
        self._log_report(data)
        self._derive(data, recompute=False)
        self._sync_compare()
        self._synced.clear()
        self._sync_panels(force=True)
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
