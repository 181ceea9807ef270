"""The whole attribution on fixtures recorded once on the H200 from the project's own toy
kernel (tests/profile_fixtures/toy_attention.cu, record.sh): ncu's source page and nvdisasm's
listing, as they came out, gzipped."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from sagetui.core.profile.attribute import Attribution, attribute, choose_function
from sagetui.core.profile.listing import parse_listing
from sagetui.core.profile.ncu_csv import parse_source_csv
from sagetui.core.profile.place import Placer
from sagetui.core.profile.rules import FAMILIES, PHASES, UNATTRIBUTED
from sagetui.core.profile.source import SourceIndex, resolve_source
from sagetui.core.profile.summary import to_profile

FIX = Path(__file__).parent / "profile_fixtures"


def _text(name: str) -> str:
    with gzip.open(FIX / name, "rt", encoding="utf-8") as f:
        return f.read()


def run(build: str, csv: str = "source") -> Attribution:
    rows = parse_source_csv(_text(f"{build}.{csv}.csv.gz"))
    funcs = parse_listing(_text(f"{build}.listing.txt.gz"))
    func = choose_function(funcs, rows, "toy_attention_kernel")
    recorded = func.instructions[0].chain[-1].file  # the path -lineinfo wrote on the H200
    source = resolve_source(recorded, [str(FIX)])
    assert source is not None and source.name == f"{build}.cu"
    placer = Placer(FAMILIES["toy"], SourceIndex(source.read_text()))
    return attribute(rows, func, f"{build}.cu", placer)


def shares(a: Attribution) -> dict[str, float]:
    return {k: c.samples / a.total_samples for k, c in a.phases.items()}


def call_line(build: str, name: str) -> int:
    """The line of the kernel body's call to `name`, read from the source (not hard-coded)."""
    lines = (FIX / f"{build}.cu").read_text().splitlines()
    return next(i + 1 for i, ln in enumerate(lines) if re.match(rf"\s+{name}\(", ln))


def test_recorded_profile_is_placed_in_named_phases():
    a = run("toy_attention")
    assert a.line_info and a.rows_without_instruction == 0
    assert a.total_samples > 100_000
    assert a.placed_share() >= 0.95
    assert sum(c.samples for c in a.phases.values()) == a.total_samples
    assert list(a.phases) == [*PHASES, UNATTRIBUTED]


@pytest.mark.parametrize(("name", "phase"), [
    ("compute_int_qk", "int8_qk"), ("update_mdo", "online_softmax"),
    ("compute_fp16_sv", "pv_accumulation"), ("load_global_to_share", "loads_and_pipeline")])
def test_each_inlined_helper_lands_in_its_phase(name, phase):
    a = run("toy_attention")
    line = call_line("toy_attention", name)
    hot = {h.line: h for h in a.lines}
    assert line in hot, f"{name} (line {line}) is not among the hot lines {sorted(hot)}"
    assert hot[line].phase == phase and name in hot[line].statement
    prof = to_profile(a, variant="toy", family="toy")
    assert name in {h.call for h in prof.hot_lines if h.line == line}


def test_shared_innermost_helpers_go_by_the_outermost_frame():
    # __half2float and __dp4a sit inside the PV and QK helpers; their instructions' innermost
    # frames are in CUDA's headers, yet each lands in its caller's phase
    rows = parse_source_csv(_text("toy_attention.source.csv.gz"))
    func = choose_function(parse_listing(_text("toy_attention.listing.txt.gz")), rows,
                           "toy_attention_kernel")
    deep = [i for i in func.instructions if len(i.chain) >= 3]
    assert deep, "the listing has no nested inline chains"
    assert any(not i.chain[0].file.endswith("toy_attention.cu") for i in deep)


def test_two_profiles_of_one_build_agree_within_two_points():
    a, b = shares(run("toy_attention")), shares(run("toy_attention", "source2"))
    for phase, s in a.items():
        if s >= 0.05:
            assert abs(s - b[phase]) <= 0.02, phase


def test_a_build_whose_lines_moved_keeps_its_breakdown():
    a, b = run("toy_attention"), run("toy_attention_shifted")
    moved = call_line("toy_attention_shifted", "compute_int_qk")
    assert moved != call_line("toy_attention", "compute_int_qk")
    for phase, s in shares(a).items():
        if s >= 0.05:
            assert abs(s - shares(b)[phase]) <= 0.02, phase
    assert {h.line for h in b.lines} != {h.line for h in a.lines}


def test_profile_model_from_the_recording_checks_clean():
    from sagetui.core.check.report import check_report
    from sagetui.core.report.model import Report

    p = to_profile(run("toy_attention"), variant="toy", family="toy", sampling_interval=6)
    report = Report(schema_version=2, mainloop_profiles=[p])
    assert check_report(report) == []
    assert p.sampling_interval_cycles == 2048
    bad = report.model_copy(deep=True)
    bad.mainloop_profiles[0].phases["int8_qk"].share += 0.01
    assert any("int8_qk.share" in str(m) for m in check_report(bad))
