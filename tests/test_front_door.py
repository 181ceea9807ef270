"""What a new user meets first on the command line: each mistake is one line that names the way
out ("did you mean", the command that does what was meant), a refusal that needs no runner is
made before one starts, and every command's --help describes it."""

import argparse
import json
import time
from pathlib import Path

import pytest

from sagetui.cli.run_options import no_cuda_here
from sagetui.core.suggest import did_you_mean


def one_line(out) -> str:
    assert out.returncode == 2, (out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert "Traceback" not in out.stderr
    return lines[0]


def test_did_you_mean_takes_a_near_spelling_or_a_part() -> None:
    assert did_you_mean("referenc", ["reference", "sdpa"]) == "did you mean reference?"
    assert did_you_mean("sm89", ["sage2-sm89", "sdpa"]) == "did you mean sage2-sm89?"
    assert did_you_mean("zzz", ["reference", "sdpa"]) == ""


@pytest.mark.parametrize(("args", "needle"), [
    (["--variant", "a=reference[smoth_k=false]"], "has no option 'smoth_k'; did you mean "
                                                  "smooth_k?"),
    # the test knobs are said as such, slowdown among them (the docs use it)
    (["--variant", "a=reference[slowdwn=2]"], "did you mean slowdown? (its options: smooth_k, "
                                              "return_lse; test knobs: slowdown, host_us, "
                                              "device_us)"),
    (["--variant", "a=reference", "--baseline", "A"], "baseline 'A' is not a variant; did you "
                                                      "mean a?"),
    (["--dtype", "bf17"], "did you mean bf16?"),
    (["--rouds", "3"], "did you mean --rounds"),
])
def test_a_mistyped_name_says_what_was_meant(cli_here, args, needle) -> None:
    line = one_line(cli_here("run", *args))
    assert needle in line


def test_a_mistyped_command_says_what_was_meant(cli_here) -> None:
    assert "did you mean run?" in one_line(cli_here("rn"))


def test_a_mistyped_backend_says_what_was_meant_and_a_missing_cuda_once(cli) -> None:
    """The reason the CUDA backends cannot run on this CPU machine is said once for all of
    them, not once per backend."""
    line = one_line(cli("run", "--backend", "sage2-sm98"))
    assert "unknown backend 'sage2-sm98'; did you mean sage2-sm90 or sage2-sm89?" in line
    assert line.count("CUDA is not available") == 1, line
    assert "Available here: reference" in line


def test_a_cuda_backend_without_cuda_is_refused_before_a_runner_starts(cli_here) -> None:
    """`sagetui doctor` knows it (torch here is a CPU-only build): no runner is started to
    find out, and the line says what does run here."""
    t0 = time.monotonic()
    line = one_line(cli_here("run", "--backend", "sdpa", "--heads", "2"))
    assert time.monotonic() - t0 < 5
    assert line.startswith("sagetui: error: nothing can run here: sdpa: CUDA is not available")
    assert "--backend reference" in line and "sagetui doctor" in line
    line = one_line(cli_here("sweep", "--backend", "sage2-sm89", "--q-len", "128"))
    assert "nothing can run here: sage2-sm89" in line


@pytest.mark.parametrize("device", ["gpu", "banana", "cuda:x"])
def test_a_device_that_is_no_device_is_refused_at_once(cli_here, device) -> None:
    line = one_line(cli_here("run", "--backend", "reference", "--device", device))
    assert line == f"sagetui: error: --device: {device!r}: give auto, cpu, cuda or cuda:N"


def test_a_cuda_device_without_cuda_is_refused_before_a_runner_starts(cli_here) -> None:
    """A CPU-only torch (this machine's): a run that asks for CUDA by name is refused at
    once, as a CUDA backend is, where it once ran and ended \"failed\"."""
    if no_cuda_here("cuda") is None:
        pytest.skip("torch here is a CUDA build")
    for device in ("cuda", "cuda:7"):
        line = one_line(cli_here("run", "--backend", "reference", "--device", device))
        assert line.startswith(f"sagetui: error: --device {device}: CUDA is not available")


def test_inputs_and_workloads_that_cannot_be_are_refused_at_once(cli_here, tmp_path) -> None:
    """Each once reached a runner (a .json ran and ended failed) or said what was not so
    (a folder "does not exist", a file "no such directory")."""
    (tmp_path / "folder").mkdir()
    (tmp_path / "cap").mkdir()
    (tmp_path / "cap" / "manifest.json").write_text("{}")
    (tmp_path / "x.json").write_text("{}")
    said = {args: one_line(cli_here("run", "--backend", "reference", *args.split()))
            for args in ("--inputs folder", "--inputs cap", "--inputs x.json",
                         "--workload x.json")}
    assert said["--inputs folder"].endswith("--inputs: folder is a directory, not an inputs "
                                            "file (.safetensors, .npz, .npy, .pt, .pth)")
    assert said["--inputs cap"].endswith("; a capture: --workload cap")
    assert said["--inputs x.json"].endswith("--inputs: x.json: unknown inputs format '.json' "
                                            "(use .safetensors, .npz, .npy, .pt, .pth)")
    assert "x.json: a file, not a capture's directory" in said["--workload x.json"]
    assert not (tmp_path / "state" / "sagetui" / "recovery").exists()  # no runner started


def test_without_cuda_a_cpu_variant_still_runs_beside_one_that_needs_it(cli_here) -> None:
    """Only a run where nothing can run is refused: `--device cpu` with a reference variant
    is not."""
    from sagetui.cli.run_options import refuse_unrunnable
    from sagetui.core.config import VariantSpec

    refuse_unrunnable([VariantSpec.parse("a=reference"), VariantSpec.parse("b=sdpa")], "cpu")
    from sagetui.cli.errors import UsageError

    with pytest.raises(UsageError, match="asked for 'cpu'"):
        refuse_unrunnable([VariantSpec.parse("b=sdpa")], "cpu")


FOREIGN = {
    "google": ({"context": {"date": "2026-12-01", "num_cpus": 2},
                "benchmarks": [{"name": "BM_attn", "real_time": 1.5, "cpu_time": 1.5,
                                "time_unit": "ms"}]}, "a Google Benchmark file"),
    "pytest-benchmark": ({"machine_info": {}, "commit_info": {}, "benchmarks": [],
                          "datetime": "2026-12-01", "version": "4.0.0"},
                         "a pytest-benchmark file"),
    "pyperf": ({"benchmarks": [{"runs": [{"values": [0.1]}]}], "metadata": {"name": "x"},
                "version": "1.0"}, "a pyperf file"),
    "nvbench": ({"meta": {"version": {}}, "devices": [{"id": 0}],
                 "benchmarks": [{"name": "attn", "states": []}]}, "an nvbench file"),
}


@pytest.mark.parametrize("kind", FOREIGN)
def test_another_tools_json_is_said_to_be_no_sagetui_report(cli_here, tmp_path, kind) -> None:
    data, looks = FOREIGN[kind]
    path = tmp_path / f"{kind}.json"
    path.write_text(json.dumps(data))
    out = cli_here("check", path)
    assert out.returncode == 2
    assert out.stderr.strip() == f"{path}: not a sagetui report (it looks like {looks})"


def test_check_of_a_capture_points_to_capture_verify(cli_here, tmp_path: Path) -> None:
    cap = tmp_path / "cap"
    cap.mkdir()
    (cap / "manifest.json").write_text(json.dumps({"tool": "sagetui", "calls": [],
                                                   "calls_seen": 0}))
    for target in (cap, cap / "manifest.json"):
        out = cli_here("check", target)
        assert out.returncode == 2
        assert out.stderr.strip().endswith(f"`sagetui capture --verify {cap}`"), out.stderr
        assert out.stderr.count("\n") == 1


def _commands() -> dict[str, argparse.ArgumentParser]:
    from sagetui.cli.main import build_parser

    top = build_parser()
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    return {"sagetui": top, **dict(sub.choices)}


def test_every_command_and_option_has_a_sentence() -> None:
    for name, parser in _commands().items():
        assert parser.description, f"{name} --help has no description"
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            assert action.help, f"{name}: {action.option_strings or action.dest} has no help"


@pytest.mark.parametrize("command", ["run", "check", "compare", "merge", "node-check", "sweep"])
def test_help_states_the_exit_codes(command) -> None:
    text = " ".join(_commands()[command].format_help().split())
    assert "Exit 0" in text and "1:" in text and "2:" in text


def test_variant_help_names_a_source_tree() -> None:
    assert "@src:PATH" in _commands()["run"].format_help()
    assert "@src:PATH" in _commands()["sagetui"].format_help()


def test_no_issue_numbers_in_help_or_messages() -> None:
    for name, parser in _commands().items():
        assert "issue" not in parser.format_help().lower(), name


def test_options_are_written_as_typed_and_test_knobs_only_in_effect() -> None:
    """`smooth_k=false` stays lowercase in the Markdown; the reference's slowdown (a test
    knob) is listed only where it is not 1."""
    from sagetui.core.config import VariantSpec
    from sagetui.core.export.report import to_markdown
    from sagetui.core.format import options_text
    from sagetui.core.report.io import load_report

    assert VariantSpec.parse("a=reference[smooth_k=false]").spec == "reference[smooth_k=false]"
    md = to_markdown(load_report(Path(__file__).parent.parent / "sample_results"
                                 / "cpu_reference_kbias.json"))
    assert "`reference[smooth_k=false]`" in md and "smooth_k=False" not in md
    assert "slowdown" not in md
    assert options_text("reference", {"smooth_k": True, "slowdown": 1.0})[0] == "smooth_k=true"
    assert "slowdown=3.0" in options_text("reference", {"slowdown": 3.0})[0]


def test_a_speedup_of_ten_times_or_more_reads_as_a_ratio() -> None:
    """The Phases tab read "+23335.14 %" for a phase of 0.002 ms against 0.364 ms."""
    from sagetui.core.derived import speedup_or_none
    from sagetui.core.format import speedup

    assert speedup(speedup_or_none(0.364e-3, 0.002e-3)) == "182x faster"
    assert speedup(speedup_or_none(0.002e-3, 0.364e-3)) == "182x slower"
    assert speedup(12.3) == "+12.30" and speedup(-50.0) == "-50.00" and speedup(None) == "-"


def test_inputs_whose_shape_is_not_the_configured_one_are_refused_at_once(cli, cli_here,
                                                                           tmp_path) -> None:
    """A captured SDPA call's file holds HND tensors; the run's layout is NHD unless told: the
    run once started a runner and ended FAILED after its start-up. Now one line says so before
    a runner starts, and names the layout that fits. The capture is a program of its own; the
    refusals run in this process, as the other refusals here do."""
    import sys

    import numpy as np

    from sagetui.cli.run_options import refuse_inputs_shape
    from sagetui.core.config import Shape

    model = Path(__file__).parent / "capture_model.py"
    out = cli("capture", "--out", "cap", "--calls", "1", "--", sys.executable, model,
              "--steps", "1", "--record", "rec.json")
    assert out.returncode == 0, out.stderr
    call = "cap/call-000001.safetensors"
    shape = ["--heads", "4", "--q-len", "16", "--head-dim", "8"]
    line = one_line(cli_here("run", "--backend", "reference", "--inputs", call, *shape))
    assert line == (f"sagetui: error: --inputs: {call}: q has shape [1, 4, 16, 8], the "
                    "configuration says [1, 16, 4, 8]; it holds them in HND (a captured "
                    "scaled_dot_product_attention call's): add --layout HND")
    # without a backend too (the machine's best), and told the layout it fits
    assert one_line(cli_here("run", "--inputs", call, *shape)) == line
    refuse_inputs_shape(tmp_path / call, Shape(heads=4, q_len=16, head_dim=8, layout="HND"))
    # a file of no captured call: what disagrees, and no layout where none fits
    np.save(tmp_path / "qkv.npy", np.zeros((3, 1, 512, 6, 128), dtype=np.float16))
    assert one_line(cli_here("run", "--backend", "reference", "--inputs", "qkv.npy")) == (
        "sagetui: error: --inputs: qkv.npy: q has shape [1, 512, 6, 128], the configuration "
        "says [1, 1024, 6, 128]")
    import torch  # a torch.save file's sizes are read from its pickle, which runs nothing

    kv = torch.zeros(1, 4, 16, 8)
    torch.save({"q": torch.zeros(1, 16, 4, 8), "k": kv, "v": kv}, tmp_path / "qkv.pt")
    assert one_line(cli_here("run", "--backend", "reference", "--inputs", "qkv.pt", *shape)) == (
        "sagetui: error: --inputs: qkv.pt: k has shape [1, 4, 16, 8], the configuration says "
        "[1, 16, 4, 8]")
    assert not (tmp_path / "state" / "sagetui" / "recovery").exists()  # no runner started
