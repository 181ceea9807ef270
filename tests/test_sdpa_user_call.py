"""SDPA's call the user makes (runner/backends/sdpa.py), on the CPU: torch's function runs here
too, so the binding is checked in every test run (the GPU test repeats it on the device)."""

import pytest
import torch

from sagetui.runner.backends.base import Inputs, NullClock
from sagetui.runner.backends.sdpa import SdpaBackend


def inputs(layout: str, kv_heads: int) -> Inputs:
    def tensor(heads: int) -> torch.Tensor:
        return torch.randn((1, heads, 64, 16) if layout == "HND" else (1, 64, heads, 16))

    return Inputs(q=tensor(4), k=tensor(kv_heads), v=tensor(kv_heads), layout=layout,
                  causal=True, sm_scale=0.2)


@pytest.mark.parametrize(("layout", "kv_heads"), [("HND", 4), ("NHD", 4), ("NHD", 2)])
def test_the_bare_function_gives_run_s_bytes_without_going_through_run(layout, kv_heads):
    i = inputs(layout, kv_heads)
    be = SdpaBackend()
    call, name = be.user_call(i)
    assert name == "torch.nn.functional.scaled_dot_product_attention"
    want = be.run(i, NullClock())
    be.run = None  # type: ignore[assignment,method-assign]  # the call must not need it
    got = call()
    assert got.shape == want.shape == i.q.shape
    assert torch.equal(got, want)


def test_a_pinned_backend_keeps_its_context_in_the_call():
    i = inputs("NHD", 4)
    be = SdpaBackend({"backend": "math"})
    calls = []
    real = be.run
    be.run = lambda *a: calls.append(a) or real(*a)  # type: ignore[method-assign]
    call, _ = be.user_call(i)
    assert torch.equal(call(), real(i, NullClock())) and len(calls) == 1
