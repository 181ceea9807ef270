"""The profile diff (core/profile/diff.py) on profiles recorded on the H200: the toy kernel twice
(one binary, two ncu runs), its rebuild whose lines moved (tests/profile_fixtures, record.sh),
and the sample reports of SageAttention's sm89 and sm90 kernels (sample_results/)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from sagetui.core.blocks.profile import MainloopProfile
from sagetui.core.profile.attribute import share_and_error
from sagetui.core.profile.diff import MIN_CHANGE, Z, profile_diff, variant_diff
from sagetui.core.profile.diff_view import diff_text, sections
from sagetui.core.profile.shares import to_profile
from sagetui.core.report.io import load_report

from .test_check_mutation import held_whole
from .test_profile_toy import call_line, run

SAMPLES = Path(__file__).resolve().parents[1] / "sagetui" / "sample_results"


@pytest.fixture(scope="module")
def toy() -> dict[str, MainloopProfile]:
    return {"base": to_profile(run("toy_attention"), variant="base", family="toy"),
            "again": to_profile(run("toy_attention", "source2"), variant="again", family="toy"),
            "moved": to_profile(run("toy_attention_shifted"), variant="moved", family="toy")}


def sample(name: str) -> MainloopProfile:
    return load_report(SAMPLES / f"h200_profile_{name}.json").mainloop_profiles[0]


def test_a_rebuild_whose_lines_moved_matches_every_hot_line_by_its_code(toy):
    d = variant_diff(toy["base"], toy["moved"])
    assert len(d.hot_lines) == len(toy["base"].hot_lines) == 10
    for h in d.hot_lines:
        assert h.matched_by == "code" and h.moved, h
        assert h.a.code == h.b.code and h.a.phase == h.b.phase and h.a.call == h.b.call
        assert h.b.file == "toy_attention_shifted.cu" and h.b.line > h.a.line
    # each helper's call line, read from the two sources, is the pair the diff made
    pairs = {h.a.call: (h.a.line, h.b.line) for h in d.hot_lines}
    for name in ("compute_int_qk", "update_mdo", "compute_fp16_sv", "load_global_to_share"):
        assert pairs[name] == (call_line("toy_attention", name),
                               call_line("toy_attention_shifted", name))
    # the kernel body's two `__syncthreads();` are told apart by their order, not mixed up
    syncs = [h for h in d.hot_lines if h.a.call == "__syncthreads"]
    assert len(syncs) == 2 and {h.a.code.endswith("#2") for h in syncs} == {True, False}
    assert all(h.b.line - h.a.line == syncs[0].b.line - syncs[0].a.line for h in syncs)


@pytest.mark.parametrize("other", ["again", "moved"])
def test_the_same_kernel_changes_nothing_beyond_the_bar(toy, other):
    """One binary profiled twice, and the rebuild whose lines moved: no phase, stall reason or
    hot line is flagged, and every phase's change lies within three combined errors."""
    d = variant_diff(toy["base"], toy[other])
    assert not [p.phase for p in d.phases if p.beyond]
    assert d.stalls is not None and len(d.stalls) >= 10 and not [s for s in d.stalls if s.beyond]
    assert not [h for h in d.hot_lines if h.shares is None or h.shares.beyond]
    for p in d.phases:
        assert abs(p.change) <= Z * p.error, p.phase


def test_errors_are_the_binomial_errors_of_the_counts_combined(toy):
    a, b = toy["base"], toy["moved"]
    d = variant_diff(a, b)
    pv = next(p for p in d.phases if p.phase == "pv_accumulation")
    na, nb = a.phases["pv_accumulation"].samples, b.phases["pv_accumulation"].samples
    assert pv.a == na / a.total_samples and pv.b == nb / b.total_samples
    ea = math.sqrt(pv.a * (1 - pv.a) / a.total_samples)
    eb = math.sqrt(pv.b * (1 - pv.b) / b.total_samples)
    assert pv.a_error == pytest.approx(ea) and pv.error == pytest.approx(math.hypot(ea, eb))
    assert pv.change == pytest.approx(pv.b - pv.a)
    # every stall reason of the kernel: their samples are all the kernel's samples
    assert sum(s.samples for s in a.stalls) == a.total_samples
    long_sb = next(s for s in d.stalls if s.reason == "long_sb")
    n = next(s.samples for s in a.stalls if s.reason == "long_sb")
    assert (long_sb.a, long_sb.a_error) == share_and_error(n, a.total_samples)


def test_a_rare_stall_reason_beyond_three_errors_but_under_the_floor_is_not_a_change(toy):
    """The recorded A/A pair: `imc` (constant-cache misses) came 12 and 40 times in two runs
    of one binary, 3.9 binomial errors apart: rare stalls come in bursts, so the binomial error
    understates them; the 0.1-point floor keeps them out."""
    imc = next(s for s in variant_diff(toy["base"], toy["again"]).stalls if s.reason == "imc")
    assert abs(imc.change) > Z * imc.error and abs(imc.change) < MIN_CHANGE
    assert not imc.beyond


def without_code_keys(p: MainloopProfile) -> MainloopProfile:
    """The profile as a report recorded before code keys holds it: hot lines by file:line."""
    return p.model_copy(update={"hot_lines": [h.model_copy(update={"code": None})
                                              for h in p.hot_lines]})


def test_another_kernel_moves_every_large_phase_and_its_hot_lines_by_code():
    """sm89 against sm90 at the reference shape (H200): the phases move by points, far
    beyond their errors; the hot lines match by their code key across the two sources (and by
    call and phase where a report recorded before code keys has none); every stall reason is
    compared (these profiles keep them all) and the two kernels' stalls differ."""
    a, b = sample("sm89_reference_shape"), sample("sm90_reference_shape")
    d = variant_diff(a, b)
    moved = {p.phase for p in d.phases if p.beyond}
    assert {"int8_qk", "online_softmax", "pv_accumulation", "loads_and_pipeline"} <= moved
    pv = next(p for p in d.phases if p.phase == "pv_accumulation")
    assert pv.change < -0.4 and pv.beyond
    assert d.stalls is not None and any(s.beyond for s in d.stalls)
    softmax = next(h for h in d.hot_lines if h.a and h.a.call == "update_mdo")
    assert softmax.matched_by == "code" and softmax.moved and softmax.shares.beyond
    assert softmax.b.file == "qk_int_sv_f8_cuda_sm90.cu"
    only_b = [h.b.call for h in d.hot_lines if h.a is None]
    assert "wgmma::wgmma_f8f8f32" in only_b
    old = variant_diff(without_code_keys(a), without_code_keys(b))
    softmax = next(h for h in old.hot_lines if h.a and h.a.call == "update_mdo")
    assert softmax.matched_by == "call" and softmax.moved
    assert softmax.b.file == "qk_int_sv_f8_cuda_sm90.cu"


def test_a_blank_lines_rebuild_matches_its_moved_hottest_line_by_code_else_by_call():
    """The build with 7 blank lines inserted (`shifted`): every hot line moved by 7 and
    matches by its code key; without code keys (a report recorded before them) the hottest
    matches by call. No phase moves beyond its errors."""
    a, b = sample("sm89_reference_shape"), sample("sm89_blank_lines_build")
    d = variant_diff(a, b)
    assert d.b == "shifted"
    hottest = next(h for h in d.hot_lines if h.a and h.a.call == "compute_fp8_sv_inst_buf")
    assert (hottest.a.line, hottest.b.line, hottest.matched_by) == (352, 359, "code")
    assert not [p for p in d.phases if p.beyond] and not hottest.shares.beyond
    old = variant_diff(without_code_keys(a), without_code_keys(b))
    hottest = next(h for h in old.hot_lines if h.a and h.a.call == "compute_fp8_sv_inst_buf")
    assert (hottest.a.line, hottest.b.line, hottest.matched_by) == (352, 359, "call")


def test_the_diff_in_a_report_checks_clean_and_a_changed_number_is_named(toy, tmp_path):
    from sagetui.core.check.report import check_report
    from sagetui.core.report.io import save_report
    from sagetui.core.run.assemble import profile_report

    report = profile_report({}, [toy["base"], toy["moved"], toy["again"]], "complete",
                            baseline="base")
    assert [v.b for v in report.mainloop_diff.variants] == ["moved", "again"]
    path = save_report(report, tmp_path / "p.json")
    back = load_report(path)
    assert back == report and check_report(back) == []

    def tampered(edit) -> list[str]:
        d = json.loads(path.read_text())
        edit(d["mainloop_diff"])
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps(d))
        return [m.path for m in check_report(load_report(bad))]

    def phase_share(d):
        d["variants"][0]["phases"][3]["b"] += 0.01

    def flag(d):
        d["variants"][0]["phases"][0]["beyond"] = True

    def line_pair(d):
        d["variants"][0]["hot_lines"][0]["b"]["line"] += 1

    def drop_stalls(d):
        d["variants"][1]["stalls"] = None

    assert tampered(phase_share) == ["$.mainloop_diff.variants[0].phases[3].b"]
    assert tampered(flag) == ["$.mainloop_diff.variants[0].phases[0].beyond"]
    assert tampered(line_pair) == ["$.mainloop_diff.variants[0].hot_lines[0].b.line"]
    assert tampered(drop_stalls) == ["$.mainloop_diff.variants[1].stalls"]
    assert tampered(lambda d: d.update(baseline="nobody")) == ["$.mainloop_diff.baseline"]


def test_one_profile_has_no_diff_and_the_baseline_is_whichever_is_named(toy):
    assert profile_diff([toy["base"]]) is None
    d = profile_diff([toy["base"], toy["moved"]], baseline="moved")
    assert d.baseline == "moved" and [(v.a, v.b) for v in d.variants] == [("moved", "base")]


def test_the_text_table_shows_phases_moved_lines_and_the_bar(toy):
    d = profile_diff([toy["base"], toy["moved"]])
    text = diff_text(d)
    assert "profile diff against base" in text and "beyond 3 combined standard errors" in text
    qk = call_line("toy_attention_shifted", "compute_int_qk")
    line = next(ln for ln in text.splitlines() if ln.startswith("compute_int_qk"))
    assert f"toy_attention_shifted.cu:{qk}" in line and "code" in line
    assert "moved vs base: stall reasons that changed" in text and "none of" in text
    phases, _, hot = sections(d.variants[0])
    assert len(phases.rows) == 8 and len(hot.rows) == 10 and not any(hot.changed)


def test_sagetui_profile_over_two_variants_writes_prints_and_checks_the_diff(
        toy, monkeypatch, tmp_path, capsys):
    """`sagetui profile --variant base=... --variant moved=...` in-process. Mocked, since ncu
    and a GPU cannot run here: the pass's tools and each variant's profile, which is the one
    recorded on the H200 for that build; the command, the report, its check and its outputs
    are the real ones."""
    from sagetui.cli import profile
    from sagetui.cli.main import main
    from sagetui.core.check.report import check_report

    monkeypatch.setattr(profile, "profile_variant", lambda config, spec, p: toy[spec.name])
    monkeypatch.setattr(profile, "_resolved", lambda config: config)
    monkeypatch.setattr(profile.Tools, "find", classmethod(lambda cls: None))
    out, md = tmp_path / "prof.json", tmp_path / "prof.md"
    assert main(["profile", "--variant", "base=reference", "--variant", "moved=reference",
                 "--json", str(out), "--markdown", str(md)]) == 0
    report = load_report(out)
    assert report.mainloop_diff.baseline == "base" and check_report(report) == []
    held_whole(json.loads(out.read_text()))  # every leaf held; edits and deletions caught
    assert [v.b for v in report.mainloop_diff.variants] == ["moved"]
    stdout = capsys.readouterr().out
    assert "Inside the main loop" in stdout and "moved vs base: phases" in stdout
    assert "moved vs base: hot lines that moved or changed" in stdout
    text = md.read_text()
    assert "### Profile diff against base" in text and "| compute_int_qk |" in text


def test_a_run_report_makes_its_profiles_diff_itself(toy):
    """One report (docs/architecture.md): build_report makes the diff with the profiles, and
    profiles given to a finished run's report (the console's p) get the same diff."""
    from sagetui.core.check.report import check_report
    from sagetui.core.run.assemble import build_report, with_profiles
    from sagetui.core.run.load import from_report

    report = load_report(SAMPLES / "cpu_reference_default.json")
    profiles = [toy["base"], toy["moved"]]
    model = from_report(report)
    model.profiles = profiles
    built = build_report(model)
    assert built.mainloop_profiles == profiles
    assert built.mainloop_diff == profile_diff(profiles, model.baseline) is not None
    given = with_profiles(report, profiles)
    assert (given.mainloop_profiles, given.mainloop_diff) == (profiles, built.mainloop_diff)
    assert check_report(given) == []
    again = with_profiles(given, [toy["again"]])  # one profile: no diff, never a stale one
    assert again.mainloop_diff is None
