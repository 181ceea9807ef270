"""The runner protocol (PROTOCOL_VERSION below): one JSON object per line; the one codec of
events.py's runner events and commands, used by the runner and the session alike.

The session writes commands to the runner's stdin, each {"cmd": NAME, field: value...}; the
runner writes events to its stdout, each {"event": NAME, field: value...} (nothing else goes
there: the runner points fd 1 at stderr for everything but this channel, so a stray print in a
kernel build cannot corrupt the stream). The runner's stderr is kept by the session for
diagnostics: its last lines go into every fault the user sees. The names and fields are the
dataclasses' in events.py; a field left out is its default (None fields are not written).

A conversation: hello; setup -> variant (one per variant), ready; warmup -> warmup_done;
block -> iterations (one or more: columns of the block's iterations, at least every
STREAM_CHUNK_S) then block_done; late -> late_facts and decomposition, then late_done; cancel
stops a block between iterations and `late` between its figures; quit -> bye. A command that
fails -> error. A second setup drops the first's inputs (a sweep's points each set up anew).

Version 2 (from 1): every message is a typed dataclass and decoding checks each field; one
`iterations` event carries a block's iterations as columns instead of one `iteration` event
per iteration (`start` is the first one's index).
"""

from __future__ import annotations

import json
import math
from typing import Any, TypeVar, cast, get_args

from pydantic import ValidationError

from sagetui.core.events import Command, CommandT, RunnerEvent, RunnerEventT, to_dict

# 3: ready's reused_inputs (a warm runner). 4: a variant's facts travel in `facts` (variant,
# block_done), ready has no scheduler (each variant's grid is derived from its kernel). A runner
# of another version is refused at its hello: strict decoding would drop its changed events, and
# the session would wait for them. 5: the late figures (accuracy, the inputs' sha256 and the
# decomposition check) come after the last round, from `late` (late_facts, late_done);
# `decompose` is gone and ready's input_sha256 may be null. 6: setup's `keep` (a workload's
# calls set up once each and taken in turn, round by round)
PROTOCOL_VERSION = 6
# a block's iterations are sent when this long has passed since the last send, and at its
# end: live plots move as a block runs, and a fast kernel does not cost one line per call
STREAM_CHUNK_S = 0.05

EVENTS: dict[str, type[RunnerEvent]] = {c.NAME: c for c in get_args(RunnerEventT)}
COMMANDS: dict[str, type[Command]] = {c.NAME: c for c in get_args(CommandT)}

M = TypeVar("M", RunnerEvent, Command)


class ProtocolError(ValueError):
    pass


def encode(msg: RunnerEvent | Command) -> str:
    """One line. NaN and infinite numbers (a kernel's bad output) travel as null, their paths
    in the event's `nonfinite`."""
    key = "event" if isinstance(msg, RunnerEvent) else "cmd"
    body = to_dict(msg)
    try:
        return json.dumps({key: msg.NAME, **body}, separators=(",", ":"), allow_nan=False) + "\n"
    except ValueError:
        if not isinstance(msg, RunnerEvent):
            raise
    bad: list[str] = []
    clean = _finite(body, "", bad)
    return json.dumps({key: msg.NAME, **clean, "nonfinite": bad}, separators=(",", ":"),
                      allow_nan=False) + "\n"


def decode_event(line: str | bytes) -> RunnerEventT:
    # EVENTS holds exactly RunnerEventT's classes (built from it), which mypy cannot follow
    return cast(RunnerEventT, _decode(line, "event", EVENTS))


def decode_command(line: str | bytes) -> CommandT:
    return cast(CommandT, _decode(line, "cmd", COMMANDS))  # COMMANDS: CommandT's classes


def _decode(line: str | bytes, key: str, registry: dict[str, type[M]]) -> M:
    """Parse and check one line; raises ProtocolError with the reason."""
    try:
        msg = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"not a JSON line: {exc}") from None
    name = msg.pop(key, None) if isinstance(msg, dict) else None
    cls = registry.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ProtocolError(f"not a known {key}: {_clip(line)}")
    try:
        return cls(**msg)
    except (ValidationError, TypeError) as exc:
        why = str(exc).splitlines()
        raise ProtocolError(f"a malformed {cls.NAME}: {'; '.join(why[1:3]) or why[0]}: "
                            f"{_clip(line)}") from None


def _clip(line: str | bytes) -> str:
    return repr(line[:120] if isinstance(line, str) else line[:120].decode(errors="replace"))


def _finite(value: Any, where: str, bad: list[str]) -> Any:
    """`value` with every NaN or infinite float replaced by None; their paths go to `bad`."""
    if isinstance(value, float) and not math.isfinite(value):
        bad.append(where)
        return None
    if isinstance(value, dict):
        return {k: _finite(v, f"{where}.{k}" if where else str(k), bad) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v, f"{where}[{i}]", bad) for i, v in enumerate(value)]
    return value
