"""A run's event stream as JSON lines: `sagetui run --record-events FILE` writes what the
session hands its display, and `read_events` gives the same typed events back, to be folded
again (the parity tests replay streams recorded from real runs: docs/architecture.md, "The run
model").

A runner event is written with the runner protocol's own codec (core/protocol.py); a session
event as {"event": NAME, field: value...} with its models dumped as JSON. A round's samples
handed over in-process (RoundDone.samples) are never written: a replay folds its own.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import fields
from typing import Any, get_args

from pydantic import BaseModel

from sagetui.core import events as ev
from sagetui.core import protocol
from sagetui.core.blocks.sweep import SweepPoint
from sagetui.core.config import RunConfig
from sagetui.core.report.model import Fault, Report

SESSION_EVENTS: dict[str, type] = {c.NAME: c for c in get_args(ev.SessionEventT)}
# the fields of session events that hold a model (the rest are JSON values as they are)
MODELS: dict[str, type[BaseModel]] = {"config": RunConfig, "report": Report, "fault": Fault,
                                      "point": SweepPoint}
NOT_RECORDED = {"samples"}  # RoundDone's in-process hand-over


class RecordError(ValueError):
    pass


def encode(e: ev.Event) -> str:
    """One line (with its newline)."""
    if isinstance(e, ev.RunnerEvent):
        return protocol.encode(e)
    return json.dumps({"event": e.NAME, **_fields(e)}, separators=(",", ":"),
                      allow_nan=False) + "\n"


def _fields(e: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields(e):
        value = getattr(e, f.name)
        if f.name in NOT_RECORDED:
            continue
        if isinstance(value, BaseModel):
            value = value.model_dump(mode="json", exclude_none=True)
        elif f.name == "event":  # FromRunner: the event it wraps
            value = json.loads(encode(value))
        out[f.name] = value
    return out


def decode(line: str | bytes) -> ev.Event:
    """One line back into its event; RecordError says why it cannot be."""
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise RecordError(f"not a JSON line: {exc}") from None
    name = data.get("event") if isinstance(data, dict) else None
    cls = SESSION_EVENTS.get(name) if isinstance(name, str) else None
    if cls is None:
        try:
            return protocol.decode_event(line)
        except protocol.ProtocolError as exc:
            raise RecordError(str(exc)) from None
    data.pop("event")
    try:
        for key, model in MODELS.items():
            if key in data:
                data[key] = model.model_validate(data[key])
        if "event" in data:
            data["event"] = decode(json.dumps(data["event"]))
        return cls(**data)  # type: ignore[no-any-return]
    except (ValueError, TypeError) as exc:
        raise RecordError(f"a malformed {name}: {str(exc).splitlines()[0]}") from None


def read_events(lines: Iterable[str | bytes]) -> Iterator[ev.Event]:
    for line in lines:
        if line.strip():
            yield decode(line)


class Recorder:
    """An on_event wrapper that writes each event before passing it on."""

    def __init__(self, path: str, inner: Any, replace: bool = True) -> None:
        # `replace` False: created only where no file is, in one step (O_EXCL), as every
        # output is (FileExistsError); a stream, written as the run goes, not at its end
        self._file = open(path, "w" if replace else "x",  # noqa: SIM115 - closed by close()
                          encoding="utf-8")
        # a pipe's reader (benchmarks/cold_start.py) gets each event as it happens; a file is
        # written in blocks
        self._live = stat.S_ISFIFO(os.fstat(self._file.fileno()).st_mode)
        self.inner = inner

    def __call__(self, e: ev.Event) -> None:
        self._file.write(encode(e))
        if self._live or isinstance(e, ev.Finished):
            self._file.flush()
        self.inner(e)

    def close(self) -> None:
        self._file.close()
