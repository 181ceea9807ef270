"""The recovery file's writer: a helper process that encodes and writes reports.

Encoding 10^6 raw samples as JSON is seconds of CPU (float repr), and in the console's process
every bit of it holds the GIL the UI thread needs: a key press waits behind it. So the session
hands each report to this process instead: the summaries as JSON text (small), the samples as
raw arrays (bytes through a pipe; the write lets the GIL go). The child writes the file exactly
as core.io.save_report would, atomically, and answers one line. If the writer cannot start or
dies, the session writes in its own process as before (nothing is lost, only speed).

Protocol, per report: a header line (JSON: path, head, samples = the variants or null,
series = [[variant, phase, rounds, samples], ...]), then for each series its bounds (int64,
rounds + 1) and its values (float64); the answer is {"ok": true} or {"errno": n, "error": ..}.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np

from sagetui.core.file_writes import atomic_write_text
from sagetui.core.report.document import iter_json_document
from sagetui.core.samples import RoundSeries, Samples

if TYPE_CHECKING:  # the child starts without pydantic: only the parent's side reads reports
    from sagetui.core.report.model import Report


class RecoveryWriter:
    """The parent's side: one child, which writes one report at a time (`save` holds a lock:
    the sessions of a pool share it)."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = subprocess.Popen(
            [sys.executable, "-m", "sagetui.session.recovery_writer"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, process_group=0)
        self._lock = threading.Lock()

    def save(self, report: Report, path: Path) -> bool:
        """Write `report` to `path` in the child. False: the child is gone (write it here);
        OSError: the child could not write the file (disk full, read-only...)."""
        with self._lock:
            return self._save(report, path)

    def _save(self, report: Report, path: Path) -> bool:
        proc = self.proc
        if proc is None or proc.stdin is None or proc.stdout is None:
            return False
        samples = report.samples or Samples()
        series = [(v, p, s) for v, phases in samples.items() for p, s in phases.items()]
        from sagetui.core.report.io import report_head_json

        header = {"path": str(path), "head": report_head_json(report),
                  "samples": list(samples) if report.samples is not None else None,
                  "series": [[v, p, len(s), s.values.size] for v, p, s in series]}
        try:
            proc.stdin.write(json.dumps(header).encode() + b"\n")
            for _, _, s in series:
                proc.stdin.write(np.ascontiguousarray(s.bounds, dtype="<i8").data)
                proc.stdin.write(np.ascontiguousarray(s.values, dtype="<f8").data)
            proc.stdin.flush()
            answer = json.loads(proc.stdout.readline() or b"null")
        except (OSError, ValueError):
            answer = None
        if not isinstance(answer, dict):
            self.close()
            return False
        if not answer.get("ok"):
            raise OSError(answer.get("errno") or 0, answer.get("error") or "write failed")
        return True

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()


_shared: RecoveryWriter | None = None
_shared_lock = threading.Lock()


def shared() -> RecoveryWriter:
    """This process's writer: started by the first save of any session and kept for the next
    ones (a console runs many, a sweep's pool several at once), so that a run pays no process
    start (0.15-0.3 s of CPU); one that died is replaced at the next ask. It ends with this
    process (the end of its stdin)."""
    global _shared
    with _shared_lock:
        if _shared is None or _shared.proc is None:
            _shared = RecoveryWriter()
        return _shared


def _read_array(stream: io.BufferedIOBase, n: int, dtype: str) -> np.ndarray:
    out = np.empty(n, dtype=dtype)
    view, got = out.data.cast("B"), 0
    while got < len(view):
        k = stream.readinto(view[got:])
        if not k:
            raise EOFError("the session closed the pipe inside a report")
        got += k
    return out


def main() -> int:
    # typeshed says BinaryIO; the process's standard streams are buffered readers and writers
    stdin = cast(io.BufferedReader, sys.stdin.buffer)
    stdout = sys.stdout.buffer
    while line := stdin.readline():
        header = json.loads(line)
        samples = Samples({v: {} for v in header["samples"] or []})
        for variant, phase, rounds, count in header["series"]:
            bounds = _read_array(stdin, rounds + 1, "<i8")
            samples.setdefault(variant, {})[phase] = RoundSeries(
                _read_array(stdin, count, "<f8"), bounds)
        try:
            atomic_write_text(header["path"], iter_json_document(
                header["head"], samples if header["samples"] is not None else None),
                overwrite=True)
            answer: dict[str, object] = {"ok": True}
        except OSError as exc:
            answer = {"errno": exc.errno, "error": exc.strerror or str(exc)}
        stdout.write(json.dumps(answer).encode() + b"\n")
        stdout.flush()
    return 0


if __name__ == "__main__":
    try:
        os.setpriority(os.PRIO_PROCESS, 0, 5)  # a background chore: the runner comes first
    except OSError:
        pass
    sys.exit(main())
