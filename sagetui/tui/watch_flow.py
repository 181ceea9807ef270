"""Source variants in the console (`backend@src:PATH`): built in a thread worker before each
run, and with `--watch` (key w) rebuilt and run again when their tree changes.

- **Build**: r (or the watch) builds every source variant of the configuration the console
  was started with (build/sources.resolve_sources: an unchanged tree is a cache hit in
  milliseconds), each ninja step streaming into the Log and the Compare tab's watch line
  (step, elapsed, the last build of that tree as the estimate: build/setup_driver.py). A
  variant whose build fails is shown as the compiler's error block (Log, notification) and
  left out; the others run, and the run's report lists it as never run (partial), as
  `sagetui run`'s does.
- **Watch**: a thread waits on the trees (build/watch.py, watchfiles); a change that moves a
  tree's source hash is diffed against a copy of the tree as last built (tree_diff.snapshot)
  and queued; between runs the queue is rebuilt and the comparison run again. When that run
  finishes each rebuilt variant gets a row in the session's history (core/watch_history.py):
  time, change, verdict, main-loop delta. A change during a run or a build waits for it.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import App
from textual.message import Message
from textual.widgets import DataTable, Static
from textual.worker import Worker, WorkerState

from sagetui.core.build_facts import BuildFacts, LeftOut
from sagetui.core.config import RunConfig
from sagetui.core.eventlog import LogLine
from sagetui.core.report.model import Report
from sagetui.core.watch_history import COLUMNS, WatchRow, change_text, row_of

if TYPE_CHECKING:
    from sagetui.kernel_build.errors import BuildFailed
    from sagetui.tui.run_control import ConsoleView, RunControl

FIRST = "first build"


class BuildLine(Message):
    """A line of a build in progress (from the build worker's thread)."""

    def __init__(self, text: str, severity: str = "information") -> None:
        super().__init__()
        self.text, self.severity = text, severity


class BuildsDone(Message):
    """The source variants built: the configuration to run (None: none to run), and the
    variants whose build failed with the compiler's error block."""

    def __init__(self, config: RunConfig | None, failed: dict[str, BuildFailed]) -> None:
        super().__init__()
        self.config, self.failed = config, failed


class TreeChanged(Message):
    """A watched tree's source hash moved (from the watch thread)."""

    def __init__(self, variant: str, files: list[str]) -> None:
        super().__init__()
        self.variant, self.files = variant, files


class SourceFlow:
    def __init__(self, app: App[int], view: ConsoleView, run: RunControl,
                 config: RunConfig | None, watch: bool = False, arch: str | None = None) -> None:
        self.app, self.view, self.run = app, view, run
        self.arch = arch  # --arch: what the trees are built for (None: as `sagetui build`)
        has_sources = config is not None and any(v.source for v in config.variants)
        self.config = config if has_sources else None  # the `src:` configuration, unbuilt
        self.resolved: RunConfig | None = None  # its last build, as run
        self.building = False
        self._go = False  # the build just finished: the next start runs what it built
        self.pending: dict[str, str] = {}  # variant -> its change, waiting for a rebuild
        self.rebuilt: dict[str, str] = {}  # variant -> change, for the run now under way
        self.history: list[WatchRow] = []
        self.built: dict[str, BuildFacts] = {}  # the last build of each source variant
        self.watch_on = watch
        self._watching_run = False  # the build under way is the watch's
        self._stop: threading.Event | None = None
        self._copies = Path(tempfile.mkdtemp(prefix="sagetui-watch-")) if has_sources else None
        # Tests only: what a rebuilt configuration is run as (a CPU has no sm89 to run its
        # build on); the console runs what it built.
        self.run_as: Callable[[RunConfig], RunConfig] = lambda c: c

    @property
    def active(self) -> bool:
        return self.config is not None

    def mount(self) -> None:
        """The app is up: show the panel, and start watching if asked (--watch)."""
        self.app.query_one("#watch-history", DataTable).add_columns(*COLUMNS)
        if self.active:
            self.app.query_one("#watch-panel").display = True
            names = ", ".join(v.name for v in self.config.variants if v.source)  # type: ignore[union-attr]
            self._status(f"source variants {names}: built when a run starts (r)"
                         + ("" if self.watch_on else "; w watches their trees"))
            if self.watch_on:
                self._start_watch()

    def _status(self, text: str) -> None:
        self.app.query_one("#watch-status", Static).update(
            ("watching · " if self._stop is not None else "") + text)

    # -- building -------------------------------------------------------------------------
    def prepare(self) -> bool:
        """RunControl.start's question: True when a build was started instead (the run starts
        when it is done); False: run the configuration as it is."""
        if self.config is None or self.run.calibrating is not None:
            return False
        if self._go:
            self._go = False
            return False
        self.build()
        return True

    def build(self) -> None:
        if self.building or self.config is None:
            return
        self.building = True
        self._status("building…")
        self.view.write_log(LogLine("building the source variants' trees"))
        self.app.run_worker(partial(self._build, self.config), name="build", group="build",
                            thread=True, exit_on_error=False)

    def _build(self, config: RunConfig) -> None:
        """On the worker's thread: every source variant built or found; failures kept."""
        from sagetui.kernel_build.errors import BuildFailed, BuildInputError
        from sagetui.kernel_build.sources import plan_sources, resolve_sources

        post = self.app.post_message
        failed: dict[str, BuildFailed] = {}

        def say(line: str) -> None:
            post(BuildLine(line))

        try:
            resolved: RunConfig | None = resolve_sources(
                config, plan_sources(config, arch=self.arch), say,
                on_failure=failed.__setitem__)
        except BuildFailed as exc:  # the last variant left failed too
            failed[next(v.name for v in reversed(config.variants)
                         if v.source and v.name not in failed)] = exc
            resolved = None
        except BuildInputError as exc:  # the tree went away or stopped being one
            post(BuildLine(f"cannot build: {exc}", "error"))
            resolved = None
        post(BuildsDone(resolved, failed))

    def on_line(self, message: BuildLine) -> None:
        self.view.write_log(LogLine(f"build: {message.text}", message.severity))  # type: ignore[arg-type]
        self._status(message.text)

    def on_done(self, message: BuildsDone) -> None:
        self.building = False
        specs = {v.name: v for v in self.config.variants} if self.config is not None else {}
        self.run.left_out = {name: LeftOut.of(specs[name], exc)
                             for name, exc in message.failed.items() if name in specs}
        for name, exc in message.failed.items():
            self.view.write_log(LogLine(f"build of {name} failed: {exc}", "error"))
            for line in exc.block:
                self.view.write_log(LogLine(f"    {line}", "error"))
            self.app.notify(f"The build of {name} failed; the compiler's lines are in the Log "
                            "(6). The other variants run.", severity="error", timeout=10)
            if name in self.rebuilt:
                first = exc.block[0].strip() if exc.block else str(exc)
                self.history.append(row_of(None, name, f"{self.rebuilt.pop(name)}; build "
                                           f"failed: {first}"))
        cfg = message.config
        for v in cfg.variants if cfg is not None else []:
            if v.build is not None and self._copies is not None:
                from sagetui.kernel_build.tree_diff import snapshot

                snapshot(Path(v.build.source), self._copies / v.name)
                self.built[v.name] = v.build
                self._watch_hash(v.name, v.build.source_sha256)
        self._show_history()
        if cfg is None or (self.rebuilt == {} and message.failed and self._watching_run):
            self._status("nothing to run: every changed variant failed to build")
            self._watching_run = False
            self._next()
            return
        self._status("built: " + ", ".join(
            f"{n} {'cache hit' if f.cache_hit else f'{f.build_s:.1f} s'}"
            for n, f in self.built.items() if any(v.name == n for v in cfg.variants)))
        if self.run.config is not None:  # what was set since (u, a calibration) stays
            cfg = cfg.model_copy(update={k: getattr(self.run.config, k) for k in (
                "until_ci_percent", "noise_floor_percent")})
        self.run.config = self.resolved = self.run_as(cfg)
        self._go = True
        self.run.start()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "build" and event.state == WorkerState.ERROR:
            self.building = False
            self.view.write_log(LogLine(f"the build stopped with an error: "
                                        f"{event.worker.error}", "error"))
            self._status("the build stopped with an error (Log)")

    # -- the run's end --------------------------------------------------------------------
    def on_finished(self, report: Report) -> None:
        for name, change in self.rebuilt.items():
            self.history.append(row_of(report, name, change))
        self.rebuilt = {}
        self._watching_run = False
        self._show_history()
        self._next()

    def _show_history(self) -> None:
        table = self.app.query_one("#watch-history", DataTable)
        for row in self.history[table.row_count:]:
            table.add_row(*row.cells())

    # -- watching -------------------------------------------------------------------------
    def toggle_watch(self) -> None:
        if self.config is None:
            self.app.notify("No source variant to watch: give one as NAME=backend@src:PATH.",
                            severity="warning")
            return
        if self._stop is not None:
            self.stop_watch()
            self._status("stopped watching")
            self.app.notify("Stopped watching the source trees.")
        else:
            self._start_watch()
            self.app.notify("Watching the source trees: a change rebuilds its variant and "
                            "runs the comparison again.")

    def _start_watch(self) -> None:
        from sagetui.kernel_build.watch import TreeWatch

        assert self.config is not None
        trees = {v.name: Path(v.source).expanduser() for v in self.config.variants if v.source}
        self.tree_watch = TreeWatch(trees, {n: f.source_sha256 for n, f in self.built.items()})
        stop = self._stop = threading.Event()

        def changed(name: str, files: list[str]) -> None:
            self.app.post_message(TreeChanged(name, files))

        self.app.run_worker(partial(self.tree_watch.run, changed, stop), name="watch",
                            group="watch", thread=True, exit_on_error=False)
        self._status(f"the trees of {', '.join(trees)}")
        self.view.write_log(LogLine(f"watching the trees of {', '.join(trees)}"))

    def _watch_hash(self, name: str, digest: str) -> None:
        if self._stop is not None:
            self.tree_watch.hashes[name] = digest

    def stop_watch(self) -> None:
        if self._stop is not None:
            self._stop.set()
            self._stop = None

    def on_changed(self, message: TreeChanged) -> None:
        from sagetui.kernel_build.tree_diff import tree_diff

        name = message.variant
        before = self._copies / name if self._copies is not None else None
        tree = self.tree_watch.trees[name]
        change = change_text(tree_diff(before, tree)) if before is not None and before.is_dir() \
            else FIRST
        self.pending[name] = change
        self.view.write_log(LogLine(f"watch: {name}'s tree changed ({change})"))
        self._next()

    def _next(self) -> None:
        """Between runs and builds: rebuild what changed and run again."""
        if not self.pending or self.building or self.run.running or self._stop is None:
            return
        self.rebuilt, self.pending = self.pending, {}
        self._watching_run = True
        self.build()

    def drop(self) -> None:
        """The run editor gave the console another configuration (it has no source
        variants: the editor refuses them): nothing to build or watch any more."""
        self.config = None
        self.stop_watch()
        self.app.query_one("#watch-status", Static).update("no source variants")

    def shut_down(self) -> None:
        self.stop_watch()
        if self._copies is not None:
            shutil.rmtree(self._copies, ignore_errors=True)
