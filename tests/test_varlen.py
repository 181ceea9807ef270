"""Packed sequences (`--seqlens`, a captured sageattn_varlen call) and return_lse on the CPU,
through the reference backend: each sequence attends only to itself, the lse is the softmax's,
operations count each sequence's own work, and bad input is one line, exit 2. The sage2-varlen
kernels themselves are the GPU's to check (tests/gpu/test_varlen_gpu.py)."""

from __future__ import annotations

import json
import math

import pytest
import torch
import torch.nn.functional as F

from sagetui.core.config import RunConfig, Shape, VariantSpec
from sagetui.core.derived import attention_ops, shape_ops
from sagetui.runner.backends.base import NullClock
from sagetui.runner.backends.reference import ReferenceBackend
from sagetui.runner.inputs import build_inputs

SEQLENS = (100, 37, 200)


def packed_config(causal: bool, backend: str = "reference[smooth_k=false]",
                  seqlens: tuple[int, ...] = SEQLENS) -> RunConfig:
    shape = Shape(batch=1, heads=4, kv_heads=2, q_len=sum(seqlens), head_dim=64, dtype="bf16",
                  layout="NHD", causal=causal, seqlens=seqlens)
    return RunConfig(shape=shape, variants=[VariantSpec.parse(backend)], device="cpu")


def per_sequence_sdpa(q, k, v, causal: bool):
    """fp32 SDPA of each sequence alone (NHD [1, tokens, H, D]), GQA heads repeated."""
    out, lse, start = [], [], 0
    for n in SEQLENS:
        qs, ks, vs = (t[0, start:start + n].transpose(0, 1).float() for t in (q, k, v))
        ks, vs = (t.repeat_interleave(qs.shape[0] // t.shape[0], 0) for t in (ks, vs))
        out.append(F.scaled_dot_product_attention(qs, ks, vs, is_causal=causal)
                   .transpose(0, 1))
        s = qs @ ks.transpose(-1, -2) / math.sqrt(qs.shape[-1])
        if causal:
            s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
        lse.append(torch.logsumexp(s, -1))
        start += n
    return torch.cat(out)[None], torch.cat(lse, dim=-1)[None]


@pytest.mark.parametrize("causal", [False, True])
def test_packed_sequences_attend_each_to_itself(causal: bool) -> None:
    """Without smooth_k (no mean over every packed token) each sequence's rows are bit for bit
    the reference run on that sequence alone; against an independent per-sequence fp32 SDPA the
    error is the algorithm's own (a block-diagonal mistake would be tens of percent)."""
    inputs = build_inputs(packed_config(causal), "cpu")
    be = ReferenceBackend({"smooth_k": False, "return_lse": True})
    out = be.run(inputs, NullClock())
    lse = be.last_lse
    assert out.shape == inputs.q.shape and lse is not None and lse.shape == (1, 4, sum(SEQLENS))
    start = 0
    for n in SEQLENS:
        alone = packed_config(causal, seqlens=(n,))
        one = build_inputs(alone, "cpu")
        one.q, one.k, one.v = (t[:, start:start + n] for t in (inputs.q, inputs.k, inputs.v))
        assert torch.equal(be.run(one, NullClock()), out[:, start:start + n])
        start += n
    want, want_lse = per_sequence_sdpa(inputs.q, inputs.k, inputs.v, causal)
    rel_l1 = ((out.float() - want).abs().sum() / want.abs().sum()).item()
    assert rel_l1 < 0.06, rel_l1
    assert (lse - want_lse).abs().max().item() < 0.05


def test_the_lse_adds_back_what_smoothing_took_away() -> None:
    """With smooth_k the kernel's scores are q·(k - mean); the returned lse is the softmax's
    of q·k (the correction q·mean·sm_scale), on kbias-like K whose mean is large."""
    config = packed_config(False, "reference")
    inputs = build_inputs(config, "cpu")
    inputs.k = inputs.k + 4.0  # every key shifted: q·mean moves the lse by a lot
    be = ReferenceBackend({"return_lse": True})
    be.run(inputs, NullClock())
    _, want_lse = per_sequence_sdpa(inputs.q, inputs.k, inputs.v, False)
    assert be.last_lse is not None
    assert (be.last_lse - want_lse).abs().max().item() < 0.05
    assert (want_lse - per_sequence_sdpa(inputs.q, inputs.k - 4.0, inputs.v, False)[1]
            ).abs().max().item() > 1.0  # the shift is visible: the test can fail


def test_operations_count_each_sequence_s_own_work() -> None:
    shape = packed_config(True).shape
    per = sum(4.0 * 4 * 64 * n * n / 2 for n in SEQLENS)
    assert shape_ops(shape) == per
    dense = attention_ops(batch=1, heads=4, q_len=sum(SEQLENS), kv_len=sum(SEQLENS),
                          head_dim=64, causal=True)
    assert dense > 2 * per  # the packed tokens' square would overcount
    assert attention_ops(batch=1, heads=2, q_len=30, kv_len=50, head_dim=8, causal=False,
                         seqlens=[10, 20], kv_seqlens=[20, 30]) == 4.0 * 2 * 8 * (200 + 600)


@pytest.mark.parametrize(("args", "says"), [
    (["--seqlens", "10,x"], "comma list of positive lengths"),
    (["--seqlens", "10,0"], "comma list of positive lengths"),
    (["--seqlens", "100,200", "--q-len", "400"], "--q-len 400 is not the sum of --seqlens"),
    (["--seqlens", "100,200", "--layout", "HND"], "the layout is NHD, not HND"),
    (["--seqlens", "100,200", "--batch", "2"], "--batch is 1, not 2"),
    (["--seqlens", "100,200", "--kv-seqlens", "50"], "--kv-seqlens has 1 lengths, --seqlens 2"),
    (["--seqlens", "100,200", "--kv-seqlens", "50,60", "--causal"], "causal packed sequences"),
    (["--kv-seqlens", "50"], "--kv-seqlens needs --seqlens"),
    (["--seqlens", "100,200", "--variant", "sdpa"], "sdpa runs no packed sequences"),
    (["--variant", "sage2-varlen"], "sage2-varlen runs packed sequences: give --seqlens"),
    (["--variant", "sage2-varlen[return_lse=true]", "--seqlens", "8"], "no option 'return_lse'"),
    (["--seqlens", "100,200", "--tail-study"], "--tail-study times one sequence"),
])
def test_bad_packed_input_is_one_line_and_exit_2(cli_here, args: list[str], says: str) -> None:
    # in this process (main() as `python -m sagetui` calls it, its exit status and stderr):
    # a refusal needs no interpreter of its own; test_cli's refusals run as a child process
    out = cli_here("run", "--heads", "2", "--head-dim", "32", "--device", "cpu", *args)
    assert out.returncode == 2, out.stderr
    lines = [x for x in out.stderr.strip().splitlines() if not x.startswith("usage:")]
    assert len(lines) == 1 and says in lines[0], out.stderr


def test_a_packed_run_with_return_lse_reports_and_checks(cli_here, tmp_path) -> None:
    """The whole path: run, accuracy per sequence with the lse's error, the report's options
    and TOPS from the per-sequence operations, and `sagetui check` recomputing them (and
    catching a TOPS that counts the packed tokens' square)."""
    out = cli_here("run", "--variant", "lse=reference[return_lse=true]", "--variant",
                   "plain=reference",
                   "--seqlens", "96,32,160", "--heads", "2", "--head-dim", "32", "--causal",
                   "--rounds", "2", "--iterations", "2", "--warmup", "1", "--device", "cpu",
                   "--json", "r.json")
    assert out.returncode == 0, out.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["config"]["shape"]["seqlens"] == [96, 32, 160]
    lse, plain = report["variants"]
    assert lse["options"]["return_lse"] is True and plain["options"]["return_lse"] is False
    assert 0 < lse["accuracy"]["lse_max_abs_error"] < 0.05
    assert plain["accuracy"].get("lse_max_abs_error") is None
    assert lse["accuracy"]["relative_l1"] < 0.06
    ops = 4.0 * 2 * 32 * (96 * 96 + 32 * 32 + 160 * 160) / 2
    assert lse["achieved"]["call_tops"] == pytest.approx(ops / lse["timing"]["p50_s"] / 1e12)
    assert cli_here("check", "r.json").returncode == 0
    lse["achieved"]["call_tops"] = 4.0 * 2 * 32 * 288 * 288 / 2 / lse["timing"]["p50_s"] / 1e12
    (tmp_path / "bad.json").write_text(json.dumps(report))
    bad = cli_here("check", "bad.json")
    assert bad.returncode != 0 and "call_tops" in bad.stdout + bad.stderr


def test_a_captured_varlen_call_replays_as_packed_sequences(cli_here, tmp_path,
                                                           monkeypatch) -> None:
    """A real capture (SageAttention's stand-in from test_capture, its sageattn_varlen per
    sequence) replayed: the varlen call is a point of packed sequences whose lengths come from
    its cu_seqlens, measured by the reference; sdpa at that point is refused, not run dense."""
    import sys

    import sagetui
    from tests.test_capture import STAND_IN

    (tmp_path / "site" / "sageattention").mkdir(parents=True)
    (tmp_path / "site" / "sageattention" / "__init__.py").write_text(STAND_IN)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "sageattention", raising=False)
    packed = torch.randn(96, 2, 32, dtype=torch.bfloat16)
    cu = torch.tensor([0, 64, 96], dtype=torch.int32)
    try:
        with sagetui.capture(tmp_path / "cap"):
            import sageattention

            sageattention.sageattn_varlen(packed, packed, packed, cu, cu, 64, 64, is_causal=True)
    finally:
        sys.modules.pop("sageattention", None)
    out = cli_here("run", "--workload", "cap", "--variant", "reference", "--rounds", "1",
                   "--iterations", "1", "--warmup", "0", "--device", "cpu", "--json", "w.json")
    assert out.returncode == 0, out.stderr
    report = json.loads((tmp_path / "w.json").read_text())
    assert '"seqlens": [64, 32]' in json.dumps(report)  # the call's point, as packed
    assert cli_here("check", "w.json").returncode == 0
    refused = cli_here("run", "--workload", "cap", "--variant", "sdpa", "--device", "cpu")
    assert refused.returncode == 2 and "sdpa runs no packed sequences" in refused.stderr


def test_a_sweep_of_packed_sequences_is_refused(cli_here) -> None:
    """A sweep sets each point's lengths; packed ones are fixed: one line, exit 2."""
    out = cli_here("sweep", "--heads", "2", "--head-dim", "32", "--device", "cpu", "--seqlens",
                   "100,200", "--variant", "reference")
    assert out.returncode == 2, out.stderr
    lines = [x for x in out.stderr.strip().splitlines() if not x.startswith("usage:")]
    assert len(lines) == 1 and "--seqlens fixes them" in lines[0], out.stderr
