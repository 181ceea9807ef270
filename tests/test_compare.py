"""`sagetui compare`: the comparison in core (no console imported), a verdict of B against A
where both runs have rounds, the refusal rule, the gates, sweeps point by point and profiles
phase by phase."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sagetui.cli.main import main
from sagetui.core.compare.comparison import Comparison, compare_reports
from sagetui.core.compare.gate import tripped
from sagetui.core.compare.table import Delta
from sagetui.core.derived import speedup_percent
from sagetui.core.report.io import load_report
from sagetui.core.statistics.unpaired import unpaired_speedup

from .conftest import sagetui_here

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_results"
VIDEO_CALL_PHASES = SAMPLES / "000_a7d5760a8f7ea9fe.json"
TWO_BUILDS = SAMPLES / "001_c3fd8b591d904547.json"
SM89_VARIANTS = SAMPLES / "h200_sm89_variants.json"
SM89_TWICE = SAMPLES / "h200_sm89_same_build_twice.json"
SM89 = SAMPLES / "h200_sm89_reference_shape.json"
SM90 = SAMPLES / "h200_sm90_reference_shape.json"
H200_KERNELS = SAMPLES / "h200_kernels.json"
SWEEP_CPU = SAMPLES / "sweep_cpu_reference.json"
PROFILE_SM89 = SAMPLES / "h200_profile_sm89_reference_shape.json"
PROFILE_SM89_REPEAT = SAMPLES / "h200_profile_sm89_repeat.json"


def compared(*paths: Path) -> Comparison:
    return compare_reports([(p.name, load_report(p)) for p in paths])


def column(c: Comparison, title: str, variant: str, phase: str = "total") -> str:
    """The cell of `title` on the row of `variant` (its label holds the name) and `phase`."""
    i = [col.title for col in c.columns].index(title)
    row = next(line for line in c.lines
               if variant in line.cells[0].split(" / ") and line.cells[1] == phase)
    return row.cells[i]


def test_sagetui_compare_imports_no_console() -> None:
    """The command's path imports neither textual nor any of sagetui.tui but the tables it
    shares with the console's Compare tab (tui/fitted_tables.py, Rich only): the comparison
    is core's (core/compare), on Report objects."""
    code = ("import io, sys, contextlib\n"
            "from sagetui.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    rc = main(['compare', {str(SM89_VARIANTS)!r}, {str(SM89_TWICE)!r}])\n"
            "print(rc, 'textual' in sys.modules,\n"
            "      sorted(m for m in sys.modules if m.startswith('sagetui.tui')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True)
    assert out.stdout.strip() == "0 False ['sagetui.tui', 'sagetui.tui.fitted_tables']", \
        out.stdout + out.stderr


def test_a_report_against_itself_is_same_with_an_interval_around_zero() -> None:
    c = compared(SM89_VARIANTS, SM89_VARIANTS)
    cell = column(c, "B vs A: verdict % [95% CI]", "blank")
    assert cell.startswith("SAME +0.00 [-"), cell
    assert column(c, "B faster %", "blank") == "+0.00"
    assert {d.what for d in c.deltas} == {"stock", "blank"}


def test_the_cross_verdict_needs_rounds_on_both_sides() -> None:
    """000 is a phase breakdown without rounds: its rows have no verdict against A."""
    c = compared(SM89, SM90)
    assert column(c, "B vs A: verdict % [95% CI]", "sage2-sm89").startswith("FASTER ")
    c = compared(VIDEO_CALL_PHASES, TWO_BUILDS)
    assert column(c, "B vs A: verdict % [95% CI]", "baseline") == ""


# -- the refusal rule (core/compare/facts.py) ---------------------------------------------------
# a call takes a few ms at this shape, and on a loaded 2-core machine a round's median can
# triple from one round to the next: differences asserted here are far larger than that
TINY = ["--heads", "2", "--head-dim", "64", "--rounds", "6", "--iterations", "5"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Real CPU runs: `a` and `a_again` the same workload, `slow` the same with a variant of
    the same name slowed down, `long` another q_len."""
    d = tmp_path_factory.mktemp("runs")
    argv = {"a": ["--variant", "ref=reference", "--q-len", "256"],
            "a_again": ["--variant", "ref=reference", "--q-len", "256"],
            "slow": ["--variant", "ref=reference[slowdown=10]", "--q-len", "256"],
            "long": ["--variant", "ref=reference", "--q-len", "512"]}
    out = {}
    for name, extra in argv.items():
        out[name] = d / f"{name}.json"
        done = sagetui_here("run", *TINY, *extra, "--json", out[name], "--quiet", cwd=d)
        assert done.returncode == 0, done.stderr
    return out


def sagetui(capsys, *argv: object) -> tuple[int, str, str]:
    rc = main(["compare", *map(str, argv)])
    out = capsys.readouterr()
    return rc, out.out, out.err


def edited(src: Path, dst: Path, edit) -> Path:
    d = json.loads(src.read_text())
    edit(d)
    dst.write_text(json.dumps(d))
    return dst


def test_another_shape_is_refused_in_one_line_unless_forced(runs, capsys) -> None:
    rc, out, err = sagetui(capsys, runs["a"], runs["long"])
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "shape 1x256x2x64 vs 1x512x2x64" in err, err
    assert "--force" in err
    rc, out, err = sagetui(capsys, runs["a"], runs["long"], "--force")
    assert rc == 0 and "ref" in out
    assert err.count("\n") == 1 and err.startswith("sagetui compare: --force: ")
    assert "shape 1x256x2x64 vs 1x512x2x64" in err


def test_the_same_workload_is_compared(runs, capsys) -> None:
    rc, out, err = sagetui(capsys, runs["a"], runs["a_again"])
    assert rc == 0 and err == "" and "B vs A" in out


@pytest.mark.parametrize(("edit", "says"), [
    (lambda d: d["config"]["shape"].update(dtype="fp16"), "dtype bf16 vs fp16"),
    (lambda d: d["config"]["shape"].update(causal=True), "causal False vs True"),
    (lambda d: d.update(layout="HND", q_shape=[1, 2, 256, 64], k_shape=[1, 2, 256, 64],
                        v_shape=[1, 2, 256, 64]), "layout NHD vs HND"),
    (lambda d: d["environment"].update(device="cuda:0", gpu={"name": "NVIDIA H200"}),
     "device cpu vs NVIDIA H200"),
])
def test_another_dtype_causal_layout_or_device_is_refused(runs, capsys, tmp_path, edit,
                                                          says) -> None:
    other = edited(runs["a_again"], tmp_path / "other.json", edit)
    rc, _, err = sagetui(capsys, runs["a"], other)
    assert rc == 2 and says in err and err.count("\n") == 1, err
    assert "shape" not in err  # a layout alone is not another shape: compared in NHD order


def test_another_gpu_model_is_refused_another_gpu_of_the_model_is_not(capsys,
                                                                      tmp_path) -> None:
    a100 = edited(H200_KERNELS, tmp_path / "a100.json",
                  lambda d: d["environment"]["gpu"].update(name="NVIDIA A100-SXM4-80GB"))
    rc, _, err = sagetui(capsys, H200_KERNELS, a100)
    assert rc == 2 and "GPU NVIDIA H200 vs NVIDIA A100-SXM4-80GB" in err
    other = edited(H200_KERNELS, tmp_path / "other.json", lambda d: d["environment"][
        "gpu"].update(uuid="00000000-1111-2222-3333-444444444444"))
    rc, out, err = sagetui(capsys, H200_KERNELS, other)
    assert rc == 0 and err == ""
    assert "differs: B: another GPU of the model (uuid 37dc0136-df65 vs 00000000-1111)" in out


def test_other_builds_and_software_are_compared_and_said(capsys, tmp_path) -> None:
    """Two builds of _qattn_sm89 (another sha256) under another torch: THE use case."""
    def rebuild(d: dict) -> None:
        sm89 = next(v for v in d["variants"] if v["name"] == "sm89")
        f = next(f for f in sm89["provenance"]["files"] if f["module"] == "_qattn_sm89")
        f["sha256"] = "5e1f" + f["sha256"][4:]
        d["environment"]["torch"] = "2.13.0+cu130"
    rebuilt = edited(H200_KERNELS, tmp_path / "rebuilt.json", rebuild)
    rc, out, err = sagetui(capsys, H200_KERNELS, rebuilt)
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert "differs: B sm89: another build (_qattn_sm89 fbef3229 vs 5e1f3229)" in lines
    torch = json.loads(H200_KERNELS.read_text())["environment"]["torch"]
    assert f"differs: B: torch {torch} vs 2.13.0+cu130" in lines
    assert sum(ln.startswith("differs: ") for ln in lines) == 2  # only what differs


def test_a_sweep_and_a_run_are_refused_even_with_force(capsys) -> None:
    rc, out, err = sagetui(capsys, SWEEP_CPU, SM89, "--force")
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert "is a sweep report and B (h200_sm89_reference_shape.json) a run report" in err


def test_facts_a_report_does_not_state_are_no_reason_to_refuse(capsys) -> None:
    """The reference reports name no GPU, dtype or layout; their q shapes agree."""
    rc, _, err = sagetui(capsys, VIDEO_CALL_PHASES, TWO_BUILDS)
    assert rc == 0 and err == ""


# -- the gates (core/compare/gate.py) ------------------------------------------------------------
def test_a_slower_variant_trips_fail_if_slower_not_fail_if_faster(runs, capsys) -> None:
    """`slow` is the same variant (by name) spinning 9 times as long again as its main
    loop."""
    rc, out, err = sagetui(capsys, runs["a"], runs["slow"], "--fail-if-slower", "10")
    assert rc == 1 and "ref" in out
    line = err.strip()
    assert "\n" not in line and line.startswith(
        "sagetui compare: slower than A by more than 10 %: B ref: faster % -"), err
    assert "SLOWER -" in line  # with its verdict and interval
    rc, _, err = sagetui(capsys, runs["a"], runs["slow"], "--fail-if-faster", "10")
    assert rc == 0 and err == ""
    rc, _, err = sagetui(capsys, runs["slow"], runs["a"], "--fail-if-faster", "10",
                         "--fail-if-slower", "10")
    assert rc == 1 and err.count("\n") == 1 and "faster than A by more than 10 %" in err


def test_a_gate_needs_the_whole_interval_beyond_it() -> None:
    a = [1.00, 1.02, 0.98, 1.01, 0.99]
    b = [1.20, 1.26, 1.15, 1.22, 1.18]  # slower, with an interval of some width
    d = Delta("B", "x", speedup_percent(float(np.median(a)), float(np.median(b))),
              unpaired_speedup(a, b, threshold_percent=1.0))
    lo, hi = d.interval()
    assert lo < hi < 0
    assert tripped([d], slower=-hi - 0.01)  # the whole interval is beyond
    assert not tripped([d], slower=-hi + 0.01)  # its near end is not
    assert not tripped([d], slower=-lo - 0.01)
    assert not tripped([d], faster=0.0)
    assert tripped([d], faster=None, slower=0.0)
    no_rounds = Delta("B", "x", d.faster)
    assert tripped([no_rounds], slower=-d.faster - 0.01)  # the p50s alone
    assert not tripped([no_rounds], slower=-d.faster + 0.01)


def test_without_rounds_the_p50s_alone_decide(runs, capsys, tmp_path) -> None:
    def strip(d: dict) -> None:
        d.pop("samples")
        for v in d["variants"]:
            v.pop("rounds")
    a = edited(runs["a"], tmp_path / "a.json", strip)
    slow = edited(runs["slow"], tmp_path / "slow.json", strip)
    rc, _, err = sagetui(capsys, a, slow, "--fail-if-slower", "10")
    assert rc == 1 and "p50s alone" in err


def test_a_gate_with_nothing_to_look_at_is_refused(capsys) -> None:
    rc, out, err = sagetui(capsys, VIDEO_CALL_PHASES, TWO_BUILDS, "--fail-if-slower", "1")
    assert rc == 2 and out == "" and "nothing to gate on" in err
    rc, out, err = sagetui(capsys, PROFILE_SM89, PROFILE_SM89_REPEAT, "--fail-if-faster", "1")
    assert rc == 2 and "not latencies" in err


@pytest.mark.parametrize("bad", ["-1", "x"])
def test_a_gate_is_a_percentage(capsys, bad) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(SM89), str(SM90), "--fail-if-slower", bad])
    assert exc.value.code == 2


# -- sweeps point by point, profiles phase by phase ----------------------------------------------
def _scaled_sweep(src: Path, dst: Path, factor: float, point: int) -> Path:
    """A copy of a real sweep whose `point`-th point takes `factor` times as long."""
    def edit(d: dict) -> None:
        for v in d["sweep"]["points"][point]["variants"]:
            for s in (v["timing"], v["kernel"]):
                for k in s:
                    if k.endswith("_s"):
                        s[k] *= factor
            v["samples"] = {p: [[x * factor for x in r] for r in rs]
                            for p, rs in v["samples"].items()}
    return edited(src, dst, edit)


def test_two_sweeps_line_up_point_by_point(capsys) -> None:
    rc, out, err = sagetui(capsys, SWEEP_CPU, SWEEP_CPU)
    assert rc == 0 and err == ""
    c = compared(SWEEP_CPU, SWEEP_CPU)
    sweep = load_report(SWEEP_CPU).sweep
    assert len(c.lines) == sum(len(p.variants) for p in sweep.points) > 0
    titles = [col.title for col in c.columns]
    assert titles[:3] == ["point", "variant", "matched"]
    for line in c.lines:
        row = dict(zip(titles, line.cells, strict=True))
        assert row["B p50 ms"] == row["A p50 ms"] != "-" and row["B faster %"] == "+0.00"
        assert row["B kernel TOPS"] == row["A kernel TOPS"]
        assert row["B vs A: verdict % [95% CI]"].split()[1] == "+0.00"
    assert "1x1024x2x64 causal" in {line.cells[0] for line in c.lines}


def test_a_sweep_point_slower_trips_the_gate_and_names_the_point(capsys, tmp_path) -> None:
    sweep = load_report(SWEEP_CPU).sweep
    slower = _scaled_sweep(SWEEP_CPU, tmp_path / "slower.json", 3.0, 6)
    rc, _, err = sagetui(capsys, SWEEP_CPU, slower, "--fail-if-slower", "10")
    point = sweep.points[6].shape
    assert rc == 1, err
    lines = err.splitlines()
    assert len(lines) == len(sweep.points[6].variants)
    assert all(f"at 1x{point.q_len}x2x64" in ln and "faster % -66.67" in ln for ln in lines)
    rc, _, err = sagetui(capsys, SWEEP_CPU, slower, "--fail-if-faster", "10")
    assert rc == 0 and err == ""


def test_points_of_one_sweep_only_are_shown_unmatched(tmp_path) -> None:
    fewer = edited(SWEEP_CPU, tmp_path / "fewer.json",
                   lambda d: d["sweep"].update(points=d["sweep"]["points"][1:]))
    c = compared(SWEEP_CPU, fewer)
    b_p50 = [col.title for col in c.columns].index("B p50 ms")
    first = [line for line in c.lines if line.cells[0] == "1x128x2x64"]
    assert first and all(line.cells[2] == "-" and line.cells[b_p50] == "-" for line in first)
    assert all(line.cells[b_p50] != "-" for line in c.lines if line not in first)
    assert not c.refusals


def test_sweeps_without_a_common_point_are_refused(capsys, tmp_path) -> None:
    def longer(d: dict) -> None:
        for p in d["sweep"]["points"]:
            p["shape"]["q_len"] *= 3
    other = edited(SWEEP_CPU, tmp_path / "other.json", longer)
    rc, out, err = sagetui(capsys, SWEEP_CPU, other)
    assert rc == 2 and out == "" and "has no point of A's shapes" in err
    rc, out, _ = sagetui(capsys, SWEEP_CPU, other, "--force")
    assert rc == 0 and "1x384x2x64" in out and "1x128x2x64" in out


def test_two_profiles_line_up_phase_by_phase_with_the_change_and_its_error(capsys) -> None:
    rc, out, err = sagetui(capsys, PROFILE_SM89, PROFILE_SM89_REPEAT)
    assert rc == 0 and err == "" and "int8_qk" in out
    # and the matched diff (core/profile/diff.py): an A/A of one build moves no hot line
    assert "B: sage2-sm89 vs A: sage2-sm89: hot lines that moved or changed: none: 10 hot " \
           "lines in place" in out
    assert "B: sage2-sm89 vs A: sage2-sm89: stall reasons that changed (of the kernel's " \
           "samples): none of 15 changed" in out  # these profiles keep every stall reason
    c = compared(PROFILE_SM89, PROFILE_SM89_REPEAT)
    a, b = (load_report(p).mainloop_profiles[0] for p in (PROFILE_SM89, PROFILE_SM89_REPEAT))
    for phase, pa in a.phases.items():
        pb = b.phases[phase]
        cell = column(c, "B Δ pt vs A", "sage2-sm89", phase)
        err_pt = math.hypot(pa.share_error, pb.share_error) * 100
        assert cell == f"{100 * (pb.share - pa.share):+.2f} ± {err_pt:.2f}", (phase, cell)
        assert column(c, "A share %", "sage2-sm89", phase).startswith(f"{100 * pa.share:.2f} ±")
    assert column(c, "B share %", "sage2-sm89", "samples") == f"{b.total_samples:,}"


@pytest.mark.parametrize("width", [80, 160])
def test_compare_and_swap_tables_fit_their_width_and_cut_no_cell(width: int) -> None:
    """At 80 and 160 columns `sagetui compare` cut every number ("120.9…") and dropped the
    right-hand columns; a swap's table cut its words ("verdic…"). Each cell's every word is
    now printed whole, within the width, the columns that do not fit in a further table."""
    import io

    from rich.console import Console

    from sagetui.cli.reports import comparison
    from sagetui.cli.swap import swap_table
    from sagetui.core.swap import view
    from sagetui.tui.fitted_tables import comparison_table

    def shown(renderable: object) -> str:
        out = io.StringIO()
        Console(file=out, width=width, color_system=None).print(renderable)
        return out.getvalue()

    runs = [(p.name, load_report(p)) for p in (ROOT / "sample_results" /
                                                "h200_sm89_reference_shape.json",
                                                ROOT / "sample_results" /
                                                "h200_sm90_reference_shape.json")]
    c = comparison([(name, r) for name, r in runs])
    swap = load_report(ROOT / "sample_results" / "h200_swap_llama.json")
    assert swap.swap is not None
    for text, cells in ((shown(comparison_table(c, width)), [x for line in c.lines
                                                       for x in line.cells]),
                        (shown(swap_table(swap, width)), [x for row in view.rows(swap.swap)
                                                          for x in row])):
        assert "…" not in text and max(len(line) for line in text.splitlines()) <= width
        words = set(text.split())
        assert all(w in words for cell in cells for w in cell.split()), text
