"""A warm runner: the console's runner process, kept between its runs.

Starting a runner costs seconds (Python, torch, the CUDA context, the kernels' modules, inputs
of 1.6 GB and their fp32 reference at the reference shape). The console hands the runner of a
finished or stopped run to its WarmRunner, and the next run takes it back: the runner is set up
again, and a configuration on the same inputs keeps them, and the variants whose code did not
change (runner/engine.py `reconfigure`).

A runner is not reused when the library a variant runs was rebuilt since the runner loaded it
(a process cannot load a changed shared library again under the same name: a fresh runner
loads the new one), when it was started with another interpreter, arguments or environment, or
when it holds events nobody read. An idle runner holds GPU memory: it is stopped after IDLE_S
seconds, and when the console quits.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from sagetui.core import events as ev
from sagetui.core.provenance import changed_files
from sagetui.session.runner_client import RunnerClient
from sagetui.session.spawn import Spawned

IDLE_S = 600.0

Key = tuple[Any, ...]  # how the runner was started: interpreter, argv, environment
Log = Callable[[str], None]


class WarmRunner:
    def __init__(self, idle_s: float = IDLE_S) -> None:
        self.idle_s = idle_s
        self._lock = threading.Lock()
        self._held: tuple[Key, RunnerClient, ev.Hello, list[dict[str, Any]]] | None = None
        self._timer: threading.Timer | None = None
        self._shut = False  # the console quits: no runner is kept from now on
        self.why_not: str | None = None  # why the last take started no warm runner

    @property
    def pid(self) -> int | None:
        """The kept runner's process id (None: none is kept)."""
        with self._lock:
            return self._held[1].pid if self._held is not None else None

    def keep(self, key: Key, client: RunnerClient, hello: ev.Hello,
             files: list[dict[str, Any]]) -> bool:
        """Keep a runner that finished a run (idle, its events all read); `files` are the
        libraries its variants loaded (their provenance). False: it was stopped instead."""
        with self._lock:
            if self._shut or not client.alive() or client.pending():
                old, keep = None, False
            else:
                old, self._held, keep = self._held, (key, client, hello, files), True
                self._restart_timer()
        if not keep:
            client.stop()
            return False
        if old is not None:
            old[1].stop()
        return True

    def take(self, key: Key) -> tuple[RunnerClient, ev.Hello] | None:
        """The kept runner, if it can run the next run; None (with `why_not`) otherwise."""
        with self._lock:
            held, self._held = self._held, None
            self._cancel_timer()
        if held is None:
            self.why_not = None
            return None
        held_key, client, hello, files = held
        why = None
        if held_key != key:
            why = "it was started with another interpreter or environment"
        elif not client.alive():
            why = "it has exited"
        elif client.pending():
            why = "it holds unread events"
        elif changed := changed_files(files):
            why = f"{', '.join(changed)} changed since it was loaded"
        self.why_not = why
        if why is not None:
            client.stop()
            return None
        return client, hello

    def shut(self) -> None:
        """The console quits: stop the kept runner, and stop every runner given from now on
        (a run still ending gives its runner back after this)."""
        self._shut = True
        self.close()

    def close(self) -> None:
        """Stop the kept runner (it idled for idle_s, or the console quits)."""
        with self._lock:
            held, self._held = self._held, None
            self._cancel_timer()
        if held is not None:
            held[1].stop()

    def _restart_timer(self) -> None:
        self._cancel_timer()
        self._timer = threading.Timer(self.idle_s, self.close)
        self._timer.daemon = True
        self._timer.start()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class RunnerSource:
    """Where a session's runner comes from: the WarmRunner's, or a new process; and where it
    goes when the run is over."""

    def __init__(self, python: str | None, argv: list[str] | None, env: dict[str, str] | None,
                 warm: WarmRunner | None, prestarted: Spawned | None = None) -> None:
        self.python, self.argv, self.env, self.warm = python, argv, env, warm
        self.key: Key = python, tuple(argv or ()), tuple(sorted((env or {}).items()))
        self.prestarted = prestarted  # started by `sagetui run` before its imports (spawn.py)

    def start(self, log: Log) -> tuple[RunnerClient, ev.Hello | None]:
        """A runner, and its hello when it is a warm one (a new one's is still to come)."""
        kept = self.warm.take(self.key) if self.warm is not None else None
        if kept is not None:
            log(f"the runner is warm (pid {kept[0].pid}): no start-up")
            return kept
        early, self.prestarted = self.prestarted, None
        if early is not None:
            if early.proc.poll() is None:
                return RunnerClient(spawned=early), None
            early.discard()  # it died starting: a new one says why, with its own stderr
        if self.warm is not None and self.warm.why_not:
            log(f"starting a new runner: the warm one is not reused, {self.warm.why_not}")
        return RunnerClient(python=self.python, argv=self.argv, env=self.env), None

    def discard(self) -> None:
        """A runner started early that no run took (the run was refused before it)."""
        early, self.prestarted = self.prestarted, None
        if early is not None:
            early.discard()

    def release(self, client: RunnerClient, hello: ev.Hello | None,
                files: list[dict[str, Any]], clean: bool, log: Log, *,
                background: bool = False) -> None:
        """The run is over: after a run that ended cleanly its runner is kept warm for the
        next one (`files`: the libraries its variants loaded); otherwise it is stopped, with
        `background` on a thread of its own (the process waits for it at its exit): a runner's
        exit frees its CUDA context, 0.8 s at the reference shape on an H100 (measured), no
        part of the report."""
        if not clean or self.warm is None or hello is None:
            if background:
                threading.Thread(target=client.stop, name="sagetui-runner-stop").start()
            else:
                client.stop()
            return
        if self.warm.keep(self.key, client, hello, files):
            log(f"the runner (pid {client.pid}) is kept warm for the next run")
