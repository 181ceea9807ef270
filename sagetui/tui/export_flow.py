"""Export from the console: ask where, ask before overwriting, write atomically, say where.

A plain object the app delegates its export actions to. The dialogs are modals.py's; the
contents and the atomic write are export_contents.py's. A failed write keeps everything in memory
and says why. It remembers which finished result was written as a report JSON (the one export
`sagetui view` can reopen): the run control asks before a key would replace or quit one that
was not.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from textual.app import App

from sagetui.core.eventlog import LogLine
from sagetui.core.export.report import export_stem
from sagetui.core.report.model import Report
from sagetui.core.run.assemble import build_report
from sagetui.tui import export_contents
from sagetui.tui.modals import ConfirmScreen, PathPromptScreen
from sagetui.tui.run_control import RunControl
from sagetui.tui.source import Source


class ExportView(Protocol):
    @property
    def data(self) -> Source: ...  # the source the panels show
    def write_log(self, line: LogLine) -> None: ...


class ExportFlow:
    def __init__(self, app: App[int], view: ExportView, run: RunControl,
                 export_dir: Path) -> None:
        self.app, self.view, self.run = app, view, run
        self.export_dir = export_dir
        self._kept: Report | None = None  # the last report written as JSON
        # (the run's report, its baseline, it built again against that baseline)
        self._rebuilt: tuple[Report, str, Report] | None = None

    def exported(self, report: Report) -> bool:
        """This report (a finished run's, not a snapshot taken mid-run) was written as JSON,
        as it ended or against another baseline."""
        r = self._rebuilt
        return report is self._kept or (r is not None and r[0] is report and r[2] is self._kept)

    def _log(self, text: str, severity: str = "information") -> None:
        self.view.write_log(LogLine(text, "error" if severity == "error" else "information"))

    def report_to_export(self) -> Report | None:
        data = self.view.data
        if data.live:
            if self.run.session is not None:
                return self.run.session.report()  # thread-safe: a snapshot of what is measured
            return self._against_shown_baseline(self.run.final_report)
        return data.report

    def _against_shown_baseline(self, final: Report | None) -> Report | None:
        """A finished run's report with its verdicts against the baseline the console shows
        (`b` after the run): built again from the console's model, which folded the same
        events as the session's (core/run/assemble.py: equal models, equal reports), the run's
        ending kept. As it ended where the model cannot rebuild it whole (a variant whose build
        failed is in the report only)."""
        m = self.view.data.model
        if final is None or final.baseline is None or m.baseline in (None, final.baseline) \
                or {v.name for v in final.variants or []} != set(m.variants):
            return final
        r = self._rebuilt
        if r is None or r[0] is not final or r[1] != m.baseline:
            rebuilt = build_report(m, (final.status or "complete",
                                       list(final.status_detail or [])))
            self._rebuilt = r = (final, m.baseline, rebuilt)
        return r[2]

    def baseline_note(self, kind: str, report: Report | None) -> str:
        """Where an export's verdicts are against another baseline than the screen's (a
        saved report's, a run's mid-run snapshot): said before it is written."""
        shown = self.view.data.baseline
        if kind not in ("json", "md") or report is None or report.baseline in (None, shown):
            return ""  # None: a workload's or a sweep's, whose baseline is its block's
        return (f" (its verdicts are against {report.baseline}, the report's baseline; the "
                f"screen shows them against {shown})")

    def _stem(self) -> str:
        """A live run's exports are named by backend, shape, dtype and the run's start;
        a saved report's by its file."""
        data = self.view.data
        if not data.live:
            return f"{Path(data.label).stem}-sagetui"
        report = self.report_to_export()
        stamp = self.run.run_stem.removeprefix("sagetui-")
        return export_stem(report, stamp) if report is not None else self.run.run_stem

    def export(self, kind: str) -> None:
        svg = self.app.export_screenshot() if kind == "svg" else None  # before a dialog covers it
        report = self.report_to_export()
        try:
            text = export_contents.render(kind, report, svg,
                                    title=f"sagetui report: {self.view.data.label}")
        except ValueError as exc:
            self.app.notify(str(exc), severity="warning")
            return
        self.export_text(kind, text, report=report, note=self.baseline_note(kind, report))

    def export_text(self, kind: str, text: export_contents.Content,
                    then: Callable[[], object] | None = None,
                    report: Report | None = None,
                    otherwise: Callable[[], object] | None = None, note: str = "") -> None:
        """Ask for the path (prefilled), then write; `then` runs after a successful write,
        `otherwise` when nothing was written (the prompt cancelled, the file there kept, the
        write failed). `report`: what `text` was rendered from (a JSON of it marks it
        exported). `note`: said in the prompt, after what is exported."""
        what = export_contents.KINDS[kind].what
        default = export_contents.default_path(self.export_dir, self._stem(), kind)

        def written() -> None:
            if kind == "json" and report is not None:
                self._kept = report
            if then is not None:
                then()

        def chosen(path: str | None) -> None:
            if path:
                self._write_checked(Path(path).expanduser(), kind, text, written, otherwise)
            elif otherwise is not None:
                otherwise()

        self.app.push_screen(PathPromptScreen(f"Export the {what}{note} to:", str(default)),
                             chosen)

    def _write_checked(self, path: Path, kind: str, text: export_contents.Content,
                       then: Callable[[], object] | None,
                       otherwise: Callable[[], object] | None = None) -> None:
        if not path.is_absolute():
            path = self.export_dir / path
        if not path.exists():
            self._write(path, kind, text, then, otherwise, overwrite=False)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._write(path, kind, text, then, otherwise, overwrite=True)
            else:
                self._log(f"not written: {path} exists and was kept")
                self.app.notify(f"Not written: {path} was kept.")
                if otherwise is not None:
                    otherwise()

        self.app.push_screen(ConfirmScreen(f"{path} exists. Overwrite it?", yes="Overwrite",
                                           no="Keep it"), answered)

    def _write(self, path: Path, kind: str, text: export_contents.Content,
               then: Callable[[], object] | None, otherwise: Callable[[], object] | None,
               *, overwrite: bool) -> None:
        what = export_contents.KINDS[kind].what
        try:
            export_contents.write(path, text, overwrite=overwrite)
        except FileExistsError:
            self._write_checked(path, kind, text, then, otherwise)  # it appeared meanwhile
            return
        except OSError as exc:
            recovery = self.run.run_recovery
            kept = (f" and in the recovery file {recovery}"
                    if self.view.data.live and recovery else "")
            msg = (f"Could not write {path}: {export_contents.why(exc)}. Nothing is lost: the "
                   f"data is still here{kept}; export again to another path.")
            self._log(msg, "error")
            self.app.notify(msg, severity="error", timeout=12)
            if otherwise is not None:
                otherwise()
            return
        self._log(f"wrote the {what} to {path}")
        self.app.notify(f"Wrote the {what} to {path}")
        if then is not None:
            then()
