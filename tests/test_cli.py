
"""The headless CLI as a user meets it: bad input is one line and exit 2 before any kernel
runs; the default run finishes and writes a report that `sagetui check` passes."""

import json
import subprocess
import sys
import time

import pytest

from sagetui.core.report.io import load_report

from .conftest import TINY, TWO_BUILDS, VIDEO_CALL_PHASES, fake_noise_floor


@pytest.mark.parametrize(("args", "needle"), [
    (["--heads", "0"], "--heads"),
    (["--q-len", "-5"], "--q-len"),
    (["--head-dim", "256"], "--head-dim"),
    (["--heads", "6", "--kv-heads", "4"], "multiple of kv heads"),
    (["--batch", "0"], "--batch"),
    # (["--backend", "nosuch"]: test_unknown_backend_lists_what_runs_here_and_why_not, in a
    # real process: the same words, and a runner asked what runs here, once)
    (["--variant", "x=nosuch"], "unknown backend"),
    (["--variant", "x=sage2-sm89@/no/such/_qattn_sm89.so"], "does not exist"),
    (["--variant", "x=reference[pv_accum=fp32+fp16]"], "pv_accum"),
    (["--variant", "a=reference", "--variant", "a=reference"], "unique"),
    (["--baseline", "zzz"], "baseline"),
    (["--rounds", "0"], "--rounds"),
    (["--tail-iterations", "0"], "--tail-iterations: Input should be greater than or equal to 1"),
    (["--json", "/no/such/dir/r.json"], "does not exist"),
    (["--inputs", "/no/such/qkv.safetensors"], "--inputs"),
    (["--dtype", "fp8"], "invalid choice"),
    # every option value is checked before a runner starts (SageAttention's wrappers
    # return an uninitialised output for an accumulation they do not handle)
    (["--variant", "x=sage2-sm89[pv_accum=fp16]"], "pv_accum=fp16 is not one of"),
    (["--variant", "x=sage2-sm90[pv_accum=fp32]"], "pv_accum=fp32 is not one of fp32+fp32"),
    (["--variant", "x=sage2-sm80[pv_accum=fp8]"], "sage2-sm80: pv_accum=fp8"),
    (["--variant", "x=sage2-sm80[qk_quant_gran=per_block]"], "qk_quant_gran=per_block"),
    (["--variant", "x=sage2-sm80[smooth_v=true]"], "smooth_v applies to pv_accum=fp16"),
    (["--variant", "x=sage2-sm89[pv_accum=fp32+fp16,smooth_v=true]"], "smooth_v applies"),
    (["--variant", "x=sage2-sm90[smooth_v=true]"], "has no option 'smooth_v'"),
    (["--variant", "x=sdpa[backend=xformers]"], "backend=xformers is not one of"),
    (["--variant", "x=flash-attn[impl=fa9]"], "impl=fa9"),
    # unavailable baselines: the package is not installed here
    (["--variant", "x=sdpa[backend=fa3]"], "flash_attn_interface, which is not installed"),
    (["--variant", "x=sdpa[backend=fa4]"], "flash_attn.cute.interface, which is not"),
    (["--backend", "flash-attn"], "needs the Python module flash_attn,"),
])
def test_bad_input_is_one_line_and_exit_2(cli_here, args, needle):
    """In this process (a second interpreter and torch's import, per case, would cost the
    suite a minute); the next test takes one of them through a real process."""
    out = cli_here("run", *args)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert needle in lines[0]
    assert "Traceback" not in out.stderr
    assert "runner up" not in out.stderr  # refused before the runner started


def test_bad_input_in_a_real_process_is_one_line_exit_2_and_quick(cli):
    t0 = time.monotonic()
    out = cli("run", "--heads", "0")
    assert out.returncode == 2 and out.stderr.strip().count("\n") == 0, out.stderr
    assert "--heads" in out.stderr and "Traceback" not in out.stderr
    assert time.monotonic() - t0 < 10


def test_unknown_backend_lists_what_runs_here_and_why_not(cli):
    out = cli("run", "--backend", "nosuch")
    assert out.returncode == 2, out.stderr
    line = out.stderr.strip()
    assert len(line.splitlines()) == 1 and "unknown backend 'nosuch'" in line, out.stderr
    assert "Traceback" not in out.stderr
    assert "runner up" not in out.stderr  # refused before the runner started
    assert "Available here: reference" in line
    assert "sdpa, flash-attn" in line and line.count("CUDA is not available to torch") == 1


def test_existing_output_is_not_overwritten_without_force(cli, tmp_path):
    target = tmp_path / "r.json"
    target.write_text("keep me")
    out = cli("run", *TINY, "--json", target)
    assert out.returncode == 2 and "--force" in out.stderr
    assert target.read_text() == "keep me"


def test_default_run_finishes_quickly_and_passes_check(cli, tmp_path):
    """The first run: no options, 3 warm-up calls and 5 rounds of 10 iterations on the
    reference backend, under 30 s on a 2-core machine, and a report `check` passes."""
    t0 = time.monotonic()
    out = cli("run", "--json", "r.json", "--csv", "r.csv", "--markdown", "r.md", timeout=120)
    elapsed = time.monotonic() - t0
    assert out.returncode == 0, out.stderr
    assert elapsed < 30, f"default run took {elapsed:.1f} s"
    report = load_report(tmp_path / "r.json")
    assert report.status == "complete" and report.rounds == 5 and report.warmup == 3
    v = report.variants[0]
    assert v.backend == "reference" and len(v.rounds) == 5
    assert all(r.count == 10 for r in v.rounds)
    assert report.q_shape == [1, 1024, 6, 128]
    check = cli("check", "r.json")
    assert check.returncode == 0, check.stdout + check.stderr
    assert (tmp_path / "r.csv").read_text().startswith(
        "variant,phase,round (from 1),iteration (from 1),seconds")
    assert "| fused_mainloop |" in (tmp_path / "r.md").read_text()
    recovery = list((tmp_path / "state" / "sagetui" / "recovery").glob("*.json"))
    assert len(recovery) == 1 and load_report(recovery[0]).rounds == 5


def test_a_failed_run_leaves_its_report_in_the_recovery_folder_not_the_working_one(cli,
                                                                                    tmp_path):
    """Each failed try once dropped a sagetui-report-<time>.json where it ran: the report of
    a failed run stays in the recovery file, said once, unless --json asks for it elsewhere.
    The inputs hold a module beside q, k and v: torch.load(weights_only=True), in the runner,
    refuses them, and the run fails."""
    import torch

    qkv = torch.zeros(1, 256, 2, 64, dtype=torch.bfloat16)
    torch.save({"q": qkv, "k": qkv, "v": qkv, "m": torch.nn.Identity()}, tmp_path / "qkv.pt")
    out = cli("run", *TINY, "--inputs", "qkv.pt")
    assert out.returncode == 1, out.stderr
    recovery = list((tmp_path / "state" / "sagetui" / "recovery").glob("*.json"))
    assert len(recovery) == 1 and load_report(recovery[0]).status == "failed"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["qkv.pt", "state"]
    assert out.stderr.count(str(recovery[0])) == 1, out.stderr
    assert (f"the report of this failed run is the recovery file {recovery[0]} (--json PATH "
            "writes it where you ask)") in out.stderr
    asked = cli("run", *TINY, "--inputs", "qkv.pt", "--json", "r.json")
    assert asked.returncode == 1 and load_report(tmp_path / "r.json").status == "failed"


def test_compare_prints_side_by_side(cli):
    out = cli("compare", VIDEO_CALL_PHASES, TWO_BUILDS)
    assert out.returncode == 0, out.stderr
    assert "interleave-softmax" in out.stdout and "fused_mainloop" in out.stdout
    assert "243.919" in out.stdout  # 001 baseline p50 in ms
    assert "237.089" in out.stdout  # 000 fused main loop p50 in ms


def test_doctor_names_every_backend_and_why(cli):
    out = cli("doctor", env={"COLUMNS": "250"})
    assert out.returncode == 0, out.stderr
    for name in ("reference", "sdpa", "sage-triton", "sage2-sm89", "sage2-sm90", "sage2-auto"):
        assert f"backend {name}" in out.stdout
    assert "colour system" in out.stdout
    # nobody asked for a device: a GPU backend's reason here is why torch has none
    assert "asked for" not in out.stdout
    if "none visible to torch" in out.stdout:  # this machine: no GPU
        assert "CUDA is not available to torch" in out.stdout


def test_schema_command_prints_the_schema(cli):
    out = cli("schema")
    assert json.loads(out.stdout)["title"] == "Report"


def test_help_of_every_command(cli):
    for cmd in ([], ["run"], ["view"], ["compare"], ["check"], ["doctor"], ["calibrate"]):
        out = cli(*cmd, "--help")
        assert out.returncode == 0 and "usage: sagetui" in out.stdout


def test_no_help_shows_a_doubled_percent_sign(cli_here):
    """argparse %-formats an option's help but not a command's description: a `%%` written in
    a description showed as it is (calibrate, node-check)."""
    from sagetui.cli.main import COMMANDS

    for cmd in ([], *([c] for c in COMMANDS)):
        out = cli_here(*cmd, "--help")
        assert out.returncode == 0 and "%%" not in out.stdout, (cmd, out.stdout)


def test_a_mistyped_option_points_to_its_commands_help_and_a_report_to_view(cli_here):
    out = cli_here("swap", "--varient", "x=reference", "--", "python", "x.py")
    assert out.returncode == 2 and out.stderr.strip().endswith(
        "did you mean --variant? (see sagetui swap --help)")
    out = cli_here("ab.json")
    assert out.returncode == 2 and "did you mean `sagetui view ab.json`?" in out.stderr


def test_a_closed_stdout_stops_no_run(tmp_path):
    """`sagetui run ... | head -1`: the reader goes after the first line; the run still ends
    complete, writes its report and exits 0 (its first line after the pipe closed once raised
    BrokenPipeError: exit 1 and no report)."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"))
    proc = subprocess.Popen([sys.executable, "-m", "sagetui", "run", "--backend", "reference",
                             *TINY, "--rounds", "2", "--iterations", "2", "--json", "r.json"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=env)
    assert proc.stdout is not None
    proc.stdout.readline()
    proc.stdout.close()  # as `head -1` does
    assert proc.wait(timeout=120) == 0
    assert load_report(tmp_path / "r.json").status == "complete"


def test_a_headless_tail_study_prints_its_table(cli_here, tmp_path):
    """`sagetui run --tail-study` kept its rows in the report and printed none of them."""
    out = cli_here("run", "--backend", "reference", *TINY, "--rounds", "1", "--iterations",
                   "1", "--tail-study", "--tail-iterations", "2", "--json", "t.json")
    assert out.returncode == 0, out.stderr
    rows = load_report(tmp_path / "t.json").tail_study
    assert rows
    text = " ".join(out.stdout.split())
    assert "tail study: the main loop against the length" in text
    assert sum(line.lstrip("│ ").startswith(("q tail", "kv tail"))
               for line in out.stdout.splitlines()) == len(rows)


def test_calibrate_stores_the_noise_floor_that_later_runs_use(cli_here, tmp_path,
                                                              monkeypatch):
    # a quiet machine: the rule refuses this machine's real floor (test_calibration.py)
    fake_noise_floor(monkeypatch, 0.8)
    cli = cli_here
    out = cli("calibrate", "--backend", "reference", *TINY, "--iterations", "4",
              "--json", "cal.json")
    assert out.returncode == 0, out.stderr
    assert "noise floor:" in out.stdout
    stored = json.loads((tmp_path / "state" / "sagetui" / "calibration.json").read_text())
    (entry,) = stored.values()
    noise = entry["noise_floor_percent"]
    assert 0 <= noise < 100
    cal = load_report(tmp_path / "cal.json")
    assert [v.name for v in cal.variants] == ["reference", "reference-again"]
    run = cli("run", "--backend", "reference", *TINY, "--rounds", "2", "--iterations", "2",
              "--json", "r.json")
    assert run.returncode == 0, run.stderr
    report = load_report(tmp_path / "r.json")
    assert report.threshold is not None and report.threshold.noise_floor_percent == noise
    assert report.threshold.threshold_source == "calibration"


def test_shape_and_backend_resolve_by_what_the_machine_has(monkeypatch):
    """No shape: the reference shape on a GPU, the small one on a CPU; no backend: the best
    available (decided once the runner has said what it can run)."""
    from sagetui.cli import run_options
    from sagetui.cli.main import build_parser

    # a machine whose torch has CUDA, which this one's does not: the only stand-in here
    monkeypatch.setattr(run_options, "no_cuda_here", lambda device: None)
    from sagetui.cli.run_options import config_from_args
    from sagetui.core.config import resolve_auto

    def cfg(*argv):
        return config_from_args(build_parser().parse_args(["run", *argv]))
    gpu = {"reference": None, "sdpa": None, "sage2-auto": None}
    named = cfg("--backend", "sdpa")
    assert named.auto_shape and not named.auto
    on_gpu = resolve_auto(named, "cuda:0", gpu)
    assert on_gpu.shape.q_len == 37810 and on_gpu.shape.heads == 56
    assert [v.backend for v in on_gpu.variants] == ["sdpa"]
    assert resolve_auto(named, "cpu", gpu).shape.q_len == 1024
    shaped = cfg("--q-len", "512")
    assert shaped.auto and not shaped.auto_shape
    picked = resolve_auto(shaped, "cuda:0", gpu)
    assert picked.shape.q_len == 512 and picked.variants[0].backend == "sage2-auto"
    default = resolve_auto(cfg(), "cuda:0", {"sdpa": None, "sage2-auto": "no build"})
    assert default.variants[0].backend == "sdpa" and default.shape.q_len == 37810


def test_doctor_lists_the_baselines_and_measures_a_ceiling(cli):
    """`sagetui doctor --peak`: every baseline spec with why it cannot run here (no GPU, no
    FA3/FA4 package), and the measured int8 / bf16 matmul ceiling (a small product on a CPU)."""
    out = cli("doctor", "--peak", env={"COLUMNS": "250"})
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for spec in ("sdpa[backend=cudnn]", "sdpa[backend=fa3]", "sdpa[backend=fa4]",
                 "flash-attn[impl=fa2]"):
        assert f"baseline {spec}" in text, text
    assert "No module named 'flash_attn_interface'" in text
    assert "measured ceiling" in text and "int8" in text and "TOPS" in text


def test_help_imports_neither_numpy_nor_pydantic():
    """`sagetui --help` builds every subcommand's parser: none may pull in the statistics or
    the report model, nor any of core (numpy and pydantic cost 0.15-0.2 s there, core.gpus'
    subprocess and dataclasses 10 ms: `--help` measured 27 ms before the sweeps came) but the
    run options' table and the version, which import nothing (test_run_fields.py,
    core/version.py)."""
    code = ("import sys; from sagetui.cli.main import build_parser; build_parser(); "
            "print(sorted(m for m in ('numpy', 'pydantic', 'scipy', 'textual', 'torch') "
            "if m in sys.modules) "
            "+ sorted(m for m in sys.modules if m.startswith('sagetui.core.') "
            "and m not in ('sagetui.core.run_fields', 'sagetui.core.version')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_a_command_run_in_process_puts_the_signal_handlers_back(tmp_path, monkeypatch):
    """`run` ignores Ctrl-C while it writes its outputs; main() puts the handlers back, or a
    caller in the same process (a test's fixture) would start every later child with SIGINT
    ignored, and Python there would never raise KeyboardInterrupt (test_swap's Ctrl-C test
    failed so in CI, after a fixture ran `run --workload` in its worker)."""
    import signal

    from sagetui.cli.main import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    assert main(["run", "--backend", "reference", *TINY, "--rounds", "1", "--quiet",
                 "--json", str(tmp_path / "r.json")]) == 0
    assert {s: signal.getsignal(s) for s in before} == before


def test_as_the_process_entry_a_late_ctrl_c_stays_ignored(tmp_path, monkeypatch):
    """As the process's entry (no argv) main() leaves Ctrl-C as `run` left it, ignored while
    the process writes its outputs and exits: the second Ctrl-C of a double press once came
    after main() had put the handler back and ended `sagetui run` by SIGINT (exit -2, not 1;
    test_dying_console's ctrl-c-twice, in .ci/run)."""
    import signal

    from sagetui.cli.main import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setattr(sys, "argv", ["sagetui", "run", "--backend", "reference", *TINY,
                                      "--rounds", "1", "--quiet", "--json", "r.json"])
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        assert main() == 0
        assert all(signal.getsignal(s) is signal.SIG_IGN for s in before)
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
