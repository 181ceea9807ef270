"""`python -m sagetui.runner`: the process that imports torch and runs the kernels.

It speaks the protocol of sagetui.core.protocol over its stdin/stdout. Its real stdout is kept
for the protocol alone; file descriptor 1 is pointed at stderr, so that anything a kernel build
or library prints cannot corrupt the event stream.
"""

from __future__ import annotations

import math
import os
import platform
import queue
import sys
import threading
import traceback
from typing import Any, TextIO

from sagetui.core import protocol
from sagetui.core.config import RunConfig
from sagetui.core.status import ENV as STATUS_ENV
from sagetui.core.status import StatusBoard


class Channel:
    """Thread-safe event writer on the saved protocol stream."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def __call__(self, _event: str, /, **fields: Any) -> None:
        try:
            line = protocol.event(_event, **fields)
        except ValueError:  # NaN or Inf (a kernel's bad output): JSON has no such numbers
            bad: list[str] = []
            line = protocol.event(_event, **_finite(fields, "", bad), nonfinite=bad)
        with self._lock:
            self._stream.write(line)
            self._stream.flush()


def _finite(value: Any, where: str, bad: list[str]) -> Any:
    """`value` with every NaN or infinite float replaced by None; their paths go to `bad`."""
    if isinstance(value, float) and not math.isfinite(value):
        bad.append(where)
        return None
    if isinstance(value, dict):
        return {k: _finite(v, f"{where}.{k}" if where else str(k), bad) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v, f"{where}[{i}]", bad) for i, v in enumerate(value)]
    return value


def _protocol_stream() -> TextIO:
    fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(fd, "w", buffering=1, encoding="utf-8")


def _reader(commands: queue.Queue, cancel: threading.Event) -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            msg = protocol.decode(line, "cmd")
        except protocol.ProtocolError as exc:
            commands.put({"cmd": "_bad", "error": str(exc)})
            continue
        if msg["cmd"] == "cancel":
            cancel.set()  # seen between iterations, while the main thread is busy
        else:
            commands.put(msg)
    commands.put({"cmd": "quit"})  # stdin closed: the session is gone


def main() -> int:
    emit = Channel(_protocol_stream())
    cancel = threading.Event()
    commands: queue.Queue = queue.Queue()
    threading.Thread(target=_reader, args=(commands, cancel), daemon=True).start()
    board = StatusBoard(os.environ.get(STATUS_ENV))

    import torch

    from .backends import availability

    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        # One thread: on a shared or small machine a second busy process steals a core from a
        # multi-threaded matmul and its time doubles; one thread keeps rounds comparable.
        torch.set_num_threads(int(os.environ.get("SAGETUI_CPU_THREADS", "1")))
    emit("hello", protocol=protocol.PROTOCOL_VERSION, pid=os.getpid(),
         python=platform.python_version(), torch=torch.__version__, device=device,
         backends=availability(device))

    engine = None
    while True:
        msg = commands.get()
        cmd = msg["cmd"]
        if cmd == "quit":
            emit("bye")  # flushed: the session has everything
            # Skip the interpreter's teardown (torch's takes a few hundred milliseconds, more
            # on a busy machine): a quitting console must not wait for it. The OS releases the
            # CUDA context, NVML and the files like any other process exit.
            sys.stderr.flush()
            os._exit(0)
        if cmd == "_bad":
            emit("error", kind="protocol", message=msg["error"], fatal=False)
            continue
        cancel.clear()
        try:
            if cmd == "setup":
                engine = None  # the last point's inputs and outputs go before the next's come
                free_memory()
                engine = new_engine(RunConfig.model_validate(msg["config"]), emit, board, cancel)
            elif engine is None:
                emit("error", kind="protocol", message=f"{cmd} before setup", fatal=False)
            elif cmd == "warmup":
                engine.warmup(msg["variant"], int(msg["calls"]))
            elif cmd == "block":
                engine.block(msg["variant"], int(msg["round"]), int(msg["half"]),
                             int(msg["iterations"]))
            elif cmd == "decompose":
                engine.decompose(msg["variant"])
        except Exception as exc:
            emit("error", **describe(exc, board, msg))
            if _poisoned(exc):
                emit("bye")
                return 3


def new_engine(config: RunConfig, emit: Any, board: StatusBoard, cancel: threading.Event):
    """A set-up Engine for `config` (its inputs built, its variants loaded)."""
    from .engine import Engine

    fresh = Engine(config, emit, board, cancel)
    fresh.setup()
    return fresh


def free_memory() -> None:
    """Release what a dropped Engine held: a sweep's setups follow one another in this
    process, and a point's inputs must be gone before the next point's are made (cycles, e.g.
    a traceback kept by a failed setup, are collected; CUDA's cached blocks are returned)."""
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


def _poisoned(exc: BaseException) -> bool:
    """A CUDA error other than out-of-memory leaves the context unusable: exit, and let the
    session restart a runner without the failed variant."""
    text = f"{type(exc).__name__}: {exc}"
    return "CUDA error" in text or "AcceleratorError" in text or "illegal" in text.lower()


def describe(exc: BaseException, board: StatusBoard, msg: dict[str, Any]) -> dict[str, Any]:
    text = f"{type(exc).__name__}: {exc}"
    kind = "oom" if "out of memory" in text.lower() else (
        "cuda" if _poisoned(exc) else "exception")
    return {"kind": kind, "message": text.strip().splitlines()[0][:500],
            "variant": msg.get("variant") or board.variant or None,
            "phase": board.phase or None, "command": msg.get("cmd"),
            "fatal": _poisoned(exc), "traceback": traceback.format_exc()[-4000:]}


if __name__ == "__main__":
    sys.exit(main())
