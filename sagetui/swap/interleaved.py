"""The interleaved mode (the default): every arm's backend loaded in the one process, the arm
switched at the boundaries of the program's step (the outermost blocks of its first region,
`sagetui.region("step")`) round by round, in the order of a Williams square
(core/swap/schedule.py), so that each comparison pairs nearby steps of the same program at the
same clocks, and the program starts once.

- Outside a step every call passes through (the program as it is). The `unwrapped` arm runs
  the program with the wrapper passing every call straight through (no reading, no timing):
  the unchanged arm's step against it is the wrapper's own cost.
- Each step is timed as the processes mode times a region (CUDA events, synchronised at its
  end), the SM clock and power read as it ends (swap/clocks.py). The first rounds are warm-up
  and in no figure. In the attention rounds each attention call is timed (inside.py's `call`);
  in the others a call is only dispatched (`lean_call`: the decision for a call of its shape
  and arguments, made once by `call` and looked up after), so that the steps compared carry
  as little of the swap's own cost as can be (the unwrapped arm measures what is left).
- Outputs: what the step hands over (`sagetui.output`, else its last attention call's output)
  is held by reference while the step runs (a copy would be in its time), and compared before
  the next step begins: the reference arm's first step's is copied once; its later warm-up and
  attention steps are compared with it byte for byte (is the step repeatable?), the other arms'
  attention steps' with it (swap/outputs.py). Between the steps compared (the step rounds)
  nothing runs but the clock's reading.
- An arm whose backend raises is a failed arm: its calls pass through from then on, the
  program goes on, the others keep their steps.
- Once the measurement has what it needs (--steps, --max-seconds), the program is ended at its
  next step's start (SwapDone: a SystemExit of status 0).
"""

from __future__ import annotations

import contextlib
import time
import traceback
from typing import Any

import torch

from sagetui.core.blocks.swap import (
    UNWRAPPED,
    ArmCalls,
    Compared,
    OutputSums,
    ProcessResult,
    ProcessSettings,
    StepTime,
)
from sagetui.core.report.io import one_line
from sagetui.core.swap.schedule import (
    ATTENTION_ROUND,
    STEP_ROUND,
    WARMUP_ROUND,
    Schedule,
    compared_pairs,
)
from sagetui.recorder.targets import Target
from sagetui.runner.backends.base import Backend
from sagetui.runner.output_checks import same_bytes
from sagetui.swap.clocks import bring_to_clocks, reading
from sagetui.swap.inside import (
    LAST_OUTPUT,
    Swapper,
    _cuda_ready,
    _Timing,
    call_options,
    load_backend,
    timed_calls,
)
from sagetui.swap.outputs import compare_all, flatten

# a step round's call's plan: why it passes through (None: swapped), the bound public call
# (a stock backend's) and the call's entry in the step's `calls`
Plan = tuple[str | None, Any, tuple[Any, ...]]


class SwapDone(SystemExit):
    """The swap has what it needs: the program ends here, with status 0."""

    def __init__(self) -> None:
        super().__init__(0)


class InterleavedSwapper(Swapper):
    def __init__(self, settings: ProcessSettings, sampler: Any = None) -> None:
        super().__init__(settings, sampler)
        il = settings.interleave
        assert il is not None
        self.backends: dict[str, Backend | None] = {
            a.name: load_backend(a.variant) if a.variant is not None else None for a in il.arms}
        self.stock = {a.name: a.variant is not None and a.variant.path is None for a in il.arms}
        self.schedule = Schedule([a.name for a in il.arms], warmup=il.warmup,
                                 max_warmup=il.max_warmup, steps=il.steps,
                                 max_seconds=il.max_seconds, until_ci=il.until_ci_percent,
                                 pairs=compared_pairs([a.name for a in il.arms], il.baseline))
        self.reference = il.reference
        self.step_region: str | None = None
        self.current: tuple[int, str, str] | None = None  # the open step's round, arm, kind
        # per arm, a call's key (_key) -> its plan: why it passes through (None: swapped),
        # the bound public call, and its entry in `calls`
        self._plans: dict[str, dict[tuple[Any, ...], Plan]] = {}
        self._arm_plans: dict[tuple[Any, ...], Plan] = {}  # the open step's arm's
        self.steps: list[StepTime] = []
        self._cpu0 = 0.0
        self.arm_calls: dict[str, ArmCalls] = {}
        self.failed: dict[str, str] = {}  # arm -> why its backend failed
        self.held: dict[str, Any] = {}  # the open step's outputs, by reference
        self.pending: tuple[int, str, str, dict[str, torch.Tensor], dict[str, str]] | None = None
        self.ref_outputs: dict[str, torch.Tensor] | None = None
        self.repeatable: bool | None = None
        self.repeatable_note: str | None = None
        self.compared: list[Compared] = []
        self._ref_steps = 0

    # -- which backend runs a call ------------------------------------------------------------
    def backend_now(self) -> tuple[Backend | None, bool]:
        if self.current is None:
            return None, False  # outside a step: the program as it is
        arm = self.current[1]
        if arm in self.failed:
            return None, False
        return self.backends.get(arm), self.stock.get(arm, False)

    def run(self, target: Target, a: dict[str, Any], backend: Backend,
            stock: bool) -> torch.Tensor:
        try:
            return super().run(target, a, backend, stock)
        except Exception as exc:
            assert self.current is not None
            arm = self.current[1]
            self.failed[arm] = one_line(f"{type(exc).__name__}: {exc}")
            self._plans.pop(arm, None)  # its calls pass through from now on
            self._arm_plans = {}
            traceback.print_exc()
            print(f"sagetui swap: arm {arm} failed; its calls pass through from now on",
                  flush=True)
            target_fn = _original(target)
            return target_fn(**a) if target_fn is not None else _raise(exc)

    def lean_call(self, target: Target, original: Any, args: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> Any:
        """A call in a step round: the decision `call` made for a call of this arm, shape and
        arguments, looked up, with no timing; a swapped call of a stock backend goes straight
        to its public function with the other arguments bound (Backend.public_call). Any call
        not seen so (or with gradients on) takes `call`. Every step compared pays this path's
        host time in a launch-bound program (the wrapper's cost, measured against the unwrapped
        arm), so it is kept to a key of the call's own attributes and one lookup."""
        key = None
        try:
            q, k, v = args[0], args[1], args[2]
            key = _key(target, q, k, v, args, kwargs)
            why, direct, entry = self._arm_plans[key]
        except (KeyError, IndexError, TypeError, AttributeError):
            return self._first_lean(key, target, original, args, kwargs)
        self.seen += 1
        if self.forked.here():
            self.forked.count()
        # on a CPU a call's CPU time costs two clock reads and no event: the attention is
        # timed in the very steps compared (derive.attention_kind)
        c0 = None if self.cuda else time.process_time()
        if why is not None:
            out = original(*args, **kwargs)
        elif direct is not None:
            out = direct(q, k, v)
        else:
            backend, stock = self.backend_now()
            assert backend is not None
            out = self.run(target, target.arguments(args, kwargs), backend, stock)
        self.calls.append(entry if c0 is None else
                          (_Timing(cpu_s=time.process_time() - c0), why is None, (), why))
        first = out[0] if type(out) is tuple and out else out
        if isinstance(first, torch.Tensor):
            self.last = first
        return out

    def _first_lean(self, key: tuple[Any, ...] | None, target: Target, original: Any,
                    args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A step round's call without a plan (`key`: its key, None where it has none): `call`
        takes it, and its decision is kept for the calls like it (none with gradients on, nor
        with an unhashable argument)."""
        out = self.call(target, original, args, kwargs, None)
        if key is not None and self.calls and not torch.is_grad_enabled():
            with contextlib.suppress(IndexError, TypeError, AttributeError):  # unhashable...
                self._plan(key, target, args, kwargs)
        return out

    def _plan(self, key: tuple[Any, ...], target: Target, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> None:
        """Keep the decision the last call took, for lean_call."""
        hash(key)  # a call with an unhashable argument is never planned
        why, direct = self.calls[-1][3], None
        backend, stock = self.backend_now()
        if why is None and backend is not None and stock:
            direct = backend.public_call(*call_options(target, target.arguments(args, kwargs)))
        self._arm_plans[key] = (why, direct, (None, why is None, (), why))

    # -- the program's marks ------------------------------------------------------------------
    def region_start(self, name: str) -> tuple[str, _Timing, float] | None:
        depth = self._depth.get(name, 0)
        if self.step_region is None and not any(self._depth.values()):
            self.step_region = name  # the first outermost region is the step
        if name != self.step_region or depth:
            self._depth[name] = depth + 1
            return None
        self._settle_pending()
        if self.warmed_clocks is None and _cuda_ready():
            self.warmed_clocks = bring_to_clocks(self.sampler)
        begun = self.schedule.begin()
        if begun is None:
            raise SwapDone
        self._depth[name] = 1
        self.current = begun
        self.bare = begun[1] == UNWRAPPED
        self._arm_plans = self._plans.setdefault(begun[1], {})
        # --calls selects by a call's place in the program: every call goes the whole way
        self.lean = begun[2] != ATTENTION_ROUND and self.selection.text is None
        self.calls.clear()
        self.held.clear()
        self.not_comparable.clear()
        self.last = None
        timing = _Timing.region()
        self._cpu0 = time.process_time()
        return name, timing, time.perf_counter()

    def region_end(self, name: str, token: tuple[str, _Timing, float] | None) -> None:
        self._depth[name] = max(0, self._depth.get(name, 0) - 1)
        if token is None:
            return
        _, timing, t0 = token
        if timing.start is not None:
            timing.record_end()
            torch.cuda.synchronize()
        host_s = time.perf_counter() - t0
        cpu_s = time.process_time() - self._cpu0
        gpu_s = timing.gpu_seconds()
        self.bare = self.lean = False
        assert self.current is not None
        r, arm, kind = self.current
        self.current = None
        clock, power = reading(self.sampler)
        timed = self.cuda and kind == ATTENTION_ROUND
        swapped = timed_calls((c for c in self.calls if c[1]), timed)
        self.steps.append(StepTime(round=r, arm=arm, kind=kind, host_s=host_s, cpu_s=cpu_s,
                                   gpu_s=gpu_s,
                                   attention=timed_calls(self.calls, timed),
                                   swapped=swapped, sm_clock_mhz=clock, power_w=power))
        warmup = kind == WARMUP_ROUND
        if not warmup:
            calls = self.arm_calls.setdefault(arm, ArmCalls())
            calls.swapped += swapped.count
            for c in self.calls:
                if c[3] is not None:
                    calls.passed[c[3]] = calls.passed.get(c[3], 0) + 1
        # the warm-up settles on the clock the steps are compared by (derive.clock_of)
        self.schedule.end(r, arm, gpu_s if gpu_s is not None else cpu_s)
        outputs = {n: t for n, t in self.held.items()}
        if not outputs and self.last is not None:
            outputs = {LAST_OUTPUT: self.last}
        self.pending = (r, arm, kind, outputs, dict(self.not_comparable))
        self.calls.clear()

    def output(self, name: str, value: Any) -> None:
        tensors, problems = flatten(name, value)
        if self.current is None and self.pending is not None:  # after the step: it joins it
            self.pending[3].update(tensors)
            self.pending[4].update(problems)
            return
        self.held.update(tensors)
        self.not_comparable.update(problems)

    # -- outputs, between steps ---------------------------------------------------------------
    def _settle_pending(self) -> None:
        if self.pending is None:
            return
        r, arm, kind, outputs, problems = self.pending
        self.pending = None
        if arm == UNWRAPPED or arm in self.failed or kind == STEP_ROUND:
            return  # nothing runs between the steps compared but the clock's reading
        if arm == self.reference:
            self._ref_steps += 1
            if self.ref_outputs is None:
                self.ref_outputs = {n: t.detach().clone() for n, t in outputs.items()}
                return
            for n, t in outputs.items():
                ref = self.ref_outputs.get(n)
                if ref is None or not same_bytes(t, ref):
                    if self.repeatable is not False:
                        self.repeatable = False
                        self.repeatable_note = (
                            f"the {arm} arm's own steps disagree: its output {n!r} of step "
                            f"{self._ref_steps} differs from its first step's")
                    return
            if self.repeatable is None:
                self.repeatable = True
            return
        if kind == ATTENTION_ROUND and self.ref_outputs is not None:
            self.compared.append(Compared(arm=arm, outputs=compare_all(
                outputs, self.ref_outputs, problems)))

    # -- the end --------------------------------------------------------------------------------
    def finish(self) -> ProcessResult:
        self._settle_pending()
        if _cuda_ready():
            torch.cuda.synchronize()
        ended = self.schedule.ended or (
            f"the program ended after {self.schedule.started} steps" if self.step_region
            else "the program marked no step (sagetui.region)")
        compared = self.compared
        if self.repeatable is False:
            compared = [Compared(arm=c.arm, outputs={n: OutputSums(
                problem="not compared in one process: the step is not repeatable")
                for n in c.outputs}) for c in compared]
        refs = self.ref_outputs or {}
        result = ProcessResult(
            arm="every arm", device=self.device, clock="cuda events" if self.cuda else "host",
            telemetry=self.telemetry, warmed_clocks=self.warmed_clocks,
            forked_calls=self.forked.total(), calls_seen=self.seen,
            step_region=self.step_region, steps=self.steps,
            arm_calls=self.arm_calls, program_steps=self.schedule.started, ended=ended,
            repeatable=self.repeatable, repeatable_note=self.repeatable_note,
            named_outputs=LAST_OUTPUT not in refs and bool(refs),
            outputs={n: f"{str(t.dtype).removeprefix('torch.')} {list(t.shape)}"
                     for n, t in refs.items()},
            compared=compared, failed_arms=dict(self.failed), ran=self.settings.arms_run())
        self.write(result)
        return result


def _original(target: Target) -> Any:
    """The program's own function for `target` (the wrapper's original)."""
    import importlib

    module, _, name = target.name.rpartition(".")
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None
    return getattr(fn, "__sagetui_original__", fn)


def _raise(exc: Exception) -> Any:
    raise exc


def _key(target: Target, q: Any, k: Any, v: Any, args: tuple[Any, ...],
         kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """What decides a call's fate within an arm: the function, q/k/v's shapes, dtype and
    device, the other arguments (a round's number is no part of it: the plans last the run),
    and whether gradients are on (such a call is never planned: `call` takes each)."""
    return (target.name, q.shape, k.shape, v.shape, q.dtype, q.device, len(args),
            tuple(kwargs.items()) if kwargs else (), torch.is_grad_enabled())
