"""The console's panels: its tabs and what each holds (the app fills them)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import DataTable, Static, TabbedContent, TabPane

from sagetui.tui import keymap
from sagetui.tui.widgets.compare_table import CompareTable
from sagetui.tui.widgets.head_accuracy import HeadAccuracy
from sagetui.tui.widgets.iteration_plot import KEYS_HINT
from sagetui.tui.widgets.log_view import LogView
from sagetui.tui.widgets.phase_table import PhaseTable
from sagetui.tui.widgets.phase_view import PhaseView
from sagetui.tui.widgets.plots import IterationPlot, RoundPlot
from sagetui.tui.widgets.scheduler_panel import (
    DecompositionInfo,
    KernelFactsTable,
    SchedulerFacts,
    TailTable,
)
from sagetui.tui.widgets.status_panel import StatusPanel
from sagetui.tui.widgets.steady_footer import SteadyFooter
from sagetui.tui.widgets.swap_panel import SwapBox, SwapPanel
from sagetui.tui.widgets.sweep_panel import SweepPanel
from sagetui.tui.widgets.variant_table import VariantTable
from sagetui.tui.widgets.verdict_table import VerdictTable

PANEL_TITLES = {"variants": "Variants · t toggle · b baseline",
                "verdicts": "Verdicts vs baseline", "facts": "Scheduler grid",
                "tail": "Tail study (main loop)",
                "kernel-facts": "Kernel facts (main loop, from the binary)",
                "decomposition": "Correctness",
                "watch-panel": "Source variants · builds and the watch (w)"}


def compose_console(initial: str) -> ComposeResult:
    """Every tab; `initial` is the one shown first (Compare with two or more reports open,
    Sweep for a sweep)."""
    titles = dict(keymap.TABS)
    label = {tab: f"{i + 1} {titles[tab]}" for i, (tab, _) in enumerate(keymap.TABS)}
    with TabbedContent(initial=initial, id="tabs"):
        with TabPane(label["overview"], id="overview"):
            yield StatusPanel(id="status")
            with SwapBox(id="swap-box"):  # a swap report's tables, in the place of the rest
                yield SwapPanel(id="swap-panel")
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
            yield Static(KEYS_HINT, id="iterations-keys")
        with TabPane(label["phases"], id="phases"):
            yield PhaseView(id="phase-view")
        with TabPane(label["scheduler"], id="scheduler"):
            with VerticalScroll(id="scheduler-body"):
                with Horizontal(id="scheduler-top"):
                    yield SchedulerFacts(id="facts")
                    yield DecompositionInfo(id="decomposition")
                yield KernelFactsTable(id="kernel-facts")
                yield HeadAccuracy(id="heads")
                yield TailTable(id="tail")
        with TabPane(label["log"], id="log"):
            yield LogView(id="log-view", wrap=True, markup=False, highlight=False)
        with TabPane(label["compare"], id="compare"):
            yield Static(id="compare-hint")
            yield CompareTable(id="compare-table")
            # reports' main-loop profiles and their diff, when they have any (it scrolls)
            with VerticalScroll(id="compare-mainloop-box"):
                yield Static(id="compare-mainloop")
            with Vertical(id="watch-panel"):  # source variants: their builds and the watch
                yield Static(id="watch-status")
                yield DataTable(id="watch-history", cursor_type="row", zebra_stripes=True)
        with TabPane(label["sweep"], id="sweep"):
            yield SweepPanel(id="sweep-body")
    # the notifications, in a line of their own over the footer: a toast would cover numbers
    yield Static(id="notice", markup=False)
    yield SteadyFooter(compact=True)
