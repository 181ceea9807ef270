"""Scheduler grid facts against values computed by hand."""

import pytest

from sagetui.core import scheduler
from sagetui.core.derived import achieved, attention_ops


def test_reference_shape_matches_report_000():
    f = scheduler.grid_facts("sm89", batch=1, heads=56, q_len=37810, kv_len=37810, head_dim=128)
    # 37810 = 295 * 128 + 50 = 590 * 64 + 50
    assert f["q_ctas_per_head"] == 296 and f["grid_ctas"] == 296 * 56 == 16576
    assert f["k_iterations_per_cta"] == 591 and f["q_tail_rows"] == 50 and f["k_tail_rows"] == 50
    assert f["dynamic_shared_memory_bytes"] == (128 + 2 * 64) * 128 == 32768
    assert f["warps_per_cta"] == 4 and f["threads_per_cta"] == 128
    assert f["scheduled_q_rows"] == 37888
    assert f["q_row_efficiency"] == pytest.approx(37810 / 37888)


def test_exact_multiple_has_no_tail():
    f = scheduler.grid_facts("sm89", batch=2, heads=8, q_len=4096, kv_len=4096, head_dim=64)
    assert f["q_ctas_per_head"] == 32 and f["grid_ctas"] == 32 * 8 * 2 == 512
    assert f["k_iterations_per_cta"] == 64 and f["q_tail_rows"] == 0 and f["k_tail_rows"] == 0
    assert f["dynamic_shared_memory_bytes"] == 256 * 64
    assert f["q_row_efficiency"] == 1.0


def test_sm90_tiles():
    f = scheduler.grid_facts("sm90", batch=1, heads=56, q_len=37810, kv_len=37810, head_dim=128)
    # 37810 = 590 * 64 + 50 = 295 * 128 + 50
    assert f["cta_q"] == 64 and f["cta_k"] == 128
    assert f["q_ctas_per_head"] == 591 and f["grid_ctas"] == 591 * 56
    assert f["k_iterations_per_cta"] == 296 and f["q_tail_rows"] == 50 and f["k_tail_rows"] == 50
    assert f["warps_per_cta"] == 4 and f["threads_per_cta"] == 128
    assert f["dynamic_shared_memory_bytes"] == (64 + 2 * 128) * 128 == 40960


def test_gqa_grid_counts_query_heads_and_kv_len_differs():
    f = scheduler.grid_facts("sm89", batch=1, heads=32, q_len=1000, kv_len=3000, head_dim=96)
    # head_dim 96 pads to 128; 1000 = 7 * 128 + 104; 3000 = 46 * 64 + 56
    assert f["grid_ctas"] == 8 * 32 and f["q_tail_rows"] == 104
    assert f["k_iterations_per_cta"] == 47 and f["k_tail_rows"] == 56
    assert f["dynamic_shared_memory_bytes"] == 256 * 128 and f["head_dim"] == 128


def test_causal_iterations_per_cta():
    # q_len 300 -> CTAs over rows [0,128), [128,256), [256,300); each stops at its diagonal:
    # ceil(128/64)=2, ceil(256/64)=4, ceil(300/64)=5
    assert scheduler.causal_k_iterations(300, 300, scheduler.TILES["sm89"]) == [2, 4, 5]
    f = scheduler.grid_facts("sm89", batch=1, heads=2, q_len=300, kv_len=300, head_dim=64,
                             causal=True)
    assert f["k_iterations_per_cta"] == 5 and f["k_iterations_total"] == (2 + 4 + 5) * 2


def test_waves_over_multiprocessors():
    # an H200: 132 SMs, 228 KiB of shared memory each -> 7 CTAs of 32 KiB (threads allow 16)
    f = scheduler.grid_facts("sm89", batch=1, heads=56, q_len=37810, kv_len=37810, head_dim=128,
                       sm_count=132, smem_per_sm=228 * 1024)
    assert f["ctas_per_sm"] == 7
    assert f["waves"] == pytest.approx(16576 / (132 * 7))
    assert "waves" not in scheduler.grid_facts("sm89", batch=1, heads=1, q_len=128, kv_len=128,
                                         head_dim=64)


@pytest.mark.parametrize(("n", "tile", "want"), [
    (37810, 128, [37760, 37761, 37810]),
    (37810, 64, [37760, 37761, 37810]),
    (4096, 128, [3968, 3969, 4096]),  # a multiple: the boundary below it
    (100, 128, [1, 100]),
])
def test_tail_points(n, tile, want):
    assert scheduler.tail_points(n, tile) == want


def test_tail_rows_match_report_000():
    row = scheduler.tail_row("q_tail_fixed_kv", "sm89", 37761, 37810)
    assert row == {"sweep": "q_tail_fixed_kv", "q_len": 37761, "kv_len": 37810,
                   "q_ctas_per_head": 296, "k_iterations_per_cta": 591, "q_tail_rows": 1,
                   "k_tail_rows": 50, "scheduled_q_rows": 37888,
                   "q_row_efficiency": 0.9966480152027027}


def test_head_dim_over_128_is_refused():
    with pytest.raises(ValueError):
        scheduler.padded_head_dim(192)


def test_attention_ops_and_share_of_peak():
    ops = attention_ops(batch=1, heads=56, q_len=37810, kv_len=37810, head_dim=128,
                            causal=False)
    assert ops == 4 * 56 * 37810 * 37810 * 128
    a = achieved(ops, 0.052, 1979.0)
    assert a["peak_tops"] == 1979.0
    assert a["tops"] == pytest.approx(ops / 0.052 / 1e12)
    assert a["share_of_peak"] == pytest.approx(a["tops"] / 1979.0)
    assert achieved(ops, 1.0, None)["share_of_peak"] is None


def test_sm80_tiles_and_shared_memory():
    """qk_int_sv_f16_cuda_sm80.cu: CTA_Q 128, CTA_K 64, WARP_Q 32 (16 for the fp16+fp32
    wrapper at head dim 128), WARP_K 64; smem max(CTA_Q d + CTA_K d + 2 CTA_K d, 2 CTA_Q d)."""
    f = scheduler.grid_facts("sm80", batch=1, heads=56, q_len=37810, kv_len=37810, head_dim=128)
    assert (f["cta_q"], f["cta_k"], f["warp_q"], f["warp_k"]) == (128, 64, 32, 64)
    assert f["threads_per_cta"] == 128
    assert f["dynamic_shared_memory_bytes"] == 128 * 128 + 64 * 128 + 2 * 64 * 128  # 40 KiB
    assert f["grid_ctas"] == 296 * 56 and f["k_iterations_per_cta"] == 591
    buf = scheduler.grid_facts("sm80-inst-buf", batch=1, heads=56, q_len=37810, kv_len=37810,
                         head_dim=128)
    assert buf["warp_q"] == 16 and buf["threads_per_cta"] == 256
    d64 = scheduler.grid_facts("sm80-inst-buf", batch=1, heads=8, q_len=1000, kv_len=1000,
                         head_dim=64)
    assert d64["warp_q"] == 32 and d64["threads_per_cta"] == 128
    assert d64["dynamic_shared_memory_bytes"] == max(128 * 64 + 64 * 64 + 2 * 64 * 64,
                                                     2 * 128 * 64)
    # sm89's formula is unchanged: (CTA_Q + 2 CTA_K) d
    assert scheduler.grid_facts("sm89", batch=1, heads=1, q_len=128, kv_len=64,
                          head_dim=128)["dynamic_shared_memory_bytes"] == 256 * 128
