"""`sagetui swap`'s processes. No torch here: the processes' results come back as JSON files.

- Interleaved (the default, `Interleaved`): one process runs the program once with every arm
  loaded, switching the arm at the step's boundaries (sagetui/swap/interleaved.py). Where the
  reference arm's own steps disagree (the step is not repeatable), the outputs are compared
  from a process per arm instead (`outputs_by_process`).
- Processes (`--processes`, `SwapRounds`): each round runs the program once per arm, each in a
  fresh process, the arms in ABBA order over the rounds (forward in even rounds, backward in
  odd ones) so that slow drift cancels in the paired comparison. A process that fails makes
  its arm a failed arm, with the program's last lines; the arm runs in no later round, the
  others go on.

The program runs in a process group of its own (session/forwarded.py): Ctrl-C, SIGTERM and
SIGHUP are sent on to it and end it with all it started; the steps measured (interleaved) or
the whole rounds done (processes) are kept, and `stopped_by` names the signal.
"""

from __future__ import annotations

import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from sagetui.core import format as fmt
from sagetui.core.blocks.swap import (
    UNCHANGED,
    ArmSettings,
    Earlier,
    Interleave,
    ProcessResult,
    ProcessSettings,
    SwapProcess,
)
from sagetui.core.config import VariantSpec
from sagetui.core.report.io import one_line
from sagetui.core.swap import derive
from sagetui.core.swap.schedule import round_order
from sagetui.session.forwarded import Forwarded

TAIL_LINES = 12  # of a failed program's output, kept in the report
Progress = Callable[[list[SwapProcess]], None]


@dataclass(frozen=True)
class Arm:
    name: str
    variant: VariantSpec | None  # None: the program unchanged


def _run_one(command: list[str], settings: ProcessSettings, log: Path,
             forwarded: Forwarded) -> tuple[int, float]:
    """The program in a `python -m sagetui.swap` process of its own group; (status, wall)."""
    argv = [*command[:1], "-m", "sagetui.swap", settings.model_dump_json(), *command[1:]]
    t0 = time.perf_counter()
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        status = forwarded.wait(proc)
    return status, time.perf_counter() - t0


def _read(settings: ProcessSettings) -> tuple[ProcessResult | None, str | None]:
    try:
        return ProcessResult.model_validate_json(Path(settings.result).read_bytes()), None
    except FileNotFoundError:
        return None, "the program ended without the swap's results (os._exit?)"
    except (OSError, ValidationError) as exc:
        return None, one_line(f"its results cannot be read: {exc}")


def _how(status: int) -> str:
    return f"killed by signal {-status}" if status < 0 else f"exit status {status}"


@dataclass
class Interleaved:
    command: list[str]  # [interpreter, SCRIPT, ARGS...] or [interpreter, -m, MODULE, ...]
    arms: list[Arm]
    interleave: Interleave
    calls: str | None = None
    say: Callable[[str], None] = print
    affinity: str | None = None  # --affinity (core/affinity.py)
    process: SwapProcess | None = None
    stopped_by: str | None = None  # the signal that stopped it

    def run(self) -> SwapProcess:
        with tempfile.TemporaryDirectory(prefix="sagetui-swap-") as tmp, \
                Forwarded() as forwarded:
            base = Path(tmp) / "interleaved"
            settings = ProcessSettings(arm="every arm", calls=self.calls,
                                       result=f"{base}.json", outputs=f"{base}.safetensors",
                                       interleave=self.interleave, affinity=self.affinity)
            status, wall = _run_one(self.command, settings, Path(f"{base}.log"), forwarded)
            if forwarded.signum is not None:
                self.stopped_by = signal.Signals(forwarded.signum).name
            result, problem = _read(settings)
            tail = _tail(Path(f"{base}.log"))
        ok = result is not None and (status == 0 or self.stopped_by is not None)
        error = None if ok else [*tail, *([problem] if problem else []), _how(status)]
        self.process = SwapProcess(round=0, arm="every arm", status="ok" if ok else "failed",
                                   exit_status=status, wall_s=wall, result=result, error=error)
        if result is not None:
            self.say(f"{result.program_steps} steps in {wall:.1f} s ({result.ended})")
        else:
            self.say(f"the program failed ({_how(status)}, {wall:.1f} s)")
            for line in tail[-4:]:
                self.say(f"  {line}")
        return self.process


def interleave_arms(arms: list[Arm]) -> list[ArmSettings]:
    return [ArmSettings(name=a.name, variant=a.variant) for a in arms]


@dataclass
class SwapRounds:
    command: list[str]  # [interpreter, SCRIPT, ARGS...] or [interpreter, -m, MODULE, ...]
    arms: list[Arm]
    rounds: int
    calls: str | None = None
    say: Callable[[str], None] = print
    warm_clocks: bool = True  # bring a GPU to its clocks before each process's first step
    progress: Progress | None = None  # after each process, the processes so far
    affinity: str | None = None  # --affinity (core/affinity.py)
    processes: list[SwapProcess] = field(default_factory=list)
    interrupted: bool = False
    stopped_by: str | None = None

    def run(self) -> list[SwapProcess]:
        """Every round, or those done before a stop (`interrupted`). A round is kept whole or
        not at all, wherever the stop lands: the try holds every round, and a round joins
        `processes` in one store."""
        with tempfile.TemporaryDirectory(prefix="sagetui-swap-") as tmp, \
                Forwarded() as forwarded:
            failed: set[str] = set()
            done: list[SwapProcess]
            order: list[Arm]
            r, done, order = 0, [], []  # where a Ctrl-C before the first round finds them
            try:
                for r in range(self.rounds):
                    done = []
                    order = [a for a in round_order(self.arms, r) if a.name not in failed]
                    earlier: list[Earlier] = []
                    for arm in order:
                        p, said = self._process(Path(tmp), r, arm, earlier, forwarded)
                        if forwarded.signum is not None:
                            raise KeyboardInterrupt
                        done.append(p)  # before its progress: a Ctrl-C after that keeps it
                        for line in said:
                            self.say(line)
                        if p.status == "failed":
                            failed.add(arm.name)
                        else:
                            earlier.append(Earlier(arm=arm.name, outputs=str(
                                Path(tmp) / f"r{r}-{arm.name}.safetensors")))
                        if self.progress is not None:
                            self.progress([*self.processes, *done])
                    self.processes = [*self.processes, *done]
                    if forwarded.signum is not None:
                        raise KeyboardInterrupt
                    if len(self.arms) - len(failed) < 2 and r + 1 < self.rounds:
                        self.say("fewer than two arms left to compare: no more rounds")
                        break
            except KeyboardInterrupt:
                self.interrupted = True
                if forwarded.signum is not None:
                    self.stopped_by = signal.Signals(forwarded.signum).name
                whole = bool(done) and len(done) == len(order)
                if whole and not (self.processes and self.processes[-1] is done[-1]):
                    self.processes = [*self.processes, *done]  # it came after the last process
                kept = len({p.round for p in self.processes})
                self.say(f"interrupted in round {r + 1}: keeping the {kept} round(s) done")
        return self.processes

    def _process(self, tmp: Path, r: int, arm: Arm, earlier: list[Earlier],
                 forwarded: Forwarded) -> tuple[SwapProcess, list[str]]:
        """The arm's process of round r, and its progress lines."""
        base = tmp / f"r{r}-{arm.name}"
        # compare with the unchanged arm's outputs, or (the unchanged arm) with the variants'
        compare = [e for e in earlier if (arm.name == UNCHANGED) != (e.arm == UNCHANGED)]
        settings = ProcessSettings(arm=arm.name, variant=arm.variant, calls=self.calls,
                                   result=f"{base}.json", outputs=f"{base}.safetensors",
                                   compare=compare, warm_clocks=self.warm_clocks,
                                   affinity=self.affinity)
        log = Path(f"{base}.log")
        status, wall = _run_one(self.command, settings, log, forwarded)
        result, problem = _read(settings) if status == 0 else (None, None)
        if result is None:
            tail = _tail(log)
            if problem:
                tail.append(problem)
            how = _how(status)
            said = [f"round {r + 1}/{self.rounds} · {arm.name}: failed ({how}, {wall:.1f} s)",
                    *(f"  {line}" for line in tail[-4:])]
            return SwapProcess(round=r, arm=arm.name, status="failed", exit_status=status,
                               wall_s=wall, error=tail or [how]), said
        calls = f"{result.swapped.count} swapped, {sum(result.passed.values())} passed through"
        step = derive.step_of([result])
        took = derive.seconds(result, step, result.clock)
        timed = f"{step} {fmt.ms(took)} ms, " if took else ""
        return SwapProcess(round=r, arm=arm.name, status="ok", exit_status=0, wall_s=wall,
                           result=result), [f"round {r + 1}/{self.rounds} · {arm.name}: "
                                            f"{timed}{calls} ({wall:.1f} s)"]


def _tail(log: Path) -> list[str]:
    try:
        text = log.read_bytes()[-16384:].decode("utf-8", "replace")
    except OSError:
        return []
    return [one_line(line) for line in text.splitlines() if line.strip()][-TAIL_LINES:]
