"""Issue 24's kernel facts: cuobjdump's resource usage parsed, the main-loop instantiation picked,
the occupancy calculator's rules, the runner's reading of a module, the report's block, `check`
and the exports."""

from __future__ import annotations

import csv
import hashlib
import io
import itertools
import json
import re
from pathlib import Path

import pytest

from sagetui.cli.errors import UsageError
from sagetui.core.check.report import check_report
from sagetui.core.export.report import kernel_facts_csv, to_markdown
from sagetui.core.kernel_facts import (
    ARCH_LIMITS,
    SM80_FUNCTIONS,
    SM89_FUNCTIONS,
    SM90_FUNCTIONS,
    KernelFacts,
    KernelUsage,
    Launch,
    ResourceFormatError,
    arch_key,
    derive,
    function_names,
    kernel_facts,
    occupancy,
    parse_resource_usage,
    select_main_loop,
    template_of,
)
from sagetui.core.paths import cuda_tool
from sagetui.core.report.model import Report
from sagetui.runner.kernel_facts import NO_CUOBJDUMP, demangle, read_facts

from .conftest import REF_001

# `cuobjdump -res-usage` of a two-function sm_52 program, as printed on NVIDIA's forum
# (forums.developer.nvidia.com/t/cuobjdump-register-usage-information/247352): the
# documented format, from a real run
FORUM_DUMP = """
Fatbin elf code:
================
arch = sm_52
code version = [1,7]
producer = <unknown>
host = linux
compile_size = 64bit

Resource usage:
 Common:
  GLOBAL:0
 Function _Z1kPfS_:
  REG:17 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:336 CONSTANT[2]:60 TEXTURE:0 SURFACE:0 SAMPLER:0
 Function _Z1ff:
  REG:14 STACK:0 SHARED:0 LOCAL:0 TEXTURE:0 SURFACE:0 SAMPLER:0
"""


def test_the_documented_format_parses_function_by_function():
    usage = parse_resource_usage(FORUM_DUMP)
    assert [u.function for u in usage] == ["_Z1kPfS_", "_Z1ff"]
    k = usage[0]
    assert (k.arch, k.registers, k.stack_bytes, k.static_shared_bytes, k.local_bytes) == \
        ("sm_52", 17, 0, 0, 0)
    assert k.constant_bytes == {"0": 336, "2": 60}
    assert usage[1].registers == 14 and usage[1].constant_bytes == {}
    assert function_names(FORUM_DUMP) == ["_Z1kPfS_", "_Z1ff"]


@pytest.mark.parametrize(("text", "says"), [
    (" Function _Z1kPfS_:\n GLOBAL:0\n", "no REG: figures after function _Z1kPfS_"),
    (" Function _Z1kPfS_:\n", "ends after function _Z1kPfS_"),
    (" Function _Z1a:\n Function _Z1b:\n  REG:1\n", "function _Z1a has no figures"),
])
def test_a_function_without_its_figures_is_named(text, says):
    with pytest.raises(ResourceFormatError, match=says):
        parse_resource_usage(text)


def test_template_arguments_split_at_the_top_level_only():
    name = ("void qk_int_sv_f8_attn_kernel<128u, 64u, (DataType)1, (QuantGranularity)2, "
            "float, true, __half>(signed char*, signed char*, float)")
    assert template_of(name) == ("qk_int_sv_f8_attn_kernel",
                                 ["128u", "64u", "(DataType)1", "(QuantGranularity)2", "float",
                                  "true", "__half"])
    assert template_of("k(float*, float*)") is None
    assert template_of("f(std::vector<int>)") is None


@pytest.mark.parametrize("arch", ["sm_90a", "sm_90", "sm90", "9.0", "SM_90A"])
def test_arch_keys(arch):
    assert arch_key(arch) == "sm_90"


def test_registers_limit_by_sub_partition_and_the_limiting_factor_is_named():
    """168 registers: 5,376 per warp; 16,384 per sub-partition hold 3 warps, 12 per SM: three
    4-warp CTAs. Shared memory (40 KiB + 1 KiB reserved) would allow 5 of 228 KiB."""
    o = occupancy("sm_90a", registers=168, threads_per_cta=128, static_shared_bytes=0,
                  dynamic_shared_bytes=40960)
    assert o is not None
    assert o.limits == {"registers": 3, "shared memory": 5, "warps": 16, "CTAs": 32}
    assert (o.ctas_per_sm, o.limited_by, o.active_warps, o.max_warps) == (3, ["registers"], 12, 64)
    assert o.theoretical_occupancy == 12 / 64
    assert o.shared_per_cta_bytes == 40960 + 1024


def test_registers_round_up_to_256_per_warp():
    """129 registers: 4,128 per warp rounds up to 4,352; 16,384 // 4,352 = 3 one-warp CTAs per
    sub-partition, where 128 registers (4,096) fit 4."""
    def regs(n: int) -> int:
        o = occupancy("sm_90", registers=n, threads_per_cta=32, static_shared_bytes=0,
                      dynamic_shared_bytes=0)
        assert o is not None
        return o.limits["registers"]
    assert regs(128) == 16 and regs(129) == 12 and regs(255) == 8


def test_shared_memory_rounds_up_to_128_bytes_and_counts_the_reserved_kib():
    """sm_89: 100 KiB per SM. 33,000 B static + 0 dynamic -> 33,024 + 1,024 = 34,048 per CTA:
    3 fit in 102,400."""
    o = occupancy("sm_89", registers=32, threads_per_cta=128, static_shared_bytes=33000,
                  dynamic_shared_bytes=0)
    assert o is not None and o.shared_per_cta_bytes == 34048
    assert o.limits["shared memory"] == 3 and o.limited_by == ["shared memory"]


def test_warps_and_ctas_limits_and_ties():
    """sm_89 holds 48 warps: 4-warp CTAs of 32 registers stop at 12, all warps busy."""
    o = occupancy("sm_89", registers=32, threads_per_cta=128, static_shared_bytes=0,
                  dynamic_shared_bytes=0)
    assert o is not None and (o.ctas_per_sm, o.limited_by) == (12, ["warps"])
    assert o.theoretical_occupancy == 1.0
    # one-warp CTAs on sm_90: 64 warps would allow 64, the 32-CTA limit binds (and 64
    # registers: 2,048 per warp, 8 per sub-partition, 32 in all: a tie)
    o = occupancy("sm_90", registers=64, threads_per_cta=32, static_shared_bytes=0,
                  dynamic_shared_bytes=0)
    assert o is not None and (o.ctas_per_sm, o.limited_by) == (32, ["registers", "CTAs"])


def test_what_cannot_launch_has_no_ctas():
    too_big = occupancy("sm_90", registers=32, threads_per_cta=128, static_shared_bytes=0,
                        dynamic_shared_bytes=227 * 1024 + 1)
    assert too_big is not None and too_big.ctas_per_sm == 0
    assert too_big.limited_by == ["shared memory"]
    fits = occupancy("sm_90", registers=32, threads_per_cta=128, static_shared_bytes=0,
                     dynamic_shared_bytes=227 * 1024)
    assert fits is not None and fits.limits["shared memory"] == 1
    regs = occupancy("sm_90", registers=256, threads_per_cta=32, static_shared_bytes=0,
                     dynamic_shared_bytes=0)
    assert regs is not None and regs.limits["registers"] == 0


def test_an_architecture_outside_the_table_has_no_occupancy():
    assert occupancy("sm_75", registers=32, threads_per_cta=128, static_shared_bytes=0,
                     dynamic_shared_bytes=0) is None
    assert {"sm_80", "sm_86", "sm_89", "sm_90"} <= set(ARCH_LIMITS)


def test_cuda_tool_looks_on_path_then_cuda_home(tmp_path):
    home = tmp_path / "cuda"
    (home / "bin").mkdir(parents=True)
    env = {"PATH": str(tmp_path / "empty"), "CUDA_HOME": str(home)}
    assert cuda_tool("cuobjdump", env, default_home=str(tmp_path / "none")) is None
    tool = home / "bin" / "cuobjdump"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    assert cuda_tool("cuobjdump", env, default_home=str(tmp_path / "none")) == str(tool)


def test_a_kernel_usage_is_frozen_and_strict():
    k = KernelUsage(function="_Z1kv", arch="sm_90a", registers=1, stack_bytes=0,
                    static_shared_bytes=0, local_bytes=0)
    with pytest.raises(ValueError):
        KernelUsage(function="_Z1kv", arch=None, registers=-1, stack_bytes=0,
                    static_shared_bytes=0, local_bytes=0)
    with pytest.raises(ValueError):
        KernelUsage.model_validate({**k.model_dump(), "surplus": 1})


# -- the report's block, check and the exports ------------------------------------------------


def _facts(registers: int = 168, local: int = 0) -> dict:
    """A block as the runner writes it (derive: the one occupancy computation)."""
    k = KernelUsage(function="_Z25qk_int8_sv_f8_attn_kernelILj64EEvv", arch="sm_90a",
                    registers=registers, stack_bytes=0, static_shared_bytes=0,
                    local_bytes=local)
    kf = KernelFacts(module="/x/_qattn_sm90.so", module_sha256="ab" * 32, cuobjdump="release",
                     arch="sm_90", function="qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf",
                     kernel=k, threads_per_cta=128, dynamic_shared_bytes=40960,
                     occupancy=derive(k, "sm_90", 128, 40960))
    return kf.model_dump(exclude_none=True)


def _report_with_facts(*facts: dict | None) -> dict:
    data = json.loads(REF_001.read_text())
    for v, f in zip(data["variants"], facts, strict=False):
        if f is not None:
            v["kernel_facts"] = f
    return data


@pytest.mark.parametrize(("keys", "value"), [
    (["occupancy", "ctas_per_sm"], 4),
    (["occupancy", "theoretical_occupancy"], 0.25),
    (["occupancy", "limits", "registers"], 4),
    (["occupancy", "limits", "shared memory"], 6),
    (["occupancy", "limited_by"], ["shared memory"]),
    (["occupancy", "active_warps"], 16),
    (["occupancy", "shared_per_cta_bytes"], 40960),
])
def test_check_recomputes_the_occupancy_from_the_raw_figures(keys, value):
    data = _report_with_facts(_facts())
    assert check_report(Report.model_validate(data)) == []
    node = data["variants"][0]["kernel_facts"]
    for k in keys[:-1]:
        node = node[k]
    node[keys[-1]] = value
    paths = [m.path for m in check_report(Report.model_validate(data))]
    assert f"$.variants[0].kernel_facts.{'.'.join(keys)}" in paths


def test_check_recomputes_from_changed_raw_figures_too():
    data = _report_with_facts(_facts())
    data["variants"][0]["kernel_facts"]["kernel"]["registers"] = 64  # occupancy left at 168's
    paths = [m.path for m in check_report(Report.model_validate(data))]
    assert "$.variants[0].kernel_facts.occupancy.ctas_per_sm" in paths


def test_a_report_without_the_block_still_loads_and_one_with_it_round_trips():
    plain = Report.model_validate(json.loads(REF_001.read_text()))
    assert all(v.kernel_facts is None for v in plain.variants or [])
    data = _report_with_facts(_facts(), {"unavailable": NO_CUOBJDUMP})
    r = Report.model_validate(data)
    again = Report.model_validate(json.loads(r.model_dump_json(exclude_none=True)))
    assert again == r
    assert r.variants[1].kernel_facts.unavailable == NO_CUOBJDUMP


def test_markdown_marks_the_facts_the_variants_do_not_share():
    data = _report_with_facts(_facts(168), _facts(128, local=16))
    md = to_markdown(Report.model_validate(data))
    names = [v["name"] for v in data["variants"]]
    table = md[md.index("| kernel fact |"):].split("\n\n")[0].splitlines()
    assert table[0].startswith(f"| kernel fact | {names[0]} | {names[1]} |")
    row = {line.split(" | ")[0].lstrip("| "): line for line in table[2:]}
    assert row["registers / thread ≠"].endswith("| **168** | **128** |")
    assert row["local (spills) B / thread ≠"].endswith("| **0** | **16** |")
    # 128 registers: 4 warps per sub-partition, 4 CTAs; shared memory still allows 5
    assert row["CTAs / SM ≠"].endswith("| **3** | **4** |")
    assert row["threads / CTA"].endswith("| 128 | 128 |")


def test_markdown_says_why_a_variant_has_no_facts_and_leaves_it_out_of_the_marks():
    data = _report_with_facts(_facts(), {"unavailable": NO_CUOBJDUMP})
    md = to_markdown(Report.model_validate(data))
    assert f"| function | qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf | {NO_CUOBJDUMP} |" \
        in md
    assert "≠" not in md.split("the variants differ):")[1]


def test_the_kernel_facts_csv_has_one_row_per_variant_with_the_block():
    data = _report_with_facts(_facts(168), _facts(128, local=16))
    rows = list(csv.DictReader(io.StringIO(kernel_facts_csv(Report.model_validate(data)))))
    assert [r["registers"] for r in rows] == ["168", "128"]
    assert [r["ctas_per_sm"] for r in rows] == ["3", "4"]
    assert rows[0]["limited_by"] == "registers" and rows[1]["local_bytes"] == "16"
    assert rows[0]["limit_shared_memory"] == "5"


# -- the runner's reading of a module (cuobjdump itself is not on this machine) --------------------

LAUNCH = Launch(kernel="sm90", function="qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf",
                head_dim=128, dtype="bf16", causal=False, qk_quant_gran="per_thread")


def test_without_cuobjdump_the_fact_is_a_line_and_the_module_is_still_named(tmp_path):
    so = tmp_path / "_qattn_sm90.so"
    so.write_bytes(b"\x7fELF not really")
    kf = read_facts(str(so), LAUNCH, "sm_90", sha256=None, tool=None)
    assert kf.unavailable == NO_CUOBJDUMP == ("not available: no cuobjdump (not on PATH, in "
                                              "$CUDA_HOME/bin nor /usr/local/cuda/bin)")
    assert kf.module == str(so) and kf.module_sha256 == hashlib.sha256(so.read_bytes()).hexdigest()
    assert kf.kernel is None and kf.occupancy is None


def test_a_cuobjdump_that_fails_is_a_line_with_its_words(tmp_path):
    tool = tmp_path / "cuobjdump"
    tool.write_text("#!/bin/sh\n[ \"$1\" = --version ] && { echo 'Cuda compilation tools, "
                    "release 13.0, V13.0.88'; exit 0; }\n"
                    "echo \"cuobjdump fatal   : Could not open input file '$2'\" >&2; exit 1\n")
    tool.chmod(0o755)
    kf = read_facts(str(tmp_path / "gone.so"), LAUNCH, "sm_90", sha256=None, tool=str(tool))
    assert kf.unavailable == ("not available: cuobjdump exited 1: cuobjdump fatal   : Could not "
                              f"open input file '{tmp_path / 'gone.so'}'")
    assert kf.cuobjdump == "Cuda compilation tools, release 13.0, V13.0.88"
    assert kf.module_sha256 is None


def test_c_plus_plus_filt_demangles_in_one_call():
    names = demangle(["_Z1kPfS_", "_Z1ff", "not_mangled"])
    assert names == {"_Z1kPfS_": "k(float*, float*)", "_Z1ff": "f(float)"}


# -- the real H200 build: cuobjdump's dumps and Nsight Compute's occupancy ------------------------
# tests/data/kernel_facts: `cuobjdump --dump-resource-usage` of SageAttention d1a57a5's
# _qattn_sm80/89/90 built for sm_90a (CUDA 13.0), `cuobjdump --version`, and ncu's LaunchStats
# and Occupancy sections of one sm89-kernel and one sm90-kernel launch, on an H200: real runs,
# copied as recorded.

DATA = Path(__file__).with_name("data") / "kernel_facts"
FUNCTIONS = {"sm80": SM80_FUNCTIONS, "sm89": SM89_FUNCTIONS, "sm90": SM90_FUNCTIONS}
INST_BUF = "qk_int8_sv_f16_accum_f16_attn_inst_buf"  # sm80's fp16+fp32: its own tiles


def _dump(module: str) -> tuple[list[KernelUsage], dict[str, str]]:
    text = (DATA / f"cuobjdump__qattn_{module}.txt").read_text()
    return parse_resource_usage(text), demangle(function_names(text))


def _launch(module: str, function: str, *args: object) -> Launch:
    kernel = "sm80-inst-buf" if function == INST_BUF else module
    return Launch(kernel, function, *args)  # type: ignore[arg-type]


@pytest.mark.parametrize(("module", "count"), [("sm80", 128), ("sm89", 224), ("sm90", 64)])
def test_the_h200_builds_dumps_parse_whole(module, count):
    usage, names = _dump(module)
    assert len(usage) == count and len(names) == count
    assert {u.arch for u in usage} == {"sm_90a"}
    assert all(u.registers > 0 and u.static_shared_bytes >= 1024 for u in usage)


@pytest.mark.parametrize("module", ["sm80", "sm89", "sm90"])
def test_every_call_picks_one_instantiation_of_its_own(module):
    """Every pybind function x head dim x output type x mask x granularity picks exactly one
    kernel, and no two calls pick the same (the LSE-returning half is never picked)."""
    usage, names = _dump(module)
    picked = {}
    for function, d, dtype, causal, gran in itertools.product(
            FUNCTIONS[module], (64, 128), ("fp16", "bf16"), (False, True),
            ("per_warp", "per_thread")):
        hit = select_main_loop(usage, names, _launch(module, function, d, dtype, causal, gran),
                               "sm_90")
        assert isinstance(hit, KernelUsage), hit
        picked[(function, d, dtype, causal, gran)] = hit.function
    assert len(set(picked.values())) == len(picked) == len(usage) // 2


def _ncu(name: str) -> tuple[str, dict[str, str]]:
    """The profiled kernel's name line and each metric's value, from ncu's text."""
    text = (DATA / f"ncu_occupancy_{name}.txt").read_text()
    kernel = next(ln.strip() for ln in text.splitlines() if ln.strip().startswith("void "))
    metrics = {}
    for ln in text.splitlines():
        m = re.match(r"^\s{4}(\S.*?\S)\s{2,}(?:\S.*?\s{2,})?([\d,.]+)\s*$", ln)
        if m:
            metrics[m.group(1)] = m.group(2).replace(",", "")
    return kernel, metrics


def _as_ncu_prints(args: list[str]) -> list[str]:
    """c++filt's template arguments as ncu prints them: 64u -> 64, (MaskMode)1 -> 1,
    true -> 1."""
    out = []
    for a in args:
        a = re.sub(r"^\(\w+\)", "", a).removesuffix("u")
        out.append({"true": "1", "false": "0"}.get(a, a))
    return out


# ncu's two launches: the sm90 kernel (fp32+fp32 with the fused V scale) and the sm89 kernel
# (fp32+fp32, instruction buffer), both per_thread, bf16, head dim 128, not causal, on an H200
NCU_CASES = [
    ("sm90", _launch("sm90", "qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf", 128, "bf16",
                     False, "per_thread")),
    ("sm89", _launch("sm89", "qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf", 128, "bf16",
                     False, "per_thread")),
]


@pytest.mark.parametrize(("module", "launch"), NCU_CASES, ids=[c[0] for c in NCU_CASES])
def test_the_selection_is_the_kernel_ncu_saw_launched(module, launch):
    usage, names = _dump(module)
    hit = select_main_loop(usage, names, launch, "sm_90")
    assert isinstance(hit, KernelUsage)
    ours = template_of(names[hit.function])
    assert ours is not None
    ncu_kernel, _ = _ncu(module)
    theirs = template_of(ncu_kernel)
    assert theirs is not None and theirs[0] == ours[0]
    assert [a.strip() for a in theirs[1]] == _as_ncu_prints(ours[1])


@pytest.mark.parametrize(("module", "launch"), NCU_CASES, ids=[c[0] for c in NCU_CASES])
def test_occupancy_equals_ncus(module, launch):
    """Registers, block size, dynamic and static shared memory, CTAs per SM, active warps and
    theoretical occupancy as ncu measured them; the register, warp and CTA limits as ncu's
    Block Limits. ncu's shared-memory limit is at the carveout the driver chose (its
    Configuration Size, 132 KiB): ours at that carveout equals it, and at the whole 228 KiB
    (our default) it is no lower, so the CTAs per SM agree."""
    usage, names = _dump(module)
    kf = kernel_facts((DATA / f"cuobjdump__qattn_{module}.txt").read_text(), names, launch,
                      "sm_90", module=f"_qattn_{module}.so", module_sha256=None, cuobjdump=None)
    _, m = _ncu(module)
    k, o = kf.kernel, kf.occupancy
    assert k is not None and o is not None and kf.unavailable is None
    assert k.registers == int(m["Registers Per Thread"])
    assert kf.threads_per_cta == int(m["Block Size"])
    assert f"{kf.dynamic_shared_bytes / 1000:.2f}" == m["Dynamic Shared Memory Per Block"]
    assert k.static_shared_bytes - 1024 == int(m["Static Shared Memory Per Block"])  # SHARED
    assert f"{1024 / 1000:.2f}" == m["Driver Shared Memory Per Block"]  # holds the reserved KiB
    assert o.ctas_per_sm * o.warps_per_cta == int(m["Theoretical Active Warps per SM"])
    assert f"{100 * o.theoretical_occupancy:.2f}" == m["Theoretical Occupancy"]
    assert o.limits["registers"] == int(m["Block Limit Registers"])
    assert o.limits["warps"] == int(m["Block Limit Warps"])
    assert o.limits["CTAs"] == int(m["Block Limit SM"])
    assert o.limits["shared memory"] >= int(m["Block Limit Shared Mem"])
    carveout = round(float(m["Shared Memory Configuration Size"]) * 1000 / 1024) * 1024
    at_ncus = occupancy("sm_90", registers=k.registers, threads_per_cta=128,
                        static_shared_bytes=k.static_shared_bytes,
                        dynamic_shared_bytes=kf.dynamic_shared_bytes or 0, smem_per_sm=carveout)
    assert at_ncus is not None
    assert at_ncus.limits["shared memory"] == int(m["Block Limit Shared Mem"])
    assert at_ncus.ctas_per_sm == o.ctas_per_sm


def test_the_runner_reads_a_module_once_with_its_tool(tmp_path):
    """cuobjdump is not on this machine: a stand-in prints the H200 build's real dump and
    version, and counts its runs. Everything else is real: the subprocess, c++filt, the
    module's sha256, the selection and the occupancy."""
    so = tmp_path / "_qattn_sm90.cpython-311-x86_64-linux-gnu.so"
    so.write_bytes(b"\x7fELF stand-in for the sm90 module")
    runs = tmp_path / "runs"
    tool = tmp_path / "cuobjdump"
    version = DATA / "cuobjdump_version.txt"
    tool.write_text(f"#!/bin/sh\nif [ \"$1\" = --version ]; then cat {version}; exit 0; fi\n"
                    f"echo run >> {runs}\n"
                    f"[ \"$1\" = --dump-resource-usage ] && [ \"$2\" = {so} ] || exit 2\n"
                    f"cat {DATA / 'cuobjdump__qattn_sm90.txt'}\n")
    tool.chmod(0o755)
    kf = read_facts(str(so), NCU_CASES[0][1], "sm_90", sha256=None, tool=str(tool))
    assert kf.unavailable is None
    assert kf.cuobjdump == "Cuda compilation tools, release 13.0, V13.0.85"
    assert kf.module_sha256 == hashlib.sha256(so.read_bytes()).hexdigest()
    assert kf.kernel is not None and (kf.kernel.registers, kf.kernel.static_shared_bytes) == \
        (168, 1152)
    assert kf.kernel_name is not None and kf.kernel_name.startswith(
        "void qk_int8_sv_f8_attn_kernel<64u, 128u, 128u, 128u, (QuantGranularity)3")
    assert kf.occupancy is not None and kf.occupancy.ctas_per_sm == 3
    other = Launch("sm90", NCU_CASES[0][1].function, 64, "fp16", True, "per_warp")
    again = read_facts(str(so), other, "sm_90", sha256=kf.module_sha256, tool=str(tool))
    assert again.kernel is not None and again.kernel.function != kf.kernel.function
    assert runs.read_text().count("run") == 1  # the second variant's facts: the same reading


def test_the_facts_travel_from_the_runners_event_to_the_report_and_back():
    """The runner's `variant` event over the wire (protocol.encode/decode), the one fold, the
    one report builder, the one loader: the block arrives whole, `check` agrees with it and
    with the variant's own grid, and the console's model of the saved report has it."""
    from sagetui.core import events as ev
    from sagetui.core.config import RunConfig, Shape, VariantSpec
    from sagetui.core.protocol import decode_event, encode
    from sagetui.core.run.assemble import build_report
    from sagetui.core.run.fold import apply, new_model
    from sagetui.core.run.load import from_report

    cfg = RunConfig(shape=Shape(heads=2, q_len=256, head_dim=128),
                    variants=[VariantSpec(name="a", backend="reference")], rounds=1,
                    iterations=2)
    m = new_model()
    apply(m, ev.RunStarted(config=cfg, created_utc="2026-01-01T00:00:00+00:00"))
    sent = ev.VariantLoaded(name="a", backend="reference", status="ok", kernel="sm90",
                            phases=[("fused_mainloop", None)],
                            facts={"kernel_facts": _facts(), "provenance": None})
    apply(m, decode_event(encode(sent)))
    report = build_report(m)
    kf = report.variants[0].kernel_facts
    assert kf is not None and kf.model_dump(exclude_none=True) == _facts()
    assert report.variants[0].scheduler is not None
    assert check_report(report) == []
    loaded = from_report(Report.model_validate_json(report.model_dump_json()))
    assert loaded.variants["a"].facts.kernel_facts == kf


def test_sagetui_run_writes_the_kernel_facts_csv_beside_the_report(tmp_path):
    """`--kernel-facts-csv PATH` is one of `sagetui run`'s outputs: parsed, checked writable,
    written atomically with the others."""
    import argparse

    from rich.console import Console

    from sagetui.cli.main import build_parser
    from sagetui.cli.options import check_outputs
    from sagetui.cli.run import write_outputs

    out = tmp_path / "facts.csv"
    args = build_parser().parse_args(["run", "--json", str(tmp_path / "r.json"),
                                      "--kernel-facts-csv", str(out)])
    assert isinstance(args, argparse.Namespace) and args.kernel_facts_csv == str(out)
    check_outputs(args)
    report = Report.model_validate(_report_with_facts(_facts(168), _facts(128, local=16)))
    assert write_outputs(report, args, Console(file=io.StringIO())).kept_all
    assert out.read_text() == kernel_facts_csv(report)
    bad = build_parser().parse_args(["run", "--kernel-facts-csv", str(tmp_path / "no" / "x.csv")])
    with pytest.raises(UsageError, match="--kernel-facts-csv"):
        check_outputs(bad)
