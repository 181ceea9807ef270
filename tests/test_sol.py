"""Issue 24: the speed of light per phase (core/sol.py), its check (core/run/check_sol.py)
and its Markdown. The bytes model is checked term by term against the sizes SageAttention's
quant.py and core.py allocate, worked out by hand here; the recomputation against a real
H200 report (sagetui/sample_results/h200_sm89_reference_shape.json, which measured the copy
bandwidth; where a test needs another copy block, or none, it is built here, said so where it
is)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from sagetui.core import sol
from sagetui.core.check.report import check_report
from sagetui.core.export.report import to_markdown
from sagetui.core.report.model import Report
from sagetui.core.run.check_sol import expected_sol

ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "sagetui" / "sample_results" / "h200_sm89_reference_shape.json"
SMALL = {"batch": 1, "heads": 2, "q_len": 100, "head_dim": 128, "dtype": "bf16"}
SM89 = {"qk_quant_gran": "per_warp", "smooth_k": True, "pv_accum": "fp32+fp32"}


def test_sm89_per_warp_bytes_are_quant_py_s_tensors() -> None:
    t = sol.phase_traffic("sage2-sm89", "sm89", SM89, SMALL)
    assert t is not None
    rows = 100 * 2  # tokens x heads
    bf16, i8 = rows * 128 * 2, rows * 128
    # km = k.mean(dim=seq): read K, write (B, 1, Hkv, D) bf16
    assert t["k_mean_and_smoothing_preparation"] == (bf16, 2 * 128 * 2)
    # per_warp_int8: q_scale (B, Hq, ceil(100/128) * (128/32)) float32
    assert t["q_int8_quantization"] == (bf16, i8 + 2 * 4 * 4)
    # quant_per_block_int8_fuse_sub_mean_cuda: k and km in, k_int8 and (B, Hkv, ceil(100/64))
    assert t["k_int8_subtract_mean_quantization"] == (bf16 + 2 * 128 * 2, i8 + 2 * 2 * 4)
    # per_channel_fp8: transposed copy padded to 128 tokens, then fp8 and v_scale (B, Hkv, D)
    padded = 2 * 128 * 128
    assert t["v_transpose_pad_permute"] == (bf16, padded * 2)
    assert t["v_scale_fp8_quantization"] == (padded * 2, padded + 2 * 128 * 4)
    # the main loop: q_int8, k_int8, v_fp8 and the three scales in; o in bf16 out
    assert t["fused_mainloop"] == (i8 + i8 + padded + 2 * 4 * 4 + 2 * 2 * 4 + 2 * 128 * 4,
                                   bf16)
    # parents are the sums of their children
    q, k = t["q_int8_quantization"], t["k_int8_subtract_mean_quantization"]
    assert t["qk_int8_quantization"] == (q[0] + k[0], q[1] + k[1])


def test_sm90_pads_v_to_128_tokens_and_head_dim_96_is_padded() -> None:
    shape = {**SMALL, "head_dim": 96}
    t = sol.phase_traffic("sage2-sm90", "sm90", {**SM89, "smooth_k": False}, shape)
    assert t is not None
    rows, per_token = 200, 2 * 128
    # F.pad of q, k, v from 96 to 128; no K mean without smooth_k
    assert t["k_mean_and_smoothing_preparation"] == (3 * rows * 96 * 2, 3 * rows * 128 * 2)
    assert "k_int8_quantization" in t and "k_int8_subtract_mean_quantization" not in t
    # core.py's torch.zeros (28 tokens) and torch.cat to 128, then the transpose
    zeros = 28 * per_token * 2
    assert t["v_transpose_pad_permute"] == (rows * 128 * 2 + zeros + 128 * per_token * 2,
                                            zeros + 2 * 128 * per_token * 2)


def test_per_thread_and_sm80_and_one_phase_backends() -> None:
    pt = sol.phase_traffic("sage2-sm89", "sm89", {**SM89, "qk_quant_gran": "per_thread"},
                           SMALL)
    assert pt is not None
    rows = 200
    # per_thread_int8: 8 scales per Q warp; `k - km` is a torch op before the K kernel
    assert pt["q_int8_quantization"][1] == rows * 128 + 2 * 4 * 8 * 4
    assert pt["k_int8_subtract_mean_quantization"] == (
        2 * rows * 128 * 2 + 2 * 128 * 2, rows * 128 * 2 + rows * 128 + 2 * 2 * 4 * 4)
    fp16 = sol.phase_traffic("sage2-sm80", "sm80", {"smooth_k": True}, {**SMALL, "dtype": "fp16"})
    bf16 = sol.phase_traffic("sage2-sm80", "sm80", {"smooth_k": True}, SMALL)
    assert fp16 is not None and bf16 is not None
    assert fp16["v_fp16_conversion"] == (0, 0)  # .to(float16) of an fp16 V moves nothing
    assert bf16["v_fp16_conversion"] == (rows * 128 * 2, rows * 128 * 2)
    one = sol.phase_traffic("sdpa", None, {}, {**SMALL, "kv_len": 50, "kv_heads": 1})
    assert one == {"attention": ((200 + 2 * 50) * 128 * 2, 200 * 128 * 2)}


@pytest.mark.parametrize("backend,kernel,shape", [
    ("sage-triton", None, SMALL), ("reference", "sm89", SMALL),
    ("sage2-sm89", "sm89", {**SMALL, "dtype": "fp32"}), ("sage2-sm89", "sm89", {"heads": 2}),
])
def test_unmodelled_is_no_figure(backend: str, kernel: str | None, shape: dict) -> None:
    assert sol.phase_traffic(backend, kernel, SM89, shape) is None


def test_speed_of_light_formulas() -> None:
    out = sol.speed_of_light({"a": (600, 400), "fused_mainloop": (10, 0)},
                             {"a": 1e-6, "fused_mainloop": 2e-3, "b": 1.0}, 2000.0,
                             ops=4e12, compute_phase="fused_mainloop", peak_tops=1000.0,
                             mean_clock_mhz=1500.0, max_clock_mhz=2000.0)
    assert out is not None
    assert out["phases"]["a"] == {"bytes_read": 600, "bytes_written": 400, "gbps": 1.0,
                                  "share_of_copy": 0.0005}
    assert out["phases"]["fused_mainloop"]["gbps"] == pytest.approx(10 / 2e-3 / 1e9)
    assert "b" not in out["phases"]  # no bytes model, no figure
    assert out["tops"] == pytest.approx(2000.0)
    assert out["clock_ceiling_tops"] == pytest.approx(750.0)
    assert out["share_of_clock_ceiling"] == pytest.approx(2000 / 750)
    assert out["share_of_peak"] == pytest.approx(2.0)
    assert sol.copy_gbps([0.5, 0.25, 1.0], 10**9) == pytest.approx(2.0)
    # the CPU reference: no bytes model and no peak -> no block
    assert sol.speed_of_light(None, {"fused_mainloop": 1.0}, None, ops=1e9,
                              compute_phase="fused_mainloop", peak_tops=None,
                              mean_clock_mhz=None, max_clock_mhz=None) is None


def _h200() -> dict:
    return json.loads(H200.read_text())


def _with_sol(data: dict) -> dict:
    report = Report.model_validate(data)
    data["variants"][0]["sol"] = expected_sol(report, report.variants[0])
    return data


def test_check_recomputes_the_sol_of_a_real_h200_report() -> None:
    data = _with_sol(_h200())
    s = data["variants"][0]["sol"]
    # the real rounds ran at a mean 1,966 MHz of 1,980: the ceiling is below the datasheet's
    assert s["max_sm_clock_mhz"] == 1980 and 1900 < s["mean_sm_clock_mhz"] < 1980
    assert s["clock_ceiling_tops"] < s["peak_tops"] == 1979.0
    assert s["share_of_clock_ceiling"] > s["share_of_peak"]
    assert check_report(Report.model_validate(data)) == []
    for path, factor in ((("phases", "fused_mainloop", "gbps"), 1.01),
                         (("clock_ceiling_tops",), 0.99), (("phases", "q_int8_quantization",
                                                             "bytes_read"), 2)):
        bad = copy.deepcopy(data)
        node = bad["variants"][0]["sol"]
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = node[path[-1]] * factor
        found = check_report(Report.model_validate(bad))
        assert [m.path for m in found] == ["$.variants[0].sol." + ".".join(path)], found


def test_check_refuses_a_figure_the_report_cannot_give() -> None:
    data = _with_sol(_h200())
    data["variants"][0]["sol"]["phases"]["mystery"] = {"bytes_read": 1, "bytes_written": 1}
    data["variants"][0]["sol"]["copy_gbps"] = 4000.0  # no copy bandwidth in the environment
    found = {m.path for m in check_report(Report.model_validate(data))}
    assert found == {"$.variants[0].sol.phases.mystery.bytes_read",
                     "$.variants[0].sol.phases.mystery.bytes_written",
                     "$.variants[0].sol.copy_gbps"}


def test_copy_bandwidth_is_recomputed_from_its_repeats() -> None:
    """The copy block here is built by the test (the fixture predates it); the arithmetic is
    what check verifies: the median of moved bytes over each repeat's seconds."""
    data = _h200()
    moved = 2 * 2**30
    data["environment"]["gpu"]["copy_bandwidth"] = {
        "seconds": [moved / 4.0e12, moved / 3.9e12, moved / 4.1e12], "moved_bytes": moved,
        "buffer_bytes": moved // 2, "repeats": 3, "gbps": 4000.0, "method": sol.COPY_METHOD}
    data = _with_sol(data)
    s = data["variants"][0]["sol"]
    assert s["copy_gbps"] == pytest.approx(4000.0)
    q = s["phases"]["q_int8_quantization"]
    assert q["share_of_copy"] == pytest.approx(q["gbps"] / 4000.0)
    assert check_report(Report.model_validate(data)) == []
    data["environment"]["gpu"]["copy_bandwidth"]["gbps"] = 4100.0
    found = [m.path for m in check_report(Report.model_validate(data))]
    assert found == ["$.environment.gpu.copy_bandwidth.gbps"]


def test_markdown_shows_bytes_bandwidth_and_the_clock_ceiling() -> None:
    md = to_markdown(Report.model_validate(_with_sol(_h200())))
    assert "| phase | p50 ms | p90 ms | share | bytes | GB/s | % copy |" in md
    own = md[md.index("Phases of `sage2-sm89`"):]  # the top-level table (report 000's) has none
    row = next(line for line in own.splitlines() if line.startswith("| q_int8_quantization"))
    assert "775.7 MiB | 3,079 | 72.9 |" in row  # the copy bandwidth this report measured
    assert "fused_mainloop TOPS 319.6; of clock ceiling 16.3 % of 1,959 TOPS at 1,960 of " \
           "1,980 MHz; of datasheet 16.1 % of 1,979; copy GB/s 4,223." in md
    # the same report without its copy bandwidth (as one recorded before it was measured)
    data = _h200()
    del data["environment"]["gpu"]["copy_bandwidth"]
    md = to_markdown(Report.model_validate(_with_sol(data)))
    own = md[md.index("Phases of `sage2-sm89`"):]
    row = next(line for line in own.splitlines() if line.startswith("| q_int8_quantization"))
    assert "775.7 MiB | 3,079 | - |" in row
    assert "of datasheet 16.1 % of 1,979; copy GB/s not measured." in md


def test_a_live_h200_run_gives_the_sol_check_recomputes() -> None:
    """A real H200 run's recorded event stream (sm90, sm89, sdpa), folded as the session
    folds it: the report's sol blocks are figures.sol's, and check recomputes them; the
    console's phase rows carry the same GB/s."""
    from sagetui.core.run.assemble import build_report
    from sagetui.core.run.figures import sol as live_sol
    from sagetui.tui.source import Source

    from .test_parity import STREAMS, folded, replay

    events, _ = replay(next(p for p in STREAMS if p.stem == "h200_sm90_sm89_sdpa"))
    model = folded(events)
    report = build_report(model)
    assert [v.name for v in report.variants or [] if v.sol] == list(model.variants)
    assert [m for m in check_report(report) if ".sol" in m.path] == []
    for v in report.variants or []:
        assert v.sol is not None
        assert v.sol.model_dump(exclude_none=True) == expected_sol(report, v)
        assert v.sol.max_sm_clock_mhz == 1980 and v.sol.clock_ceiling_tops
        # measured by the runner at the run's start: an H200's device-to-device copy
        assert v.sol.copy_gbps is not None and 3000 < v.sol.copy_gbps < 4900
    sdpa = next(v for v in report.variants or [] if v.backend == "sdpa")
    assert sdpa.sol is not None and set(sdpa.sol.phases or {}) == {"attention"}
    src = Source("live", live=True)
    src.reset(model)
    name = next(n for n, v in model.variants.items() if v.backend == "sage2-sm89")
    _, rows = src.phase_rows(name)
    want = live_sol(model, model.variants[name]) or {}
    got = {r.name: r.gbps for r in rows}
    assert got == {n: p.get("gbps") for n, p in want["phases"].items()}
    from sagetui.tui.widgets.phase_table import COLUMNS, SOL_COLUMNS, _cells

    q = next(r for r in rows if r.name == "q_int8_quantization")
    cells = _cells(q, sol=True)
    assert len(cells) == len(COLUMNS + SOL_COLUMNS) and cells[-3].endswith("MiB")
    assert cells[-1].endswith("%")  # its share of the measured copy bandwidth


def test_the_copy_buffer_is_far_larger_than_the_l2() -> None:
    from sagetui.runner.bandwidth import GIB, buffer_bytes

    assert buffer_bytes(62914560, 140 * GIB) == GIB  # an H200's 60 MiB L2: 1 GiB
    assert buffer_bytes(200 * 2**20, 140 * GIB) == 1600 * 2**20  # 8 x a larger L2
    assert buffer_bytes(62914560, 3 * GIB) is None  # two buffers would take over half
