"""`sagetui swap`'s rounds: each round runs the user's program once per arm, each in a fresh
process (`python -m sagetui.swap`, sagetui/swap), the arms in ABBA order over the rounds
(forward in even rounds, backward in odd ones) so that slow drift cancels in the paired
comparison. No torch here: the processes' results come back as JSON files.

A process that fails makes its arm a failed arm, with the program's last lines; the arm runs in
no later round, the others go on. Ctrl-C stops the process running, drops the round it was in
and keeps the rounds done.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from sagetui.core.blocks.swap import (
    UNCHANGED,
    Earlier,
    ProcessResult,
    ProcessSettings,
    SwapProcess,
)
from sagetui.core.config import VariantSpec
from sagetui.core.report.io import one_line
from sagetui.core.swap import derive

TAIL_LINES = 12  # of a failed program's output, kept in the report


@dataclass(frozen=True)
class Arm:
    name: str
    variant: VariantSpec | None  # None: the program unchanged


def round_order(arms: Sequence[Arm], round_index: int) -> list[Arm]:
    """ABBA over the rounds: forward in even rounds, backward in odd ones."""
    return list(arms) if round_index % 2 == 0 else list(reversed(arms))


@dataclass
class SwapRounds:
    command: list[str]  # [interpreter, SCRIPT, ARGS...] or [interpreter, -m, MODULE, ...]
    arms: list[Arm]
    rounds: int
    calls: str | None = None
    say: Callable[[str], None] = print
    processes: list[SwapProcess] = field(default_factory=list)
    interrupted: bool = False

    def run(self) -> list[SwapProcess]:
        """Every round, or those done before Ctrl-C (`interrupted`). A round is kept whole or
        not at all, wherever the KeyboardInterrupt lands: the try holds every round, and a
        round joins `processes` in one store."""
        with tempfile.TemporaryDirectory(prefix="sagetui-swap-") as tmp:
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
                        p, said = self._process(Path(tmp), r, arm, earlier)
                        done.append(p)  # before its progress: a Ctrl-C after that keeps it
                        for line in said:
                            self.say(line)
                        if p.status == "failed":
                            failed.add(arm.name)
                        else:
                            earlier.append(Earlier(arm=arm.name, outputs=str(
                                Path(tmp) / f"r{r}-{arm.name}.safetensors")))
                    self.processes = [*self.processes, *done]
                    if len(self.arms) - len(failed) < 2 and r + 1 < self.rounds:
                        self.say("fewer than two arms left to compare: no more rounds")
                        break
            except KeyboardInterrupt:
                self.interrupted = True
                whole = bool(done) and len(done) == len(order)
                if whole and not (self.processes and self.processes[-1] is done[-1]):
                    self.processes = [*self.processes, *done]  # it came after the last process
                kept = len({p.round for p in self.processes})
                self.say(f"interrupted in round {r + 1}: keeping the {kept} round(s) done")
        return self.processes

    def _process(self, tmp: Path, r: int, arm: Arm, earlier: list[Earlier]
                 ) -> tuple[SwapProcess, list[str]]:
        """The arm's process of round r, and its progress lines."""
        base = tmp / f"r{r}-{arm.name}"
        # compare with the unchanged arm's outputs, or (the unchanged arm) with the variants'
        compare = [e for e in earlier if (arm.name == UNCHANGED) != (e.arm == UNCHANGED)]
        settings = ProcessSettings(arm=arm.name, variant=arm.variant, calls=self.calls,
                                   result=f"{base}.json", outputs=f"{base}.safetensors",
                                   compare=compare)
        argv = [*self.command[:1], "-m", "sagetui.swap", settings.model_dump_json(),
                *self.command[1:]]
        log = Path(f"{base}.log")
        t0 = time.perf_counter()
        with log.open("wb") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL)
            try:
                status = proc.wait()
            except KeyboardInterrupt:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                raise
        wall = time.perf_counter() - t0
        result, problem = None, None
        if status == 0:
            try:
                result = ProcessResult.model_validate_json(Path(settings.result).read_bytes())
            except FileNotFoundError:
                problem = "the program ended without the swap's results (os._exit?)"
            except (OSError, ValidationError) as exc:
                problem = one_line(f"its results cannot be read: {exc}")
        if result is None:
            tail = _tail(log)
            if problem:
                tail.append(problem)
            how = f"killed by signal {-status}" if status < 0 else f"exit status {status}"
            said = [f"round {r + 1}/{self.rounds} · {arm.name}: failed ({how}, {wall:.1f} s)",
                    *(f"  {line}" for line in tail[-4:])]
            return SwapProcess(round=r, arm=arm.name, status="failed", exit_status=status,
                               wall_s=wall, error=tail or [how]), said
        calls = f"{result.swapped.count} swapped, {sum(result.passed.values())} passed through"
        step = derive.step_of([result])
        took = derive.seconds(result, step, result.clock)
        timed = f"{step} {took * 1e3:.3f} ms, " if took else ""
        return SwapProcess(round=r, arm=arm.name, status="ok", exit_status=0, wall_s=wall,
                           result=result), [f"round {r + 1}/{self.rounds} · {arm.name}: "
                                            f"{timed}{calls} ({wall:.1f} s)"]


def _tail(log: Path) -> list[str]:
    try:
        text = log.read_bytes()[-16384:].decode("utf-8", "replace")
    except OSError:
        return []
    return [one_line(line) for line in text.splitlines() if line.strip()][-TAIL_LINES:]


