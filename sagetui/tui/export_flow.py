"""Export from the console: ask where, ask before overwriting, write atomically, say where.

A mixin of SageTUI (app.py). The dialogs are modals.py's; the contents and the atomic write
are exporting.py's. A failed write keeps everything in memory and says why.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from sagetui.core.export import export_stem
from sagetui.core.report import Report
from sagetui.session.session import Session

from . import exporting
from .modals import ConfirmScreen, PathPromptScreen

if TYPE_CHECKING:
    from .app import SageTUI


class ExportFlow:
    export_dir: Path
    session: Session | None
    final_report: Report | None
    run_recovery: Path | None
    run_stem: str

    def report_to_export(self: SageTUI) -> Report | None:
        data = self.data
        if data.live:
            if self.session is not None:
                return self.session.report()  # thread-safe: a snapshot of what is measured
            return self.final_report
        return data.report

    def _stem(self: SageTUI) -> str:
        """A live run's exports are named by backend, shape, dtype and the run's start;
        a saved report's by its file."""
        data = self.data
        if not data.live:
            return f"{Path(data.label).stem}-sagetui"
        report = self.report_to_export()
        stamp = self.run_stem.removeprefix("sagetui-")
        return export_stem(report, stamp) if report is not None else self.run_stem

    def action_export(self: SageTUI, kind: str) -> None:
        svg = self.export_screenshot() if kind == "svg" else None  # before a dialog covers it
        try:
            text = exporting.render(kind, self.report_to_export(), svg,
                                    title=f"sagetui report: {self.data.label}")
        except ValueError as exc:
            self.notify(str(exc), severity="warning")
            return
        self.export_text(kind, text)

    def export_text(self: SageTUI, kind: str, text: exporting.Content,
                    then: Callable[[], object] | None = None) -> None:
        """Ask for the path (prefilled), then write; `then` runs after a successful write."""
        what = exporting.KINDS[kind].what
        default = exporting.default_path(self.export_dir, self._stem(), kind)

        def chosen(path: str | None) -> None:
            if path:
                self._write_checked(Path(path).expanduser(), kind, text, then)

        self.push_screen(PathPromptScreen(f"Export the {what} to:", str(default)), chosen)

    def _write_checked(self: SageTUI, path: Path, kind: str, text: exporting.Content,
                       then: Callable[[], object] | None) -> None:
        if not path.is_absolute():
            path = self.export_dir / path
        if not path.exists():
            self._write(path, kind, text, then, overwrite=False)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._write(path, kind, text, then, overwrite=True)
            else:
                self.log_line(f"not written: {path} exists and was kept")
                self.notify(f"Not written: {path} was kept.")

        self.push_screen(ConfirmScreen(f"{path} exists. Overwrite it?", yes="Overwrite",
                                       no="Keep it"), answered)

    def _write(self: SageTUI, path: Path, kind: str, text: exporting.Content,
               then: Callable[[], object] | None, *, overwrite: bool) -> None:
        what = exporting.KINDS[kind].what
        try:
            exporting.write(path, text, overwrite=overwrite)
        except FileExistsError:
            self._write_checked(path, kind, text, then)  # it appeared meanwhile: ask
            return
        except OSError as exc:
            kept = (f" and in the recovery file {self.run_recovery}"
                    if self.data.live and self.run_recovery else "")
            msg = (f"Could not write {path}: {exporting.why(exc)}. Nothing is lost: the data is "
                   f"still here{kept}; export again to another path.")
            self.log_line(msg, "error")
            self.notify(msg, severity="error", timeout=12)
            return
        self.log_line(f"wrote the {what} to {path}")
        self.notify(f"Wrote the {what} to {path}")
        if then is not None:
            then()
