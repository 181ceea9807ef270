"""The runner's engine: inputs, loaded variants, timed blocks, correctness checks.

Everything here runs in the runner process; results leave as protocol events through `emit`.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import torch

from sagetui.core import affinity
from sagetui.core import events as ev
from sagetui.core.config import RunConfig, VariantSpec
from sagetui.core.host_time import drained
from sagetui.core.options import VARLEN_BACKENDS
from sagetui.core.protocol import STREAM_CHUNK_S
from sagetui.core.status_board import StatusBoard
from sagetui.runner.backends import backend_class
from sagetui.runner.backends.base import Backend, Inputs, NullClock, VariantLoadError, tiny_inputs
from sagetui.runner.bandwidth import measure_copy_bandwidth
from sagetui.runner.call_times import CallTimer, UserCallTimes
from sagetui.runner.exact_reference import ExactReference, StartedReference, start_reference
from sagetui.runner.fault_injection import LATE, WARMUP, maybe_inject, maybe_inject_setup
from sagetui.runner.inputs import build_inputs, checksum
from sagetui.runner.kernel_facts import variant_kernel_facts
from sagetui.runner.nvml import gpu_facts
from sagetui.runner.output_checks import OutputChecks, SpecKey, same_bytes, spec_key
from sagetui.runner.provenance import provenance
from sagetui.runner.timing import DEFAULT_CLOCK_HZ, CpuClock, CudaEventClock, gate_stream

# A block's gate before any block of the variant was measured (sized from the warm-up's one
# call) is capped here; sized from a measured block's own host time, at GATE_MAX_S. A block
# whose queue drained is measured again, up to REDOS times, each gate at least twice the last.
GATE_FIRST_MAX_S = 0.05
GATE_MAX_S = 2.0
REDOS = 2
# the call the user makes is warmed by this many calls in its variant's warm-up (its first pays
# the public API's imports, seconds), before its own blocks time it (runner/call_times.py)
USER_CALL_WARMUP = 2

Emit = Callable[[ev.RunnerEventT], None]


class IterationStream:
    """A block's iterations, sent as columns (one `iterations` event) every STREAM_CHUNK_S
    and at the block's end: on the CPU (about 0.1 s a call at the default shape) nearly every
    call is sent as it ends; a fast kernel's thousands of calls go in a few lines."""

    def __init__(self, emit: Emit, variant: str, round_: int, half: int) -> None:
        self.emit, self.variant, self.round, self.half = emit, variant, round_, half
        self.sent = 0
        self._cols: dict[str, list[float]] = {}
        self._total: list[float] = []
        self._since = time.perf_counter()

    def add(self, phases: dict[str, float], flush_due: bool = True) -> None:
        """One iteration's phase times (seconds, by leaf)."""
        if self._total and phases.keys() != self._cols.keys():
            self.flush()  # columns hold the same phases for every iteration
        if not self._total:
            self._cols = {leaf: [] for leaf in phases}
        for leaf, seconds in phases.items():
            self._cols[leaf].append(seconds)
        self._total.append(sum(phases.values()))
        if flush_due and time.perf_counter() - self._since >= STREAM_CHUNK_S:
            self.flush()

    def flush(self) -> None:
        self._since = time.perf_counter()
        if not self._total:
            return
        n = len(self._total)
        self.emit(ev.Iterations(variant=self.variant, round=self.round, half=self.half,
                                start=self.sent, phases=self._cols, total_s=self._total))
        self.sent += n
        self._cols, self._total = {}, []


class TrackingClock:
    """Wraps a clock: publishes the phase about to run to the status board."""

    def __init__(self, inner: Any, leaves: list[str], board: StatusBoard) -> None:
        self.inner, self.leaves, self.board = inner, leaves, board
        self._i = 0

    def start(self) -> None:
        self._i = 0
        self.board.set(self.leaves[0])
        self.inner.start()

    def mark(self, phase: str) -> None:
        self.inner.mark(phase)
        self._i += 1
        if self._i < len(self.leaves):
            self.board.set(self.leaves[self._i])


def resolve_device(requested: str) -> str:
    """cpu, or cuda:N with its index (torch.cuda.set_device needs one)."""
    if requested == "auto":
        requested = "cuda" if torch.cuda.is_available() else "cpu"
    if requested.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ValueError(f"device {requested!r} requested but torch sees no CUDA device")
        index = torch.device(requested).index
        return f"cuda:{torch.cuda.current_device() if index is None else index}"
    return requested


def gpu_info(device: str) -> dict[str, Any] | None:
    if not device.startswith("cuda"):
        return None
    idx = torch.device(device).index or 0
    p = torch.cuda.get_device_properties(idx)
    info: dict[str, Any] = {
        "name": p.name, "index": idx, "capability": f"sm_{p.major}{p.minor}",
        "sm_count": p.multi_processor_count, "memory_bytes": p.total_memory,
        "l2_cache_bytes": getattr(p, "L2_cache_size", None), "cuda": torch.version.cuda,
        "smem_per_sm": getattr(p, "shared_memory_per_multiprocessor", None),
        # which GPU this is, for a calibration's key (session/calibration.py)
        "uuid": str(p.uuid) if getattr(p, "uuid", None) else None,
    }
    info.update(gpu_facts(idx, info["uuid"], os.getpid()))
    return info


class Engine:
    def __init__(self, config: RunConfig, emit: Emit, board: StatusBoard,
                 cancel: threading.Event) -> None:
        self.config = config
        self.emit = emit
        self.board = board
        self.cancel = cancel
        self.device = resolve_device(config.device)
        self.is_gpu = self.device.startswith("cuda")
        self.backends: dict[str, Backend] = {}
        self.inputs: Inputs | None = None
        self._input_sha256: str | None = None  # hashed after the last round (late): 3 s at 1.6 GB
        self._inputs_key: tuple[Any, ...] | None = None
        self._key_of: dict[str, SpecKey] = {}  # variant name -> its code (output_checks.py)
        self.checks = OutputChecks()  # each variant's first output: determinism, byte checks
        self.gpu = self._gpu_info()
        self._enqueue_s: dict[str, float] = {}  # host time per call: the last block's
        self._gpu_s: dict[str, float] = {}  # GPU time per call: the last block's
        self._measured: set[str] = set()  # variants a block has measured those of
        self._primed: set[int] = set()  # backends whose public API had its first call
        # variant -> the call the user makes, bound to the inputs, and what it is
        self._user_calls: dict[str, tuple[Callable[[], Any], str]] = {}
        self._call_timer = CallTimer(self._clock_hz())
        self._input_hashing: Any = None  # the inputs' sha256, hashed during the rounds
        self._peak_bytes: dict[str, int] = {}  # allocator peak of one call (VariantFacts)
        self._first_call_s: dict[SpecKey, float] = {}  # its backend's first call (VariantFacts)
        self._load_s: dict[SpecKey, float] = {}  # its backend's load, kept with it (VariantFacts)
        self._flush: torch.Tensor | None = None
        self._sampler = None
        self._exact: ExactReference | None = None  # fp32 attention, built at first need
        self._exact_started: StartedReference | None = None  # or started at set-up

    def _gpu_info(self) -> dict[str, Any] | None:
        """gpu_info and the copy bandwidth, measured once per run (runner/bandwidth.py)."""
        info = gpu_info(self.device)
        if info is not None:
            info["copy_bandwidth"] = measure_copy_bandwidth(self.device,
                                                            info.get("l2_cache_bytes"))
        return info

    # -- setup ------------------------------------------------------------------------------
    def setup(self, reference: bool = False) -> None:
        """Build the inputs and load the variants; with `reference` (the run's late figures
        will ask for accuracy) the fp32 reference is started first, on a GPU stream of its
        own, so that it runs while the host loads the variants (start_reference)."""
        self._take_thread()
        self._first_call_s = {}  # new backends: their first calls are still to come
        maybe_inject_setup(self.config.shape.q_len)
        self.inputs = build_inputs(self.config, self.device)
        self._input_hashing = None
        self._inputs_key = inputs_key(self.config)
        if reference and self.is_gpu:
            self._exact_started = start_reference(self.inputs)
        for spec in self.config.variants:
            self._load(spec)
        self._ready(reused=False)

    def _take_thread(self) -> None:
        """This thread, which times, on --affinity's CPUs for the run (the threads it starts
        move off them: core/affinity.py), and on the engine's GPU."""
        affinity.pin_timing_thread(self.config.affinity)
        if self.is_gpu:
            torch.cuda.set_device(torch.device(self.device).index)

    def same_inputs(self, config: RunConfig) -> bool:
        """Whether `config` runs on this engine's inputs (and device): a warm runner's next run
        then keeps them (reconfigure)."""
        return self.inputs is not None and config.device == self.config.device \
            and inputs_key(config) == self._inputs_key

    def reconfigure(self, config: RunConfig) -> None:
        """Set up again for `config`, on these inputs (same_inputs): the inputs, their fp32
        reference, the variants whose code is unchanged (loaded, with their first outputs) are
        kept; the others are loaded."""
        loaded = {self._key_of[name]: be for name, be in self.backends.items()}
        self.config = config
        self._take_thread()
        self.backends, self._key_of = {}, {}
        for spec in config.variants:
            be = loaded.get(spec_key(spec))
            if be is None:
                self._load(spec)
            else:
                self._loaded(spec, be)
        self.checks.new_run(self._key_of.values())
        self.gpu = self._gpu_info()  # the GPU's state now (other processes, clocks)
        self._ready(reused=True)

    def resume(self, config: RunConfig, reference: bool = False) -> None:
        """Take this kept set-up up again (a workload's call in its next turn: Setup.keep):
        its inputs, variants, first outputs and gates as its last round left them; `config`
        may name fewer variants (one failed since). With `reference`, its fp32 reference is
        started now where it has none yet."""
        self.config = config
        self._take_thread()
        if reference and self.is_gpu and self._exact is None and self._exact_started is None:
            assert self.inputs is not None
            self._exact_started = start_reference(self.inputs)
        self._ready(reused=True)

    def _ready(self, *, reused: bool) -> None:
        self._flush = None
        if self.config.cold and self.is_gpu and self.gpu and self.gpu.get("l2_cache_bytes"):
            self._flush = torch.empty(int(self.gpu["l2_cache_bytes"]), dtype=torch.uint8,
                                      device=self.device)
        if self._sampler is None:
            self._sampler = self._make_sampler()
        self.emit(ev.Ready(input_sha256=self._input_sha256, device=self.device, gpu=self.gpu,
                           reused_inputs=reused))

    def _make_sampler(self):
        try:
            from sagetui.runner.telemetry import TelemetrySampler

            idx = (self.gpu or {}).get("index", 0) if self.is_gpu else None
            return TelemetrySampler(idx) if idx is not None else None
        except Exception:
            return None

    def _load(self, spec: VariantSpec) -> None:
        try:
            cls = backend_class(spec.backend)
            if self.config.shape.seqlens and spec.backend not in VARLEN_BACKENDS:
                # a workload's varlen call: run honestly per sequence or not at all
                raise VariantLoadError(f"{spec.backend} runs no packed sequences (those that "
                                       f"do: {', '.join(VARLEN_BACKENDS)})")
            cls.check_available(self.device)
            t = time.perf_counter()
            be = cls(options=dict(spec.options), module_path=spec.path, variant_name=spec.name)
            be.load()
            self._load_s[spec_key(spec)] = time.perf_counter() - t
            if spec.path and cls.load is Backend.load:  # never run the stock code under its name
                raise VariantLoadError(f"{spec.backend} loads no extension module, so "
                                       f"{spec.path} would be ignored")
        except Exception as exc:
            self.emit(ev.VariantLoaded(name=spec.name, backend=spec.backend, path=spec.path,
                                       status="failed", error=f"{type(exc).__name__}: {exc}"))
            return
        self._loaded(spec, be)

    def _loaded(self, spec: VariantSpec, be: Backend) -> None:
        self.backends[spec.name] = be
        self._key_of[spec.name] = spec_key(spec)
        self.emit(ev.VariantLoaded(name=spec.name, backend=spec.backend, path=spec.path,
                                   status="ok", kernel=be.kernel,
                                   phases=[(p.name, p.parent) for p in be.phases()],
                                   facts=self._load_facts(be, spec_key(spec))))

    def _load_facts(self, be: Backend, key: SpecKey) -> dict[str, Any]:
        """Its provenance, the wall time its load took (its backend built and its modules
        imported, in this runner: a warm runner's kept backend keeps its figure), and its
        main-loop kernel's facts from its binary (runner/kernel_facts.py: a module is read once
        per runner)."""
        prov = provenance(be)
        facts: dict[str, Any] = {"provenance": prov}
        if key in self._load_s:
            facts["load_s"] = self._load_s[key]
        if self.is_gpu:
            facts["kernel_facts"] = variant_kernel_facts(be, self.config, self.gpu, prov)
        return facts

    # -- timed work -------------------------------------------------------------------------
    def _call(self, be: Backend, clock: Any) -> torch.Tensor:
        assert self.inputs is not None
        return be.run(self.inputs, clock)

    def _sync(self, dev: Any = None) -> None:
        if self.is_gpu:
            torch.cuda.synchronize()
        elif dev is not None:
            dev.cuda.synchronize()

    def _device(self, be: Backend) -> Any:
        """What the variant's calls are enqueued on and timed with (torch, whose torch.cuda
        calls the timed path makes; or a simulated device's stream, runner/timing.SimStream),
        or None: the CPU's clock around each call."""
        return torch if self.is_gpu else be.stream

    def _hash_inputs_soon(self, variant: str) -> None:
        """The inputs' sha256 (3 s at 1.6 GB), a late figure ready when asked for: copied to
        the host at the baseline's warm-up, before its first call (the copy's page-locked
        buffer costs the host most of a second the first time, which the reference started at
        set-up overlaps), and hashed on the hashing thread during the rounds, as the outputs'
        are (docs/architecture.md, "Late figures")."""
        if variant != self.config.baseline_name or self.inputs is None \
                or self._input_sha256 is not None or self._input_hashing is not None:
            return
        i = self.inputs
        self._input_hashing = self.checks.hash_later(i.q, i.k, i.v)

    def _prime_public_now(self, variant: str, be: Backend) -> None:
        """The public API's first call costs seconds of imports (torch's custom ops): paid in
        the baseline's warm-up, on tiny inputs, after its first call, so that the decomposition
        check after the last round costs its kernels (docs/architecture.md, "Late
        figures")."""
        if variant != self.config.baseline_name or self.inputs is None:
            return
        if not be.has_public or id(be) in self._primed:
            return
        self._primed.add(id(be))
        self.board.set("warm-up: the public API's first call")
        with contextlib.suppress(Exception):  # the decomposition check says what is wrong
            be.public(tiny_inputs(self.inputs))
        self._sync(self._device(be))

    def _reference_done(self) -> None:
        """The reference started at set-up, finished: nothing is timed while its stream shares
        the GPU."""
        if self._exact_started is not None:
            self._exact = self._exact_started.wait()
            self._exact_started = None

    def warmup(self, variant: str, calls: int) -> None:
        self._hash_inputs_soon(variant)
        self._reference_done()
        be = self._backend(variant)
        self.board.variant, self.board.round = variant, -1
        maybe_inject(variant, WARMUP)
        t0 = time.perf_counter()
        out = None
        dev = self._device(be)
        for i in range(calls):
            self.board.iteration = i
            self.board.set("warmup")
            first = self._key_of[variant] not in self._first_call_s
            t = time.perf_counter()
            out = self._call(be, NullClock())
            if first:  # what its backend pays once (imports, JIT, handles), synchronised
                self._sync(dev)
                self._first_call_s[self._key_of[variant]] = time.perf_counter() - t
        self._sync(dev)
        self._prime_public_now(variant, be)
        self._warm_user_call(variant, be, dev)
        if dev is not None:  # host time to enqueue one call and its GPU time: the first gate
            clk = CudaEventClock(be.leaves(), dev)
            if self.is_gpu:
                held = torch.cuda.memory_allocated()
                torch.cuda.reset_peak_memory_stats()
            t = time.perf_counter()
            out = self._call(be, clk)
            self._enqueue_s[variant] = time.perf_counter() - t
            self._sync(dev)
            self._gpu_s[variant] = sum(clk.result().values())
            if self.is_gpu:
                self._peak_bytes[variant] = torch.cuda.max_memory_allocated() - held
        seconds = time.perf_counter() - t0
        key = self._key_of[variant]
        if out is not None and not self.checks.has_first(key):  # its checks, before the rounds
            self.board.set("checking output")
            self.checks.remember(key, out, partial(self._first_output_facts, variant),
                                 be.last_lse)
        self.emit(ev.WarmupDone(variant=variant, calls=calls, seconds=seconds))

    def _warm_user_call(self, variant: str, be: Backend, dev: Any) -> None:
        """The call the user makes (Backend.user_call), bound to the inputs and called
        USER_CALL_WARMUP times: its first call pays what a public API pays once. One that fails
        is replaced by the decomposition, and its name says why."""
        assert self.inputs is not None
        self.board.set("warm-up: the call the user makes")
        call, name = be.user_call(self.inputs)
        try:
            for _ in range(USER_CALL_WARMUP if dev is not None else 0):
                call()
            self._sync(dev)
            if be.module_path is None and be.has_public:
                self._primed.add(id(be))
        except Exception as exc:  # noqa: BLE001 - its decomposition is timed instead, said so
            call = partial(be.run, self.inputs, NullClock())
            name = (f"the decomposition ({name} failed: {type(exc).__name__}: "
                    f"{str(exc)[:120]})")
        if dev is None:  # the CPU: its back-to-back time is its rounds' own loop
            name = f"{name}, timed in its rounds' own loop (on a CPU each call is synchronous)"
        self._user_calls[variant] = (call, name)

    def _backend(self, variant: str) -> Backend:
        if variant not in self.backends:
            raise KeyError(f"variant {variant!r} is not loaded")
        return self.backends[variant]

    def block(self, variant: str, round_: int, half: int, iterations: int) -> None:
        self._reference_done()  # a run without a warm-up
        be = self._backend(variant)
        leaves = be.leaves()
        self.board.variant, self.board.round, self.board.iteration = variant, round_, 0
        self.board.set(leaves[0])  # an injected fault surfaces in the first phase
        maybe_inject(variant, round_)
        host: dict[str, float] = {}  # where the block's host time goes (harness overhead)
        t = time.perf_counter()
        if self._sampler:
            self._sampler.start()
        host["telemetry_start_s"] = time.perf_counter() - t
        done = 0
        out = None
        stream = IterationStream(self.emit, variant, round_, half)
        dev = self._device(be)
        timed: dict[str, Any] = {}
        if dev is not None:
            clocks, timed = self._gated(be, dev, variant, leaves, iterations, host)
            for clk in clocks:  # read after the one synchronise: sent as one event
                stream.add(clk.result(), flush_due=False)
            done = len(clocks)
            out = timed.pop("out")
            # the sampler's thread stops before the call's own blocks, which hold nothing but
            # the calls (its NVML reads would take the GIL whenever a launch lets it go)
            telemetry = self._stop_sampler(host)
            if done and half == 0 and not self.cancel.is_set():  # once a round
                got = self._call_times(variant, dev)  # its redo and drained flag join the block's
                timed.update(host_call_s=got.host_s, call_gpu_s=got.gpu_s,
                             back_to_back_s=got.back_to_back_s,
                             redone=timed["redone"] + got.redone,
                             drained=timed["drained"] or got.drained)
        else:
            t = time.perf_counter()
            for i in range(iterations):
                if self.cancel.is_set():
                    break
                self.board.iteration = i
                cpu = CpuClock(leaves)
                out = self._call(be, TrackingClock(cpu, leaves, self.board))
                stream.add(cpu.result())
                done += 1
            if done:  # the CPU's loop is a hot loop: its wall time per call
                timed["back_to_back_s"] = (time.perf_counter() - t) / done
            telemetry = self._stop_sampler(host)
        stream.flush()
        self.board.set("checking output")
        facts: dict[str, Any] = {}
        if out is not None:
            t = time.perf_counter()
            facts = self._output_facts(variant, out)
            host["output_checks_s"] = time.perf_counter() - t
        self.emit(ev.BlockDone(variant=variant, round=round_, half=half, iterations=done,
                               cancelled=done < iterations, telemetry=telemetry, host=host,
                               **timed, **facts))

    def _stop_sampler(self, host: dict[str, float]) -> dict[str, Any]:
        t = time.perf_counter()
        telemetry = self._sampler.stop() if self._sampler else {
            "available": False, "reason": "no GPU: telemetry is NVML's"}
        host["telemetry_stop_s"] = time.perf_counter() - t
        return telemetry

    def _gated(self, be: Backend, dev: Any, variant: str, leaves: list[str], iterations: int,
               host: dict[str, float]) -> tuple[list[CudaEventClock], dict[str, Any]]:
        """The block's iterations behind a gate, timed by events; measured again with a longer
        gate while its queue drained (core/host_time.drained), up to REDOS times; a block still
        drained after them is kept and said to be (`drained`). Its clocks and what it measured
        (host time per call, redos)."""
        gate = self._gate_s(variant, iterations)
        redone = 0
        while True:
            clocks, host_each, intervals, out = self._gated_pass(be, dev, leaves, iterations,
                                                                 gate, host)
            if host_each:  # the next block's gate is sized from this block's own host time
                self._enqueue_s[variant] = sum(host_each) / len(host_each)
                self._gpu_s[variant] = min(sum(c.result().values()) for c in clocks)
                self._measured.add(variant)
            gone = len(clocks) < iterations or self.cancel.is_set()
            if gone or not drained(intervals) or redone >= REDOS:
                break
            redone += 1
            gate = min(GATE_MAX_S, max(2 * gate, self._gate_s(variant, iterations)))
        host["gate_s"] = gate
        timed: dict[str, Any] = {"out": out, "redone": redone,
                                 "drained": bool(not gone and drained(intervals))}
        return clocks, timed

    def _gated_pass(self, be: Backend, dev: Any, leaves: list[str], iterations: int,
                    gate: float, host: dict[str, float]
                    ) -> tuple[list[CudaEventClock], list[float], list[tuple[float, float]], Any]:
        """One pass of the block: the gate, each call enqueued (its host time: perf_counter
        around its enqueue, the device kept busy by the gate), one synchronise. Its clocks,
        each call's host time, each call's (start, end) on the device's clock, the last
        output."""
        clocks: list[CudaEventClock] = []
        host_each: list[float] = []
        out = None
        t = time.perf_counter()
        gate_stream(dev, gate, self._clock_hz())
        for i in range(iterations):
            if self.cancel.is_set():
                break
            self.board.iteration = i
            if self._flush is not None:
                self._flush.zero_()  # evict L2 outside the timed region
            clk = CudaEventClock(leaves, dev)
            h = time.perf_counter()
            out = self._call(be, TrackingClock(clk, leaves, self.board))
            host_each.append(time.perf_counter() - h)
            clocks.append(clk)
        host["enqueue_s"] = time.perf_counter() - t
        t = time.perf_counter()
        self._sync(dev)
        host["sync_wait_s"] = time.perf_counter() - t
        # the gaps between calls hold the L2 flush in cold mode: not idle, yet not the calls'
        # time either; only a warm block's are tested
        intervals = [] if self._flush is not None or not clocks else \
            [c.span(clocks[0].first_event) for c in clocks]
        return clocks, host_each, intervals, out

    def _call_times(self, variant: str, dev: Any) -> UserCallTimes:
        """The call the user makes, timed in blocks of its own (runner/call_times.py)."""
        self.board.set("the call the user makes")
        return self._call_timer.measure(dev, variant, self._user_calls[variant][0],
                                        self._enqueue_s.get(variant, 1e-3),
                                        self._gpu_s.get(variant, 0.0))

    def _gate_s(self, variant: str, iterations: int) -> float:
        """How long to hold the stream so the host can enqueue the block ahead of the GPU: the
        host's deficit over the block (enqueue time beyond the GPU time, per call) plus two
        calls' worth of margin. Long kernels need almost none; a 0.05 ms kernel whose launch
        costs 0.1 ms needs about iterations x 0.05 ms. Sized from the variant's last block's
        own host time (capped at GATE_MAX_S), or before its first block from the warm-up's one
        call (capped at GATE_FIRST_MAX_S: a drained first block is measured again)."""
        enqueue = self._enqueue_s.get(variant, 1e-3)
        gpu = self._gpu_s.get(variant, 0.0)
        cap = GATE_MAX_S if variant in self._measured else GATE_FIRST_MAX_S
        return min(cap, iterations * max(0.0, enqueue - gpu) + 2 * enqueue)

    def _clock_hz(self) -> float:
        mhz = (self.gpu or {}).get("max_sm_clock_mhz")
        return float(mhz) * 1e6 if mhz else DEFAULT_CLOCK_HZ

    def _output_facts(self, variant: str, out: torch.Tensor) -> dict[str, Any]:
        """Hash, checksum and the difference from the baseline's output, outside the timed
        region (output_checks.py keeps them off the rounds' path)."""
        return self.checks.facts(variant, self._key_of[variant], out,
                                 self._key_of.get(self.config.baseline_name),
                                 partial(self._first_output_facts, variant),
                                 self._backend(variant).last_lse)

    def _first_output_facts(self, variant: str, out: torch.Tensor) -> dict[str, Any]:
        """Once per variant, outside the timed regions: what its backend says about the call
        (sdpa: which backend torch ran) and its peak memory. Its accuracy is a late figure."""
        assert self.inputs is not None
        facts: dict[str, Any] = dict(self._backend(variant).facts(self.inputs, out))
        if variant in self._peak_bytes:
            facts["peak_memory_bytes"] = self._peak_bytes[variant]
        if variant in self._user_calls:
            facts["timed_call"] = self._user_calls[variant][1]
        if self._key_of[variant] in self._first_call_s:
            facts["first_call_s"] = self._first_call_s[self._key_of[variant]]
        self._sync()
        return facts

    # -- the late figures: after the last round, nothing timed beside them ----------------------
    def late(self, accuracy: list[str], decompose: str | None, input_sha256: bool) -> None:
        """The figures no verdict needs (docs/architecture.md, "Late figures"), each sent as
        soon as it is known, overlapped where they use different parts of the machine: the
        public API's first-call imports (a thread, CPU) and the inputs' sha256 (a thread, CPU)
        run while the fp32 reference runs on the GPU. A cancel stops between figures."""
        assert self.inputs is not None
        self.board.variant, self.board.round = decompose or "", -1
        # The priming thread holds the GIL for seconds of imports; this thread's kernel
        # launches would wait up to the default 5 ms each for it (measured on an H200: the
        # accuracy of a 1 x 8192 x 16 call came 2.9 s late). A short switch interval while
        # both run keeps this thread's figures coming as soon as the GPU has them.
        switch = sys.getswitchinterval()
        sys.setswitchinterval(1e-4)
        try:
            priming = self._prime_public(decompose) if decompose is not None else None
            hashing = None
            if input_sha256 and self._input_sha256 is None:
                self.board.set("hashing the inputs")
                i = self.inputs
                hashing = self._input_hashing or self.checks.hash_later(i.q, i.k, i.v)
            for name in accuracy:
                self.board.variant = name
                self.board.set("accuracy")
                maybe_inject(name, LATE, self.cancel)
                if self.cancel.is_set():
                    break
                facts = self._accuracy(name)
                if facts:
                    self.emit(ev.LateFacts(variant=name, facts=facts))
            if hashing is not None and not self.cancel.is_set():
                self.board.set("hashing the inputs")
                self._input_sha256 = hashing.result()
                self.emit(ev.LateFacts(facts={"input_sha256": self._input_sha256}))
            if decompose is not None and not self.cancel.is_set():
                if priming is not None:
                    self.board.set("decomposition check: the public API's first call")
                    priming.join()
                self.emit(self._decomposition(decompose))
        finally:
            sys.setswitchinterval(switch)
        self.emit(ev.LateDone(cancelled=self.cancel.is_set()))

    def _accuracy(self, variant: str) -> dict[str, Any]:
        """The variant's first output against fp32 attention of the inputs (the reference is
        computed once, at its first need, and kept with the inputs); {} without an output."""
        assert self.inputs is not None
        first = self.checks.first_of(self._key_of.get(variant))
        if first is None:
            return {}
        if first.accuracy is None:
            try:
                self._reference_done()
                if self._exact is None:
                    self._exact = ExactReference(self.inputs)
                first.accuracy = {"accuracy": self._exact.compare(
                    first.tensor, self.inputs.layout, first.lse)}
            except Exception as exc:  # out of memory for the reference: say so, keep the rest
                first.accuracy = {"accuracy_error": f"{type(exc).__name__}: {exc}"[:300]}
        return dict(first.accuracy)

    def _prime_public(self, variant: str) -> threading.Thread | None:
        """The public API's first call costs seconds that are not GPU work (on an H200 its
        custom ops import torch._dynamo and sympy: 5.7 s, against 0.13 s of kernels): paid on
        tiny inputs on a thread while the reference runs, so that the real call, after it on
        this thread, costs its kernels."""
        be = self.backends.get(variant)
        if be is None or not be.has_public or self.inputs is None or id(be) in self._primed:
            return None
        tiny = tiny_inputs(self.inputs)

        def prime() -> None:
            affinity.release()
            with contextlib.suppress(Exception):  # the real call says what is wrong
                be.public(tiny)

        t = threading.Thread(target=prime, name="sagetui-public-api", daemon=True)
        t.start()
        return t

    def _decomposition(self, variant: str) -> ev.Decomposition:
        be = self._backend(variant)
        assert self.inputs is not None
        self.board.variant = variant
        self.board.set("decomposition check")
        pub = be.public(self.inputs)
        if pub is None:
            return ev.Decomposition(
                variant=variant, skipped=f"{be.name} has no separate public API to compare with")
        dec = self._call(be, NullClock())
        self._sync()
        d = (dec.float() - pub.float()).abs()
        # a hash is taken only of bytes not hashed before (1 s a 0.5 GB output on a host that
        # hashes 0.5 GB/s): the decomposition's output is most often its first output's, whose
        # hash the rounds have, and the public API's most often the decomposition's
        first = self.checks.first_of(self._key_of[variant])
        if first is not None and first.lse is None and same_bytes(first.tensor, dec):
            dec_sha = first.sha256
        else:
            dec_sha = self.checks.hash_later(dec)
        pub_sha = dec_sha if same_bytes(dec, pub) else self.checks.hash_later(pub)
        return ev.Decomposition(
            variant=variant, equal=bool(torch.equal(dec, pub)), max_abs=float(d.max().item()),
            mean_abs=float(d.mean().item()), decomposed_sha256=dec_sha.result(),
            public_sha256=pub_sha.result(), manual_checksum=checksum(dec),
            reference_checksum=checksum(pub))


def inputs_key(config: RunConfig) -> tuple[Any, ...]:
    """What a run's inputs are made from: two configurations with the same key have the same
    inputs (a file's size and modification time stand for its bytes)."""
    stamp = None
    if config.inputs_path:
        st = os.stat(config.inputs_path)
        stamp = st.st_size, st.st_mtime_ns
    return config.shape.model_dump_json(), config.seed, config.inputs_path, stamp

