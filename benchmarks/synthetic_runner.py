"""A runner that does no work: it speaks the real protocol (sagetui/core/protocol.py) and, for
each `block` command, streams `iteration` events as fast as it can (or at a set rate), so that
the console's own costs can be measured without a kernel in the way.

    python benchmarks/synthetic_runner.py [--rate EVENTS_PER_S] [--counter FILE]

It is started by a Session (`Session(config, runner_argv=[...])`; the benchmarks patch that in)
and never by hand. It answers:

  (start)   -> hello
  setup     -> one `variant` per configured variant (the reference backend's 8-phase tree),
               then `ready`
  warmup    -> warmup_done
  block     -> the block's iterations as `iterations` events (columns, one every
               STREAM_CHUNK_S as the real runner sends them), then block_done; a `cancel` stops
               it between iterations
  decompose -> decomposition {skipped}
  tail      -> tail_done
  quit      -> bye, and exits

--rate 0 (the default) emits as fast as it can (well over 10,000 events/s on one core); a
positive rate paces the iterations in 1 ms slices. Every `iterations` event carries `t_emit`,
the runner's time.monotonic() when its first iteration was made (CLOCK_MONOTONIC: the same
clock in every process of the machine), so a reader can tell how far behind it is. With
--counter, the number of iterations written so far is kept in FILE (8 bytes, little-endian),
updated after every event.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import platform
import queue
import random
import struct
import sys
import threading
import time
from typing import Any, TextIO

# The reference backend's phases: what a real run streams (6 leaves, 2 parents).
PHASES = [
    ["k_mean_and_smoothing_preparation", None],
    ["qk_int8_quantization", None],
    ["q_int8_quantization", "qk_int8_quantization"],
    ["k_int8_subtract_mean_quantization", "qk_int8_quantization"],
    ["v_fp8_transpose_scale_quantization", None],
    ["v_transpose_pad_permute", "v_fp8_transpose_scale_quantization"],
    ["v_scale_fp8_quantization", "v_fp8_transpose_scale_quantization"],
    ["fused_mainloop", None],
]
_PARENTS = {p for _, p in PHASES if p}
LEAVES = [n for n, _ in PHASES if n not in _PARENTS]
# a plausible per-leaf split of a 1 ms call, in seconds
LEAF_MEANS = dict(zip(LEAVES, [2e-5, 3e-5, 5e-5, 4e-5, 6e-5, 8e-4], strict=True))
BACKENDS = ("reference", "sdpa", "sage-triton", "sage2-sm89", "sage2-sm90", "sage2-auto")
SLICE_S = 0.001
STREAM_CHUNK_S = 0.05  # sagetui.core.protocol.STREAM_CHUNK_S (this file imports nothing of it)
PROTOCOL = 6  # sagetui.core.protocol.PROTOCOL_VERSION (a test checks they agree)
HERE = os.path.abspath(__file__)


# -- for the benchmarks: plug this runner into the console's sessions ---------------------------
def runner_argv(rate: float = 0.0, counter: str | None = None) -> list[str]:
    """The `runner_argv` of a Session that runs this file instead of `python -m sagetui.runner`."""
    return [sys.executable, HERE, "--rate", str(rate)] + (["--counter", counter] if counter
                                                          else [])


@contextlib.contextmanager
def console_uses_synthetic_runner(rate: float = 0.0, counter: str | None = None):
    """While inside, every run the console (sagetui.tui) starts is a real Session whose runner is
    this program: the console imports `Session` from sagetui.session.session when a run starts
    (run_control.py, sweep_tab.py), and that name is swapped for one that adds `runner_argv`.
    Nothing else changes."""
    from sagetui.session import session

    real = session.Session
    session.Session = functools.partial(  # type: ignore[misc]
        real, runner_argv=runner_argv(rate, counter))
    try:
        yield
    finally:
        session.Session = real  # type: ignore[misc]


def read_counter(path: str) -> int:
    """How many iteration events the runner has written (see --counter)."""
    try:
        with open(path, "rb") as f:
            raw = f.read(8)
    except OSError:
        return 0
    return struct.unpack("<q", raw)[0] if len(raw) == 8 else 0


def bench_config(variants: int = 2, rounds: int = 10, iterations: int = 10_000,
                 warmup: int = 1):
    """A RunConfig for the synthetic runner: `variants` variants of the reference backend (the
    synthetic runner ignores the shape; the console shows it)."""
    from sagetui.core.config import RunConfig, Shape, VariantSpec

    specs = [VariantSpec(name=n, backend="reference") for n in ("base", "cand", "v3", "v4")]
    return RunConfig(shape=Shape(heads=6, q_len=1024, head_dim=128),
                     variants=specs[:variants], rounds=rounds, iterations=iterations,
                     warmup=warmup)


def load_average() -> str:
    with open("/proc/loadavg") as f:
        one, five, fifteen = f.read().split()[:3]
    return f"load average {one} {five} {fifteen} on {os.cpu_count()} cores"


def _encode(msg: dict[str, Any]) -> str:
    # what sagetui.core.protocol.encode writes; inlined so that this file needs nothing but
    # the standard library (the session's decoder checks every field of it)
    return json.dumps(msg, separators=(",", ":"), allow_nan=False) + "\n"


class Runner:
    def __init__(self, out: TextIO, rate: float, counter: str | None) -> None:
        self.out = out
        self.rate = rate
        self.cancel = threading.Event()
        self.commands: queue.Queue = queue.Queue()
        self.emitted = 0
        self._counter = os.open(counter, os.O_RDWR | os.O_CREAT, 0o600) if counter else None
        self._rng = random.Random(0)
        self._noise = [self._rng.lognormvariate(0.0, 0.05) for _ in range(4096)]
        self._variants: list[str] = []

    def emit(self, _event: str, /, **fields: Any) -> None:
        self.out.write(_encode({"event": _event, **fields}))
        self.out.flush()

    def _count(self) -> None:
        if self._counter is not None:
            os.pwrite(self._counter, struct.pack("<q", self.emitted), 0)

    def read_commands(self) -> None:
        for line in sys.stdin:
            if not line.strip():
                continue
            msg = json.loads(line)
            if msg.get("cmd") == "cancel":
                self.cancel.set()
            else:
                self.commands.put(msg)
        self.commands.put({"cmd": "quit"})

    def main(self) -> int:
        threading.Thread(target=self.read_commands, daemon=True).start()
        self.emit("hello", protocol=PROTOCOL, pid=os.getpid(), python=platform.python_version(),
                  torch="synthetic", device="cpu", backends={b: None for b in BACKENDS})
        while True:
            msg = self.commands.get()
            cmd = msg["cmd"]
            if cmd == "quit":
                self.emit("bye")
                return 0
            self.cancel.clear()
            if cmd == "setup":
                self.setup(msg["config"])
            elif cmd == "warmup":
                self.emit("warmup_done", variant=msg["variant"], calls=msg["calls"],
                          seconds=0.0)
            elif cmd == "block":
                self.block(msg["variant"], int(msg["round"]), int(msg["half"]),
                           int(msg["iterations"]))
            elif cmd == "late":  # no accuracy, no decomposition: nothing is computed
                if msg.get("decompose"):
                    self.emit("decomposition", variant=msg["decompose"],
                              skipped="synthetic runner")
                for name in msg.get("accuracy", []):
                    self.emit("late_facts", variant=name,
                              facts={"accuracy_error": "synthetic runner"})
                if msg.get("input_sha256", True):
                    self.emit("late_facts", facts={"input_sha256": "0" * 64})
                self.emit("late_done")
            elif cmd == "tail":
                self.emit("tail_done", variant=msg["variant"])
            else:
                self.emit("error", kind="protocol", message=f"unknown command {cmd}",
                          fatal=False)

    def setup(self, config: dict[str, Any]) -> None:
        self._variants = [v["name"] for v in config["variants"]]
        for v in config["variants"]:
            self.emit("variant", name=v["name"], backend=v["backend"], path=v.get("path"),
                      status="ok", kernel=None, phases=PHASES)
        self.emit("ready", input_sha256="0" * 64, device="cpu", gpu=None)

    def block(self, variant: str, round_: int, half: int, iterations: int) -> None:
        slow = 1.0 + 0.1 * (self._variants.index(variant) if variant in self._variants else 0)
        means = [(leaf, m * slow) for leaf, m in LEAF_MEANS.items()]
        noise, n_noise = self._noise, len(self._noise)
        per_slice = max(1, int(self.rate * SLICE_S)) if self.rate > 0 else 256
        start = time.monotonic()
        cols: dict[str, list[float]] = {leaf: [] for leaf in LEAVES}
        total: list[float] = []
        sent, t_first, last_send = 0, None, start
        i = 0
        while i < iterations and not self.cancel.is_set():
            if self.rate > 0:  # paced: never ahead of rate x elapsed
                due = start + i / self.rate
                now = time.monotonic()
                if due > now:
                    time.sleep(due - now)
            end = min(iterations, i + per_slice)
            t_first = t_first or time.monotonic()
            for j in range(i, end):
                k = (self.emitted + j - sent) * 7
                s = 0.0
                for h, (leaf, m) in enumerate(means):
                    x = m * noise[(k + h) % n_noise]
                    cols[leaf].append(x)
                    s += x
                total.append(s)
            i = end
            if time.monotonic() - last_send >= STREAM_CHUNK_S or i >= iterations:
                self._send(variant, round_, half, sent, cols, total, t_first)
                sent, t_first, last_send = i, None, time.monotonic()
                cols, total = {leaf: [] for leaf in LEAVES}, []
        if total:  # cancelled inside a chunk
            self._send(variant, round_, half, sent, cols, total, t_first)
        self.emit("block_done", variant=variant, round=round_, half=half, iterations=i,
                  cancelled=i < iterations, output_sha256="ab" * 32, checksum=0.0,
                  telemetry={"available": False, "reason": "synthetic runner"}, host={})

    def _send(self, variant: str, round_: int, half: int, start: int,
              cols: dict[str, list[float]], total: list[float], t_first: float | None) -> None:
        self.emit("iterations", variant=variant, round=round_, half=half, start=start,
                  phases=cols, total_s=total, t_emit=t_first)
        self.emitted += len(total)
        self._count()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rate", type=float, default=0.0,
                   help="iteration events per second within a block; 0: as fast as it can")
    p.add_argument("--counter", help="file that holds the count of iteration events written")
    args = p.parse_args(argv)
    out = os.fdopen(os.dup(1), "w", buffering=1 << 16, encoding="utf-8")
    os.dup2(2, 1)  # as the real runner: nothing but the protocol on the protocol stream
    sys.stdout = sys.stderr
    return Runner(out, args.rate, args.counter).main()


if __name__ == "__main__":
    sys.exit(main())
