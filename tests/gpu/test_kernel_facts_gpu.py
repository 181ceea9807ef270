"""Issue 24 on a GPU: each sage2 CUDA backend's kernel facts in a real run's report equal what
`cuobjdump --dump-resource-usage` prints for the module it loaded (run here, apart from
sagetui's parser), the instantiation they name is the one its call launches (torch's profiler
sees the kernel), and `sagetui check` recomputes their occupancy.

Needs cuobjdump and c++filt (the CUDA toolkit, binutils). SAGETUI_GPU_STATS=<file.json>
records the facts and what reading one module costs a runner at load (suffix _kfacts).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from typing import Any

import pytest
import torch
from gpu_stats import GPU_MARKS, stats_fixture
from test_sage2_gpu import CASES, backend, make_inputs, run

from sagetui.core.check.report import check_report
from sagetui.core.config import RunConfig, Shape, VariantSpec
from sagetui.core.kernel_facts import Launch, template_of
from sagetui.core.paths import cuda_tool
from sagetui.session.session import Session

pytestmark = GPU_MARKS

STATS: dict[str, Any] = {}
_write_stats = stats_fixture(STATS, "_kfacts")

SPECS = ("sm80=sage2-sm80[pv_accum=fp32]", "sm80buf=sage2-sm80[pv_accum=fp16+fp32]",
         "sm89=sage2-sm89[pv_accum=fp32+fp32]", "sm89f16=sage2-sm89[pv_accum=fp32+fp16]",
         "sm89smooth=sage2-sm89[pv_accum=fp32,smooth_v=true]", "sm90=sage2-sm90")
SHAPE = Shape(heads=4, q_len=1000, head_dim=128, dtype="bf16", causal=True)


def _cuobjdump_figures(module: str, function: str) -> dict[str, dict[str, int]]:
    """arch -> REG, STACK, SHARED, LOCAL of `function`, read from cuobjdump's text here (not
    by sagetui's parser)."""
    tool = cuda_tool("cuobjdump")
    assert tool, "cuobjdump is not on PATH nor in $CUDA_HOME/bin"
    text = subprocess.run([tool, "--dump-resource-usage", module], capture_output=True,
                          text=True, check=True, timeout=300).stdout
    out: dict[str, dict[str, int]] = {}
    arch = "?"
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("arch = "):
            arch = line.split("=", 1)[1].strip()
        if line.strip() == f"Function {function}:":
            out[arch] = {k: int(v) for k, v in re.findall(r"\b(REG|STACK|SHARED|LOCAL):(\d+)",
                                                           lines[i + 1])}
    return out


def _demangled(name: str) -> str:
    tool = shutil.which("c++filt")
    assert tool
    return subprocess.run([tool, name], capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture(scope="module")
def report():
    specs = [VariantSpec.parse(s) for s in SPECS]
    cfg = RunConfig(shape=SHAPE, variants=specs, warmup=1, rounds=2, iterations=3)
    r = Session(cfg).run()
    ok = [v.name for v in r.variants if v.status == "ok"]
    assert "sm90" in ok and "sm89" in ok, r.faults  # an H200 runs both
    return r


def test_the_facts_equal_cuobjdumps_for_the_loaded_module(report):
    for v in report.variants:
        if v.status != "ok":
            continue
        kf = v.kernel_facts
        assert kf is not None and kf.unavailable is None, (v.name, kf)
        files = {f.path: f for f in v.provenance.files}
        assert kf.module in files and kf.module_sha256 == files[kf.module].sha256
        assert kf.kernel is not None and kf.occupancy is not None
        figures = _cuobjdump_figures(kf.module, kf.kernel.function)
        assert kf.kernel.arch in figures, (v.name, sorted(figures))
        f = figures[kf.kernel.arch]
        assert (kf.kernel.registers, kf.kernel.static_shared_bytes, kf.kernel.local_bytes,
                kf.kernel.stack_bytes) == (f["REG"], f["SHARED"], f["LOCAL"], f["STACK"]), v.name
        assert kf.threads_per_cta == v.scheduler.threads_per_cta
        assert kf.dynamic_shared_bytes == v.scheduler.dynamic_shared_memory_bytes
        STATS[v.name] = kf.model_dump(exclude_none=True)
    assert check_report(report) == []


def test_the_instantiation_named_is_the_calls_own(report):
    """c++filt's name of the recorded kernel: the run's head dim, output type and mask."""
    for v in report.variants:
        if v.status != "ok" or v.kernel_facts is None or v.kernel_facts.kernel is None:
            continue
        name = _demangled(v.kernel_facts.kernel.function)
        t = template_of(name)
        assert t is not None, name
        assert "128u" in t[1] and "__nv_bfloat16" in t[1] and "(MaskMode)1" in t[1], name


def _template_key(demangled: str) -> tuple[str, tuple[str, ...]] | None:
    """A demangled kernel's name and template arguments, hashable."""
    parsed = template_of(demangled)
    return None if parsed is None else (parsed[0], tuple(parsed[1]))


@pytest.mark.parametrize(("name", "options"), [
    ("sage2-sm80", {"pv_accum": "fp32"}), ("sage2-sm89", {"pv_accum": "fp32+fp32"}),
    ("sage2-sm90", {})])
def test_the_kernel_the_call_launches_is_the_one_selected(name, options):
    """torch's profiler names the kernels one call launches; the selection is among them."""
    from sagetui.runner.kernel_facts import read_facts

    case = CASES[1]  # NHD bf16 d128 causal
    b = backend(name, options)
    inputs = make_inputs(case)
    run(b, inputs)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        run(b, inputs)
        torch.cuda.synchronize()
    launched = {e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA}
    main = b.main_loop_kernel()
    assert main is not None and b.kernel is not None
    cap = torch.cuda.get_device_capability()
    t0 = time.perf_counter()
    kf = read_facts(main[0], Launch(kernel=b.kernel, function=main[1], head_dim=case.d,
                                    dtype="bf16", causal=True,
                                    qk_quant_gran=str(getattr(b, "gran", "per_warp"))),
                    f"sm_{cap[0]}{cap[1]}", sha256=None, tool=cuda_tool("cuobjdump"))
    STATS.setdefault("read_facts_s", {})[name] = time.perf_counter() - t0  # a runner's cost
    assert kf.kernel is not None, kf.unavailable
    want = _template_key(_demangled(kf.kernel.function))
    assert want is not None and want in {_template_key(n) for n in launched}, sorted(launched)
