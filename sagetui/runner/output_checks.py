"""A block's output checks (sha256, byte comparison, checksum, difference from the baseline,
and once per variant its accuracy), made outside the timed regions and off the rounds' path.

A variant's first output is its warm-up's last call: the same inputs and code as every timed
call. What needs the GPU is done with it then, once: the checksum and the difference from the
baseline's first output; it is kept for its accuracy against fp32 attention, a late figure
(engine.late: a GPU job that would take SMs from a timed kernel if it ran beside one, and that
no verdict needs). Its sha256 is hashed on a thread while the blocks after it
run; only the device-to-host copy stays on the runner's thread, which issues the timed work, so
the copy never lands on the stream between two timed kernels. After that a block costs one byte
comparison on the device: an output with the first output's bytes has the first output's facts.
An output that differs (a kernel that is not deterministic) is checked in full, and its block
waits for that.

First outputs are kept by the variant's code (backend, path, options), so that a warm runner set
up again on the same inputs keeps them (engine.reconfigure): a renamed variant is the same code.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import torch

from sagetui.core import affinity
from sagetui.core.config import VariantSpec
from sagetui.runner.inputs import checksum, host_bytes, sha256_of, tensor_sha256

SpecKey = tuple[str, str | None, str]  # backend, path, options as JSON
FactsOf = Callable[[torch.Tensor], dict[str, Any]]  # the once-per-variant facts of an output


def spec_key(spec: VariantSpec) -> SpecKey:
    return spec.backend, spec.path, json.dumps(spec.options, sort_keys=True)


def same_bytes(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bitwise equality on the device (NaN == NaN when their bits are equal)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))


def difference(out: torch.Tensor, base: torch.Tensor) -> dict[str, float]:
    if base.shape != out.shape:
        return {}
    d = (out.float() - base.float()).abs()
    return {"max_abs_diff": float(d.max().item()), "mean_abs_diff": float(d.mean().item())}


@dataclass
class FirstOutput:
    tensor: torch.Tensor
    sha256: Future[str]
    checksum: float
    facts: dict[str, Any]  # what the backend says about the call, its peak memory
    diffs: dict[SpecKey, dict[str, float]] = field(default_factory=dict)  # by baseline
    # its accuracy against fp32 attention (or why not), a late figure: computed once
    accuracy: dict[str, Any] | None = None
    lse: torch.Tensor | None = None  # with return_lse: hashed with the output, after its bytes


class OutputChecks:
    def __init__(self) -> None:
        self._first: dict[SpecKey, FirstOutput] = {}
        # off --affinity's CPUs, which the timing thread has alone
        self._hasher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sagetui-sha256",
                                          initializer=affinity.release)
        self._given: set[str] = set()  # variants whose once-only facts a block carried this run

    def new_run(self, keys: Iterable[SpecKey]) -> None:
        """A new set-up on the same inputs: the first outputs of code no longer run go."""
        keep = set(keys)
        for key in [k for k in self._first if k not in keep]:
            del self._first[key]
        self._given.clear()

    def has_first(self, key: SpecKey) -> bool:
        return key in self._first

    def first_of(self, key: SpecKey | None) -> FirstOutput | None:
        return self._first.get(key) if key is not None else None

    def hash_later(self, *tensors: torch.Tensor) -> Future[str]:
        """The tensors' sha256: copied to the host now (on this thread, which issues the GPU
        work), hashed on the hashing thread."""
        return self._hasher.submit(sha256_of, host_bytes(*tensors))

    def first(self, backend: str) -> FirstOutput:
        """The first output of a variant of `backend` (for tests and diagnostics)."""
        return next(f for k, f in self._first.items() if k[0] == backend)

    def remember(self, key: SpecKey, out: torch.Tensor, facts_of: FactsOf,
                 lse: torch.Tensor | None = None) -> FirstOutput:
        extra = () if lse is None else (lse,)
        first = FirstOutput(tensor=out.detach().clone(), sha256=self.hash_later(out, *extra),
                            checksum=checksum(out), facts=facts_of(out),
                            lse=None if lse is None else lse.detach().clone())
        self._first[key] = first
        return first

    def facts(self, name: str, key: SpecKey, out: torch.Tensor, base_key: SpecKey | None,
              facts_of: FactsOf, lse: torch.Tensor | None = None) -> dict[str, Any]:
        """The facts a block's BlockDone carries for its last output `out` (and with
        return_lse its `lse`: the sha256 and the byte comparison cover both)."""
        first = self._first.get(key)
        if first is None:  # no warm-up call was made: this block's output is the first
            first = self.remember(key, out, facts_of, lse)
        base = self._first.get(base_key) if base_key is not None else None
        facts: dict[str, Any]
        same_lse = (lse is None) == (first.lse is None) and (
            lse is None or first.lse is None or same_bytes(first.lse, lse))
        if same_lse and same_bytes(first.tensor, out):
            facts = {"output_sha256": first.sha256.result(), "checksum": first.checksum}
            if base is not None and base_key is not None:
                if base_key not in first.diffs:
                    first.diffs[base_key] = difference(first.tensor, base.tensor)
                facts.update(first.diffs[base_key])
        else:
            facts = {"output_sha256": tensor_sha256(out, *(() if lse is None else (lse,))),
                     "checksum": checksum(out)}
            if base is not None:
                facts.update(difference(out, base.tensor))
        if name not in self._given:  # the variant's own facts (accuracy...) ride its first block
            self._given.add(name)
            facts["facts"] = dict(first.facts)
        return facts
