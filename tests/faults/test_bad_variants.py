"""Bad variants: a path that does not exist is a usage error before anything runs; a variant
that cannot load, or whose kernel fails at run time, is reported with its real reason while the
other variants go on.

On this CPU machine the sage2-* backends are unavailable (no CUDA), and that is the reason the
runner gives for them. To see the loader's own reasons through the session as well, one test
starts the runner with sage2-sm89's availability check switched off, so that the variant's .so
really goes through variants.load_extension (the loader itself is tested in
tests/test_variants_cpu.py).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from sagetui.core.events import FaultRaised
from sagetui.session.session import Session

from ..conftest import sagetui_here
from .conftest import TINY, build_so, needs_gcc, no_traceback, sagetui, tiny_config

SO_NO_INIT = "int answer(void) { return 42; }\n"
# a symbol of torch's c10 that no torch has: what a build against another torch looks like
SO_UNDEFINED = ("void _ZN3c1015NoSuchSagetuiFnEv(void);\n"
                "void *PyInit__qattn_sm89(void) { _ZN3c1015NoSuchSagetuiFnEv(); return 0; }\n")

# the runner, with sage2-sm89 declared available on the CPU: its load() then really runs
LOADER_RUNNER = [sys.executable, "-c", (
    "import sagetui.runner.backends.sage2 as s\n"
    "s.Sage2Sm89Backend.check_available = classmethod(lambda cls, device: None)\n"
    "from sagetui.runner.main import main\n"
    "raise SystemExit(main())\n")]


def test_a_variant_path_that_does_not_exist_is_a_usage_error(tmp_path):
    t0 = time.monotonic()
    p = sagetui("run", "--variant", f"x=sage2-sm89@{tmp_path}/nowhere/_qattn_sm89.so", *TINY,
                cwd=tmp_path)
    assert p.returncode == 2
    assert p.stderr.splitlines() == [
        f"sagetui: error: --variant x=sage2-sm89@{tmp_path}/nowhere/_qattn_sm89.so: "
        f"{tmp_path}/nowhere/_qattn_sm89.so does not exist"]
    assert time.monotonic() - t0 < 20  # refused before a runner starts


def _bad_builds(tmp_path: Path) -> dict[str, Path]:
    empty_dir = tmp_path / "empty_prefix"
    empty_dir.mkdir()
    text = tmp_path / "text" / "_qattn_sm89.so"
    text.parent.mkdir()
    text.write_text("not a library\n")
    return {
        "dir": empty_dir,
        "text": text,
        "noinit": build_so(tmp_path, "noinit", SO_NO_INIT),
        "undef": build_so(tmp_path, "undef", SO_UNDEFINED),
    }


@needs_gcc
def test_failing_variants_are_named_with_their_real_reason_and_the_rest_go_on(tmp_path):
    builds = _bad_builds(tmp_path)
    variants = ["ref=reference", *(f"{k}=sage2-sm89@{p}" for k, p in builds.items()),
                f"refpath=reference@{builds['noinit']}"]
    s = Session(tiny_config(*variants), runner_argv=LOADER_RUNNER)
    report = s.run()
    # the others' failures make the run partial (never complete), and say which and why
    assert report.status == "partial" and report.rounds == 3
    assert all(any(f"variant {n} failed before its first round" in line
                   for line in report.status_detail or [])
               for n in ("dir", "text", "noinit", "undef", "refpath"))
    ref = report.variant("ref")
    assert ref.status == "ok" and len(ref.rounds) == 3 and ref.timing.count == 9
    errors = {v.name: v.error for v in report.variants if v.name != "ref"}
    assert all(report.variant(n).status == "failed" for n in errors)
    assert f"no _qattn_sm89*.so under {builds['dir']}" in errors["dir"]
    assert "is not a shared library (no ELF header" in errors["text"]
    assert "has no PyInit__qattn_sm89 symbol" in errors["noinit"]
    assert "undefined symbol _ZN3c1015NoSuchSagetuiFnEv" in errors["undef"]
    assert "built against another torch" in errors["undef"]
    assert f"reference loads no extension module, so {builds['noinit']} would be ignored" \
        in errors["refpath"]
    assert {f.variant for f in report.faults if f.kind == "variant"} == set(errors)
    assert set(report.samples) == {"ref"}


@needs_gcc
def test_headless_run_shows_why_each_variant_failed_here(tmp_path):
    """The plain CLI on this machine: the sage2 builds cannot run without CUDA, and it says so;
    the reference variant is measured, the report passes check, and the exit status is 1."""
    so = build_so(tmp_path, "noinit", SO_NO_INIT)
    p = sagetui_here("run", "--variant", "ref=reference", "--variant", f"new=sage2-sm89@{so}",
                     *TINY, "--rounds", "2", "--iterations", "3", "--json", "r.json",
                     cwd=tmp_path)
    assert p.returncode == 1, p.stderr
    assert no_traceback(p.stderr)
    assert "variant new (sage2-sm89): failed: BackendUnavailable: needs a CUDA device" in p.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert [v["status"] for v in report["variants"]] == ["ok", "failed"]
    assert report["rounds"] == 2 and report["faults"][0]["variant"] == "new"
    check = sagetui_here("check", "r.json", cwd=tmp_path)  # its output alone: in this process
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_kernel_that_fails_at_run_time(tmp_path):
    """The second variant's kernel raises in round 1: it is dropped with the error and the
    phase it was in; round 0 of both variants and every round of the first are kept."""
    rec = tmp_path / "rec.json"
    s = Session(tiny_config("ref=reference", "boom=reference"), recovery_path=rec,
                runner_env={"SAGETUI_INJECT_FAULT": "exception@boom:1"})
    events = []
    s.on_event = events.append
    report = s.run()
    assert report.status == "partial" and report.rounds == 3  # boom failed: never complete
    boom, ref = report.variant("boom"), report.variant("ref")
    assert ref.status == "ok" and len(ref.rounds) == 3
    assert boom.status == "failed" and "kernel failed (injected" in boom.error
    assert len(boom.rounds) == 1  # round 0; round 1 was incomplete and is not counted
    (fault,) = report.faults
    assert fault.kind == "exception" and fault.variant == "boom" and fault.round == 1
    assert fault.phase == "k_mean_and_smoothing_preparation"
    assert any("ValueError: kernel failed" in line for line in fault.stderr_tail)
    assert [e.fault.variant for e in events if isinstance(e, FaultRaised)] == ["boom"]
    assert json.loads(rec.read_text())["variants"][1]["status"] == "failed"


def test_a_kernel_whose_output_holds_nan_keeps_its_timings(tmp_path):
    """NaN in the inputs makes the output NaN: its checksum and differences are no numbers
    JSON can hold. The timings stand, the fault says why the checksum is missing, and the
    report is valid (before, the runner's event could not be written and the run was lost)."""
    import numpy as np

    from sagetui.core.check.report import check_report

    config = tiny_config("a=reference", "b=reference")
    shape = config.shape.tensor_shapes()["q_shape"]
    qkv = np.random.default_rng(0).standard_normal([3, *shape]).astype(np.float32)
    qkv[0, 0, 0, 0, 0] = np.nan
    np.save(tmp_path / "nan.npy", qkv)
    config = config.model_copy(update={"inputs_path": str(tmp_path / "nan.npy")})
    report = Session(config).run()
    assert report.status == "complete" and report.rounds == 3
    for v in report.variants:
        assert v.status == "ok" and len(v.rounds) == 3 and v.checksum is None
    assert {f.variant for f in report.faults} == {"a", "b"}
    assert all(f.kind == "nonfinite" and "the output holds NaN or Inf" in f.message
               for f in report.faults)
    assert check_report(report) == []
