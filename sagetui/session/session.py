"""The Session: one benchmark run from spawn to report.

It spawns the runner, sets it up, warms every variant up, runs rounds in ABBA/BAAB order,
collects every event, updates verdicts after each round, writes the recovery file after each
round (for at most a tenth of the time: AUTOSAVE_MAX_SHARE) and at the end, and survives a
runner that dies or hangs: the fault is recorded with the variant and phase that were running
and the runner's last stderr lines, the completed rounds are kept, and a new runner goes on
without the failed variant.

`run()` blocks; call it from a worker thread. `cancel()`, `set_enabled()` and `set_baseline()`
are thread-safe and take effect between iterations (cancel) or at the next round (the others).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sagetui.core import verdict as vd
from sagetui.core.config import RunConfig, resolve_auto
from sagetui.core.io import save_report
from sagetui.core.report import Fault, Report

from .collect import Collector
from .recovery_writer import RecoveryWriter
from .runner_client import RunnerClient, RunnerGone
from .schedule import round_order

SETUP_TIMEOUT_S = 600.0  # loading a cold CUDA context and building 3 x 1.6 GB inputs
# The recovery file holds every raw sample: with 10^6 of them, building and writing it takes
# seconds of the GIL that the console and this session's thread need. A round's autosave is
# skipped while the last one is still being written or while autosaves have taken more than
# this share of the time since; the end of the run always writes it.
AUTOSAVE_MAX_SHARE = 0.1


@dataclass
class SessionEvent:
    # hello variant ready warmup iteration block round decomposition tail fault log finished
    kind: str
    data: dict[str, Any] = field(default_factory=dict)


def _warm_imports() -> None:
    try:
        import scipy.special  # noqa: F401
    except ImportError:
        pass


class NotRunnable(Exception):
    """Nothing in the configuration can run on this machine (the runner's hello says why):
    the run stops before any setup, and no report is made."""


class SetupFailed(RuntimeError):
    """The runner's error event in answer to a setup (kind "oom", "exception"...)."""

    def __init__(self, event: dict[str, Any]) -> None:
        super().__init__(f"runner setup failed: {event.get('message')}")
        self.event = event


class RunnerFault(Exception):
    def __init__(self, gone: RunnerGone) -> None:
        super().__init__(gone.message)
        self.gone = gone


class Session:
    def __init__(self, config: RunConfig, *,
                 on_event: Callable[[SessionEvent], None] | None = None,
                 recovery_path: str | Path | None = None, python: str | None = None,
                 runner_argv: list[str] | None = None,
                 runner_env: dict[str, str] | None = None) -> None:
        self.config = config
        self.on_event = on_event or (lambda e: None)
        self.recovery_path = Path(recovery_path) if recovery_path else None
        self.collector = Collector(config)
        self._python = python
        self._runner_argv = runner_argv
        self._runner_env = runner_env
        self._lock = threading.Lock()
        self._cancel = threading.Event()
        self._enabled = {v.name: True for v in config.variants}
        self._warm: set[str] = set()
        self.client: RunnerClient | None = None
        self.round = -1
        self.started = time.monotonic()
        self.round_durations: list[float] = []
        self._saver = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sagetui-autosave")
        self._saving = False  # a round's autosave is queued or being written
        self._next_save = 0.0  # monotonic: no round's autosave before this
        # why the last recovery write failed (None: the file holds the latest report)
        self.recovery_error: str | None = None
        self._writer: RecoveryWriter | None = None  # started by the first autosave

    # -- thread-safe controls -----------------------------------------------------------------
    def cancel(self) -> None:
        self._cancel.set()
        client = self.client
        if client is not None:
            client.send("cancel")

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def set_enabled(self, variant: str, enabled: bool) -> None:
        with self._lock:
            if variant in self._enabled:
                self._enabled[variant] = enabled

    def enabled(self) -> dict[str, bool]:
        with self._lock:
            return dict(self._enabled)

    def set_baseline(self, variant: str) -> None:
        with self._lock:
            if variant in self.collector.variants:
                self.collector.baseline = variant

    def report(self) -> Report:
        with self._lock:
            return self.collector.report()

    # -- the run --------------------------------------------------------------------------------
    def _emit(self, _kind: str, /, **data: Any) -> None:
        # positional-only: fault events carry a "kind" field of their own
        try:
            self.on_event(SessionEvent(_kind, data))
        except Exception as exc:  # a display that fails must not lose the measurements
            if not any(f.kind == "display" for f in self.collector.faults):
                self.collector.faults.append(Fault(
                    kind="display", message=f"the event handler failed on a {_kind} event: "
                                            f"{type(exc).__name__}: {exc}"[:500]))

    def run(self) -> Report:
        # scipy (the verdicts' t quantiles, drift) takes most of a second to import: load it
        # while the runner starts rather than between the first rounds
        threading.Thread(target=_warm_imports, name="sagetui-imports", daemon=True).start()
        try:
            self._measure()
        except NotRunnable:
            raise  # nothing was measured: no report, no recovery file (finally stops the runner)
        except RunnerFault as f:
            self.collector.status = "failed"
            self._fault(f.gone, None, None)
        except Exception as exc:  # never lose what was measured
            self.collector.status = "failed"
            self.collector.faults.append(Fault(kind="session",
                                               message=f"{type(exc).__name__}: {exc}"))
            self._emit("fault", kind="session", message=f"{type(exc).__name__}: {exc}")
        finally:
            if self.client:
                self.client.stop()
                self.client = None
            self._saver.shutdown(wait=True)  # the last round's autosave lands before the final
        report = self.report()
        self._autosave(report)
        if self._writer is not None:
            self._writer.close()
        self._emit("finished", status=self.collector.status, report=report)
        return report

    def _measure(self) -> None:
        """Everything between the runner's start and the report (a sweep measures points)."""
        self._start_runner()
        self._run_rounds()
        if not self._cancel.is_set() and self.collector.active():
            self._post_run()
        self.collector.status = "cancelled" if self._cancel.is_set() else (
            "complete" if self.collector.completed_rounds else "failed")

    def _run_rounds(self) -> None:
        r = 0
        while not self._cancel.is_set() and self._more_rounds(r):
            if not self._run_round(r):
                break
            r += 1

    def set_until_ci(self, target_percent: float | None) -> None:
        """Adaptive stopping from now on (None: back to the fixed number of rounds)."""
        with self._lock:
            self.config = self.config.model_copy(update={"until_ci_percent": target_percent})

    def _more_rounds(self, r: int) -> bool:
        """With --until-ci: at least 2 rounds (an interval needs them), at most --max-rounds
        (default: the larger of --rounds and 50)."""
        with self._lock:
            cfg = self.config
        if not self.collector.active():
            return False
        if cfg.until_ci_percent is None:
            return r < cfg.rounds
        if r >= cfg.round_limit:
            return False
        if r < 2:
            return True
        verdicts = list(self.collector.verdicts().values())
        return not (verdicts and vd.should_stop(verdicts, cfg.until_ci_percent))

    def _start_runner(self, exclude: set[str] | None = None) -> None:
        self._spawn()
        if exclude is None:
            self._refuse_unrunnable()
        self._setup(exclude)

    def _refuse_unrunnable(self) -> None:
        """NotRunnable when the runner's hello says no variant's backend can run here."""
        backends = self.collector.hello.get("backends") or {}
        why = {v.name: backends.get(v.backend) for v in self.config.variants}
        if why and all(why.values()):
            raise NotRunnable("nothing can run here: " + "; ".join(
                f"{v.spec}: {why[v.name]}" for v in self.config.variants))

    def _spawn(self) -> None:
        self.client = RunnerClient(python=self._python, argv=self._runner_argv,
                                   env=self._runner_env)
        hello = self._expect("hello", SETUP_TIMEOUT_S)
        if self.config.auto or self.config.auto_shape:  # now we know what this machine has
            self.config = resolve_auto(self.config, hello["device"], hello["backends"])
            chosen = self.collector.baseline  # set before the run: it outlives the rebuild
            self.collector = c = Collector(self.config)
            if chosen in c.variants:
                c.baseline = chosen
            self._enabled = {v.name: self._enabled.get(v.name, True)
                             for v in self.config.variants}
        self.collector.hello = hello
        self._emit("hello", **hello)

    def _setup(self, exclude: set[str] | None = None) -> None:
        """Set the runner up for self.config (a runner set up before drops its inputs first);
        SetupFailed when the runner refuses (out of memory building inputs, a bad shape)."""
        c = self.collector
        assert self.client is not None
        variants = [v for v in self.config.variants if v.name not in (exclude or set())
                    and c.variants[v.name].status in ("pending", "ok")]
        cfg = self.config.model_copy(update={"variants": variants}) if variants else self.config
        self.client.send("setup", config=cfg.model_dump(mode="json"))
        self._warm.clear()
        while True:
            ev = self._expect(("variant", "ready", "error"), SETUP_TIMEOUT_S)
            if ev["event"] == "variant":
                with self._lock:
                    c.on_variant(ev)
                if ev["status"] != "ok":
                    c.faults.append(Fault(kind="variant", message=ev.get("error") or "failed",
                                          variant=ev["name"]))
                self._emit("variant", **ev)
            elif ev["event"] == "ready":
                c.ready = ev
                self._emit("ready", **ev)
                return
            else:
                raise SetupFailed(ev)

    def _expect(self, kinds: str | tuple[str, ...], timeout: float) -> dict[str, Any]:
        kinds = (kinds,) if isinstance(kinds, str) else kinds
        assert self.client is not None
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                ev = self.client.next_event(timeout=max(0.0, left))
            except queue.Empty:
                self.client.kill()
                raise RunnerFault(self.client.gone("hung")) from None
            if ev is None:
                raise RunnerFault(self.client.gone())
            if ev["event"] in kinds:
                return ev
            if ev["event"] == "error":
                self._emit("log", message=ev.get("message", ""))

    def _run_round(self, r: int) -> bool:
        """Run round r; True to go on."""
        c = self.collector
        self.round = r
        t0 = time.monotonic()
        with self._lock:
            names = [n for n in c.active() if self._enabled.get(n, True)]
        if not names:
            self._emit("log", message="no variant is enabled: pausing the run")
            return False
        for name in names:
            if name not in self._warm and not self._warmup(name):
                return not self._cancel.is_set()
        self._emit("round", phase="start", round=r, variants=names)
        failed: set[str] = set()
        for name, half, n in round_order(names, r, self.config.iterations):
            if self._cancel.is_set():
                return False
            if name in failed or self.collector.variants[name].status != "ok":
                continue
            if name not in self._warm and not self._warmup(name):  # after a runner restart
                failed.add(name)
                continue
            ok = self._block(name, r, half, n)
            if ok is None:
                return False  # cancelled
            if not ok:
                failed.add(name)
        with self._lock:
            c.complete_round(r, [n for n in names if n not in failed])
        self.round_durations.append(time.monotonic() - t0)
        self._emit("round", phase="done", round=r, verdicts=c.analysis().verdict_dicts())
        if self.recovery_path is not None and not self._saving \
                and time.monotonic() >= self._next_save:
            # building and writing the report overlaps the next round's blocks instead of
            # holding the runner idle
            self._saving = True
            self._saver.submit(self._round_autosave)
        return True

    def _round_autosave(self) -> None:
        t0 = time.monotonic()
        try:
            self._autosave(self.report())
        finally:
            took = time.monotonic() - t0
            self._next_save = time.monotonic() + took * (1 / AUTOSAVE_MAX_SHARE - 1)
            self._saving = False

    def _warmup(self, name: str) -> bool:
        assert self.client is not None
        self.client.send("warmup", variant=name, calls=self.config.warmup)
        try:
            ev = self._wait_for(name, ("warmup_done",), self.config.watchdog_s
                                + self.config.warmup * self.config.watchdog_s)
        except RunnerFault as f:
            self._runner_failed(f.gone, name, None)
            return False
        if ev is None:
            return False
        self._warm.add(name)
        self._emit("warmup", **ev)
        return True

    def _block(self, name: str, r: int, half: int, n: int) -> bool | None:
        assert self.client is not None
        self.client.send("block", variant=name, round=r, half=half, iterations=n)
        try:
            ev = self._wait_for(name, ("block_done",), self.config.watchdog_s)
        except RunnerFault as f:
            self._runner_failed(f.gone, name, r)
            return False
        if ev is None:
            return False
        if ev.get("cancelled"):
            return None
        return True

    def _wait_for(self, name: str, kinds: tuple[str, ...], watchdog: float) -> dict | None:
        """Stream events until one of `kinds`; None if the variant failed with an error event.
        The watchdog restarts with every event, so a long block that streams is never hung."""
        c = self.collector
        assert self.client is not None
        while True:
            try:
                ev = self.client.next_event(timeout=watchdog)
            except queue.Empty:
                self.client.kill()
                raise RunnerFault(self.client.gone("hung")) from None
            if ev is None:
                raise RunnerFault(self.client.gone())
            kind = ev["event"]
            if ev.get("nonfinite"):
                self._nonfinite(ev)
            if kind == "iteration":
                with self._lock:
                    c.on_iteration(ev)
                self._emit("iteration", **ev)
            elif kind == "block_done":
                with self._lock:
                    c.on_block(ev)
                self._emit("block", **ev)
            elif kind == "error":
                self._variant_error(ev)
                if ev.get("fatal"):
                    self.client.proc.wait(timeout=10)
                    self._restart(exclude={ev.get("variant") or name})
                return None
            if kind in kinds:
                return ev

    def _nonfinite(self, ev: dict[str, Any]) -> None:
        """A kernel's output with NaN or Inf: the timings stand, the output facts that are not
        numbers are dropped, and a fault (once per variant and event) says so."""
        name, kind = ev.get("variant"), ev["event"]
        if any(f.kind == "nonfinite" and f.variant == name and kind in f.message
               for f in self.collector.faults):
            return
        fault = Fault(kind="nonfinite", variant=name, round=ev.get("round"),
                      message=f"the output holds NaN or Inf ({kind}: "
                              f"{', '.join(ev['nonfinite'])} not finite); the timings are kept")
        self.collector.faults.append(fault)
        self._emit("fault", **fault.model_dump())

    def _variant_error(self, ev: dict[str, Any]) -> None:
        c = self.collector
        name = ev.get("variant")
        fault = Fault(kind=ev.get("kind", "error"), message=ev.get("message", ""),
                      variant=name, phase=ev.get("phase"),
                      round=self.round if self.round >= 0 else None,
                      stderr_tail=(ev.get("traceback") or "").splitlines()[-8:])
        with self._lock:
            if name in c.variants:
                c.variants[name].status = "failed"
                c.variants[name].error = ev.get("message")
            c.faults.append(fault)
        # the fault's fields (stderr_tail included, for every display) and the event's own
        self._emit("fault", **{**{k: v for k, v in ev.items() if k != "event"},
                               **fault.model_dump()})

    def _runner_failed(self, gone: RunnerGone, name: str, r: int | None) -> None:
        if self._cancel.is_set():  # stopped by the user (a second Ctrl-C kills the runner):
            return                 # no fault of the variant's
        self._fault(gone, name, r)
        with self._lock:
            self.collector.variants[name].status = "failed"
            self.collector.variants[name].error = gone.message
        if not self._cancel.is_set() and self.collector.active():
            self._restart(exclude={name})

    def _fault(self, gone: RunnerGone, name: str | None, r: int | None) -> None:
        st = gone.status or {}
        fault = Fault(kind=gone.kind, message=gone.message, variant=st.get("variant") or name,
                      phase=st.get("phase") or None, round=r, stderr_tail=gone.stderr_tail[-12:])
        with self._lock:
            self.collector.faults.append(fault)
        self._emit("fault", **fault.model_dump())

    def _restart(self, exclude: set[str]) -> None:
        if self.client:
            self.client.stop(timeout=0.5)
        self._emit("log", message=f"restarting the runner without {', '.join(sorted(exclude))}")
        self._start_runner(exclude=exclude)

    def _post_run(self) -> None:
        """Correctness and the tail study, after the timed rounds (never inside them)."""
        c = self.collector
        assert self.client is not None
        base = c.baseline if c.baseline in c.active() else (c.active() or [None])[0]
        if base is None:
            return
        try:
            self.client.send("decompose", variant=base)
            ev = self._wait_for(base, ("decomposition",), self.config.watchdog_s)
            if ev is not None:
                c.decomposition = ev if "equal" in ev and not ev.get("nonfinite") else None
                self._emit("decomposition", **ev)
            if self.config.tail_study and not self._cancel.is_set():
                from .points import tail_study

                tail_study(self, base)  # a sweep of the tail plan's shapes (session/points.py)
        except RunnerFault as f:
            self._fault(f.gone, base, None)

    def _autosave(self, report: Report) -> None:
        if self.recovery_path is None:
            return
        try:
            self.recovery_path.parent.mkdir(parents=True, exist_ok=True)
            if self._writer is None:
                try:
                    self._writer = RecoveryWriter()
                except OSError:
                    pass
            # encoded and written in the writer's process (see recovery_writer.py); here if
            # it could not start or has died
            if self._writer is None or not self._writer.save(report, self.recovery_path):
                save_report(report, self.recovery_path, overwrite=True)
            self.recovery_error = None
        except OSError as exc:
            self.recovery_error = exc.strerror or str(exc)
            self._emit("log", message=f"could not write the recovery file: {exc}")
