"""The runner protocol, version 1: one JSON object per line.

The session writes commands to the runner's stdin; the runner writes events to its stdout
(nothing else goes there: the runner points fd 1 at stderr for everything but this channel, so a
stray print in a kernel build cannot corrupt the stream). The runner's stderr is kept by the
session for diagnostics: its last lines go into every fault the user sees.

Commands (session -> runner), each {"cmd": NAME, ...}:
  setup      {config: RunConfig as JSON}          build inputs, load every variant (a second
                                                  setup drops the first's inputs: a sweep's
                                                  points, the tail study's rows)
  warmup     {variant, calls}                     uncounted calls (JIT, autotune, allocator)
  block      {variant, round, half, iterations}   timed iterations, streamed
  decompose  {variant}                            decomposed output vs the public API
  cancel     {}                                   stop the current block between iterations
  quit       {}                                   exit cleanly

Events (runner -> session), each {"event": NAME, ...}:
  hello        {protocol, pid, python, torch, device, backends: {name: null | reason}}
  variant      {name, backend, status: "ok" | "failed", error?, phases: [[name, parent]],
                kernel?, path?, provenance?: {files: [{module, path, sha256, size_bytes,
                mtime_utc}], sageattention_dist?, sageattention_version?}}
  ready        {input_sha256, device, gpu?: {...}, scheduler?: {...}}
  warmup_done  {variant, calls, seconds}
  iteration    {variant, round, half, index, phases: {leaf: seconds}, total_s}
  block_done   {variant, round, half, iterations, cancelled, output_sha256, checksum,
                max_abs_diff?, mean_abs_diff?, byte_exact?, telemetry: {...},
                and in a variant's first block only: accuracy?: {cosine_similarity,
                relative_l1, rmse, max_abs_error, reference, rows, heads, elements} or
                accuracy_error?, sdpa_backend?, sdpa_backend_method?}
  decomposition {variant, equal, max_abs, mean_abs, decomposed_sha256, public_sha256,
                 manual_checksum, reference_checksum} or {variant, skipped: reason}
  phase        {variant, phase}     the leaf about to run, when a block starts (for faults)
  error        {kind, message, variant?, phase?, fatal: bool, traceback?}
  bye          {}
"""

from __future__ import annotations

import json
from typing import Any

PROTOCOL_VERSION = 1

COMMANDS = frozenset({"setup", "warmup", "block", "decompose", "cancel", "quit"})
EVENTS = frozenset({"hello", "variant", "ready", "warmup_done", "iteration", "block_done",
                    "decomposition", "phase", "error", "bye"})


class ProtocolError(ValueError):
    pass


def encode(msg: dict[str, Any]) -> str:
    return json.dumps(msg, separators=(",", ":"), allow_nan=False) + "\n"


def command(cmd: str, /, **fields: Any) -> str:
    if cmd not in COMMANDS:
        raise ProtocolError(f"unknown command {cmd!r}")
    return encode({"cmd": cmd, **fields})


def event(name: str, /, **fields: Any) -> str:
    if name not in EVENTS:
        raise ProtocolError(f"unknown event {name!r}")
    return encode({"event": name, **fields})


def decode(line: str | bytes, key: str) -> dict[str, Any]:
    """Parse one line; `key` is "cmd" or "event". Raises ProtocolError with the reason."""
    try:
        msg = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"not a JSON line: {exc}") from None
    allowed = COMMANDS if key == "cmd" else EVENTS
    if not isinstance(msg, dict) or msg.get(key) not in allowed:
        raise ProtocolError(f"not a known {key}: {str(line)[:120]!r}")
    return msg
