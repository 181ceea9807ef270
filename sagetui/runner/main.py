"""`python -m sagetui.runner`: the process that imports torch and runs the kernels.

It speaks the protocol of sagetui.core.protocol over its stdin/stdout. Its real stdout is kept
for the protocol alone; file descriptor 1 is pointed at stderr, so that anything a kernel build
or library prints cannot corrupt the event stream.
"""

from __future__ import annotations

import os
import platform
import queue
import sys
import threading
import traceback
from typing import TYPE_CHECKING, Any, TextIO

from sagetui.core import events as ev
from sagetui.core import protocol, status_board
from sagetui.core.config import RunConfig
from sagetui.core.status_board import StatusBoard

if TYPE_CHECKING:  # the engine imports torch: loaded after the hello, not at import
    from sagetui.runner.engine import Emit, Engine


class Channel:
    """Thread-safe event writer on the saved protocol stream."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def __call__(self, event: ev.RunnerEventT) -> None:
        line = protocol.encode(event)
        with self._lock:
            self._stream.write(line)
            self._stream.flush()


def _protocol_stream() -> TextIO:
    fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(fd, "w", buffering=1, encoding="utf-8")


# what the reader hands the main thread: a command, or why a line was not one
Incoming = ev.CommandT | protocol.ProtocolError


def _reader(commands: queue.Queue[Incoming], cancel: threading.Event) -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            cmd = protocol.decode_command(line)
        except protocol.ProtocolError as exc:
            commands.put(exc)
            continue
        if isinstance(cmd, ev.Cancel):
            cancel.set()  # seen between iterations, while the main thread is busy
        else:
            if not isinstance(cmd, ev.Quit):
                # in the pipe's order: a cancel that came before this command was meant for
                # the one before it (cleared here, not when the main thread takes the command,
                # so that one sent just after it is never lost)
                cancel.clear()
            commands.put(cmd)
    commands.put(ev.Quit())  # stdin closed: the session is gone


def main() -> int:
    emit = Channel(_protocol_stream())
    cancel = threading.Event()
    commands: queue.Queue[Incoming] = queue.Queue()
    threading.Thread(target=_reader, args=(commands, cancel), daemon=True).start()
    board = StatusBoard(os.environ.get(status_board.ENV))

    import torch

    from sagetui.runner.backends import availability

    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        # One thread: on a shared or small machine a second busy process steals a core from a
        # multi-threaded matmul and its time doubles; one thread keeps rounds comparable.
        torch.set_num_threads(int(os.environ.get("SAGETUI_CPU_THREADS", "1")))
    emit(ev.Hello(protocol=protocol.PROTOCOL_VERSION, pid=os.getpid(),
                  python=platform.python_version(), torch=torch.__version__, device=device,
                  backends=availability(device)))

    engine: Engine | None = None
    # a workload's calls, each set up once and taken in turn (Setup.keep), by their inputs
    held: dict[tuple[Any, ...], Engine] = {}
    while True:
        msg = commands.get()
        if isinstance(msg, protocol.ProtocolError):
            emit(ev.RunnerError(kind="protocol", message=str(msg)))
            continue
        if isinstance(msg, ev.Quit):
            emit(ev.Bye())  # flushed: the session has everything
            # Skip the interpreter's teardown (torch's takes a few hundred milliseconds, more
            # on a busy machine): a quitting console must not wait for it. The OS releases the
            # CUDA context, NVML and the files like any other process exit.
            sys.stderr.flush()
            os._exit(0)
        try:
            match msg:
                case ev.Setup(config=config, reference=reference, keep=True):
                    engine = None
                    engine = set_up_held(held, RunConfig.model_validate(config), emit, board,
                                         cancel, reference)
                case ev.Setup(config=config, reference=reference):
                    cfg = RunConfig.model_validate(config)
                    held.clear()  # a workload's set-ups go with it
                    if engine is not None and engine.same_inputs(cfg):
                        # the console's next run on the same inputs: keep them, and the
                        # variants whose code did not change (a failed set-up keeps nothing)
                        kept, engine = engine, None
                        kept.reconfigure(cfg)
                        engine = kept
                    else:
                        engine = None  # the last point's inputs and outputs go first
                        free_memory()
                        engine = new_engine(cfg, emit, board, cancel, reference)
                case _ if engine is None:
                    emit(ev.RunnerError(kind="protocol", message=f"{msg.NAME} before setup"))
                case ev.Warmup(variant=variant, calls=calls):
                    engine.warmup(variant, calls)
                case ev.Block(variant=variant, round=round_, half=half, iterations=n):
                    engine.block(variant, round_, half, n)
                case ev.Late(accuracy=accuracy, decompose=decompose, input_sha256=hash_inputs):
                    engine.late(accuracy, decompose, hash_inputs)
                case ev.Cancel():
                    pass  # the reader keeps it (it never reaches this queue)
                case _:
                    ev.unexpected(msg)
        except Exception as exc:
            emit(describe(exc, board, msg))
            if _poisoned(exc):
                emit(ev.Bye())
                return 3


def new_engine(config: RunConfig, emit: Emit, board: StatusBoard,
               cancel: threading.Event, reference: bool = False) -> Engine:
    """A set-up Engine for `config` (its inputs built, its variants loaded; with `reference`
    its fp32 reference started)."""
    from sagetui.runner.engine import Engine

    fresh = Engine(config, emit, board, cancel)
    fresh.setup(reference)
    return fresh


def set_up_held(held: dict[tuple[Any, ...], Engine], config: RunConfig, emit: Emit,
                board: StatusBoard, cancel: threading.Event, reference: bool) -> Engine:
    """A workload's call in its turn (Setup.keep): its kept set-up resumed, or a new one kept
    beside the others. Where the others leave too little memory for a new one, they are
    dropped and it is made again; where they leave less than HELD_FREE of the GPU free for the
    calls' own work, the oldest go: a dropped call is set up afresh at its next turn (its ready
    says reused_inputs false), so the replay goes on at the cost of its set-ups, and no
    variant runs out of memory for the inputs of calls not running."""
    from sagetui.runner.engine import inputs_key
    from sagetui.runner.fault_injection import maybe_inject_held

    key = inputs_key(config)
    resumed = held.get(key)
    if resumed is not None and resumed.same_inputs(config):
        resumed.resume(config, reference)
        return resumed
    free_memory()
    fresh: Engine | None = None
    try:
        maybe_inject_held(len(held))
        fresh = new_engine(config, emit, board, cancel, reference)
    except Exception as exc:
        if not held or not out_of_memory(exc):
            raise
    if fresh is None:  # out of the except block: its traceback no longer holds the half-made
        held.clear()   # engine's tensors, so the memory can go
        free_memory()
        fresh = new_engine(config, emit, board, cancel, reference)
    held[key] = fresh
    _make_room(held, key)
    return fresh


HELD_FREE = 0.25  # of the GPU's memory, left free beside a workload's kept set-ups


def _make_room(held: dict[tuple[Any, ...], Engine], current: tuple[Any, ...]) -> None:
    import torch

    if not (torch.cuda.is_available() and torch.cuda.is_initialized()):
        return
    for key in [k for k in held if k != current]:  # oldest first (dicts keep their order)
        free, total = torch.cuda.mem_get_info()
        cached = torch.cuda.memory_reserved() - torch.cuda.memory_allocated()  # free to torch
        if free + cached >= HELD_FREE * total:
            return
        del held[key]
        free_memory()


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


def out_of_memory(exc: BaseException) -> bool:
    """torch's out-of-memory, by its message (a CUDA, cuDNN or host allocator's words alike)."""
    return "out of memory" in str(exc).lower()


def describe(exc: BaseException, board: StatusBoard, cmd: ev.CommandT) -> ev.RunnerError:
    text = f"{type(exc).__name__}: {exc}"
    kind = "oom" if out_of_memory(exc) else (
        "cuda" if _poisoned(exc) else "exception")
    line = text.strip().splitlines()[0]
    if kind == "oom":  # what was asked and what was free; torch's advice after it never varies
        line = ". ".join(line.split(". ")[:3]).rstrip(".") + "."
    return ev.RunnerError(kind=kind, message=line[:500],
                          variant=getattr(cmd, "variant", None) or board.variant or None,
                          phase=board.phase or None, command=cmd.NAME, fatal=_poisoned(exc),
                          traceback=traceback.format_exc()[-4000:])


if __name__ == "__main__":
    sys.exit(main())
