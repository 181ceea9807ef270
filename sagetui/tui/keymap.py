"""Every action of the console, once: its key, its footer label and its palette entry.

The bindings, the help screen and the command palette are all built from this table, so a
key cannot exist in one and be missing from the others.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding, BindingType


@dataclass(frozen=True)
class KeyAction:
    keys: str  # Textual key names, comma-separated
    action: str
    label: str  # footer
    title: str  # command palette and help screen
    help: str
    group: str
    show: bool = True
    footer: Binding.Group | None = None  # keys shown together in the footer: "1234567 Tabs"


TABS_GROUP = Binding.Group("Tabs", compact=True)
EXPORT_GROUP = Binding.Group("Export", compact=True)


TABS = (("overview", "Overview"), ("rounds", "Rounds"), ("iterations", "Iterations"),
        ("phases", "Phases"), ("scheduler", "Scheduler"), ("log", "Log"),
        ("compare", "Compare"), ("sweep", "Sweep"))

KEYS: tuple[KeyAction, ...] = (
    KeyAction("r", "toggle_run", "Run/Stop", "Run / stop",
              "Start a run with the configuration from the command line, or stop the "
              "running one (it stops between iterations and keeps what was measured); over a "
              "finished run not yet exported as JSON it asks first", "Run"),
    KeyAction("E", "edit_run", "Edit", "Edit the run: configure variants, shape, dtype, "
              "rounds", "The next run's options in a form, checked as `sagetui run` checks "
              "them", "Run"),
    KeyAction("u", "until_ci", "Until CI", "Run until the intervals are narrow",
              "Adaptive stopping: run rounds until every verdict's 95 % interval is narrower "
              "than the width you give (0 or off: the fixed number of rounds); a running "
              "session applies it from its next round", "Run"),
    KeyAction("a", "calibrate", "Calibrate", "Calibrate the noise floor",
              "Run the baseline against itself (A/A): its round-to-round noise sets the SAME "
              "threshold, max(1 %, 2 x noise), here and in later runs of this backend and shape",
              "Run"),
    KeyAction("A", "calibrations", "Calibrations", "List / clear calibrations",
              "List the stored noise floors (host, GPU, backend, build, shape, age) and offer "
              "to clear them all", "Run", show=False),
    KeyAction("t", "toggle_variant", "Toggle", "Toggle variant",
              "Turn the selected variant on or off (a run applies it at the next round)",
              "Variants"),
    KeyAction("b", "set_baseline", "Baseline", "Set baseline",
              "Make the selected variant the baseline the others are compared with",
              "Variants"),
    KeyAction("v", "next_variant", "Next variant", "Select next variant",
              "Move the variant selection (also up/down in the variants table)", "Variants",
              show=False),
    KeyAction("e", "export('json')", "JSON", "Export JSON report",
              "Write the report (every field, raw samples included)", "Export",
              footer=EXPORT_GROUP),
    KeyAction("c", "export('csv')", "CSV", "Export CSV samples",
              "Write the raw per-iteration samples: variant, phase, round, iteration, seconds",
              "Export", footer=EXPORT_GROUP),
    KeyAction("m", "export('md')", "MD", "Export Markdown summary",
              "Write a summary table for a pull request", "Export", footer=EXPORT_GROUP),
    KeyAction("s", "export('svg')", "SVG", "Export SVG screenshot",
              "Write what the screen shows now as an SVG image", "Export", footer=EXPORT_GROUP),
    KeyAction("o", "open_report", "Open", "Open a report file",
              "Load a saved report JSON beside what is shown (a bad file is reported, "
              "nothing else changes)", "Reports"),
    KeyAction("n", "next_source", "Next", "Show next report",
              "Switch the panels to the next open report (or the live run)", "Reports"),
    KeyAction("w", "watch", "Watch", "Watch source trees",
              "a change rebuilds its variant, then a run (--watch)", "Reports", show=False),
    *(KeyAction(str(i + 1), f"show_tab('{tab}')", title, f"Show {title}",
                f"Switch to the {title} tab", "Panels", footer=TABS_GROUP)
      for i, (tab, title) in enumerate(TABS)),
    KeyAction("p", "profile('selected')", "Profile", "Profile the selected variant",
              "its call under Nsight Compute between runs, per phase in the Scheduler tab "
              "(p again cancels)",
              "Profile"),
    KeyAction("P", "profile('all')", "Profile all", "Profile every enabled variant",
              "each one's call under Nsight Compute", "Profile",
              show=False),
    KeyAction("T", "next_theme", "Theme", "Next theme",
              "Cycle through the sagetui themes (start with --theme NAME)", "View"),
    KeyAction("question_mark,f1", "help", "Help", "Help: keys",
              "List every key", "View"),
    KeyAction("q", "quit", "Quit", "Quit",
              "Quit; during a run it asks first (stop and save, stop and discard, or keep "
              "running), over a finished run not yet exported it says where the recovery file "
              "is", "View"),
)


# the keys of a run: a console of saved reports (`sagetui view`) does not offer them
RUN_ONLY = frozenset({"toggle_run", "edit_run", "until_ci", "calibrate", "profile", "watch"})


# The footer shows bindings in their order and cuts what does not fit the line: run, the run
# editor, help and quit first, so that the way to everything else is always on screen, then
# the exports ("ecms Export", one compact group), open and next report, all within 80 columns;
# then toggle and baseline (the Variants panel's title names them too), the others, and the
# tabs ("12345678 Tabs", which the tab bar shows as well).
FOOTER_FIRST = ("toggle_run", "edit_run", "help", "quit", "export('json')", "export('csv')",
                "export('md')", "export('svg')", "open_report", "next_source", "toggle_variant",
                "set_baseline")
FOOTER_LAST = ("show_tab",)


def bindings() -> list[BindingType]:
    ordered = sorted(KEYS, key=lambda k: (k.action not in FOOTER_FIRST,
                                          k.action.startswith(FOOTER_LAST),
                                          FOOTER_FIRST.index(k.action)
                                          if k.action in FOOTER_FIRST else 0))
    return [Binding(k.keys, k.action, k.label, show=k.show, tooltip=k.help, group=k.footer)
            for k in ordered]


def display_keys(keys: str) -> str:
    names = {"question_mark": "?", "f1": "F1", "T": "shift+t", "A": "shift+a", "E": "shift+e",
             "P": "shift+p"}
    return " / ".join(names.get(k, k) for k in keys.split(","))
