"""The recovery file: written after rounds, off the session's thread, and at the end.

The recovery file holds every raw sample: with 10^6 of them, building and writing it takes
seconds of the GIL that the console and the session's thread need. A round's autosave is
skipped while the last one is still being written or while autosaves have taken more than
AUTOSAVE_MAX_SHARE of the time since; the end of the run always writes it (`save`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sagetui.core.report.io import save_report
from sagetui.core.report.model import Report
from sagetui.session import recovery_writer
from sagetui.session.recovery_writer import RecoveryWriter

AUTOSAVE_MAX_SHARE = 0.1


class Autosaver:
    def __init__(self, path: Path | None, report: Callable[[], Report],
                 log: Callable[[str], None]) -> None:
        self.path = path
        self._report = report  # builds a snapshot (thread-safe)
        self._log = log
        self._saver = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sagetui-autosave")
        self._saving = False  # a round's autosave is queued or being written
        self._next_save = 0.0  # monotonic: no round's autosave before this
        # why the last write failed (None: the file holds the latest report)
        self.error: str | None = None

    def after_round(self) -> None:
        """Queue a round's autosave, unless one is pending or they have cost too much: building
        and writing the report overlaps the next round's blocks instead of holding the runner
        idle."""
        if self.path is None or self._saving or time.monotonic() < self._next_save:
            return
        self._saving = True
        self._saver.submit(self._round_autosave)

    def _round_autosave(self) -> None:
        t0 = time.monotonic()
        try:
            self.save(self._report())
        finally:
            took = time.monotonic() - t0
            self._next_save = time.monotonic() + took * (1 / AUTOSAVE_MAX_SHARE - 1)
            self._saving = False

    def drain(self) -> None:
        """Wait for a queued autosave (the last round's lands before the final one)."""
        self._saver.shutdown(wait=True)

    def save(self, report: Report) -> None:
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # encoded and written in the process's writer (see recovery_writer.py), which
            # outlives this run; here if it could not start or has died
            writer: RecoveryWriter | None
            try:
                writer = recovery_writer.shared()
            except OSError:
                writer = None
            if writer is None or not writer.save(report, self.path):
                save_report(report, self.path, overwrite=True)
            self.error = None
        except OSError as exc:
            self.error = exc.strerror or str(exc)
            self._log(f"could not write the recovery file: {exc}")
