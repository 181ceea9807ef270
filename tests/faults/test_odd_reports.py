"""Reports that are valid but odd (every field in range, the combination strange, names with
markup or escape codes): `check` and `compare` read them without a traceback, and show report
text as text. A seeded mutation run over the reference reports and a fresh run's report, plus
the cases it found, kept by name."""

from __future__ import annotations

import copy
import io
import json
import random
from typing import Any

import pytest
from rich.console import Console

from sagetui.cli.main import main
from sagetui.cli.reports import compare_table
from sagetui.core.check.report import check_report
from sagetui.core.export.report import to_csv, to_markdown
from sagetui.core.report.io import ReportError, parse_report
from sagetui.core.report.model import Report

from .conftest import SAMPLE_000, SAMPLE_001

VALUES: list[Any] = [0, 1, 2, 3, 64, 127, 128, 129, 256, 37810, 10**12, 2**63, 10**300, -1, 0.5,
                     1e-300, 1e-9, 1e6, -0.0, "", "x", "[/x]", "[bold]b", "\x1b[2J", "NHD",
                     "HND", "sm90", "sm89", "a", "b", True, False, None, [], {}, [1], {"a": 1}]


def _paths(d: Any, pre: tuple = ()):
    yield pre
    if isinstance(d, dict):
        for k, v in d.items():
            yield from _paths(v, pre + (k,))
    elif isinstance(d, list):
        for i, v in enumerate(d[:4]):
            yield from _paths(v, pre + (i,))


def _mutate(d: Any, rng: random.Random) -> Any:
    spots = [p for p in _paths(d) if p]
    for _ in range(rng.randint(1, 2)):
        p = rng.choice(spots)
        parent = d
        try:
            for k in p[:-1]:
                parent = parent[k]
            old = parent[p[-1]]
        except (KeyError, IndexError, TypeError):
            continue
        roll = rng.random()
        if roll < 0.15 and isinstance(parent, dict):
            del parent[p[-1]]
        elif roll < 0.45 and isinstance(old, (int, float)) and not isinstance(old, bool):
            parent[p[-1]] = type(old)(old * rng.choice([0, 0.5, 2, 10, 1e6]))
        else:
            parent[p[-1]] = copy.deepcopy(rng.choice(VALUES))
    return d


def _render(report: Report, label: str = "odd.json") -> str:
    out = io.StringIO()
    Console(file=out, width=160, color_system=None).print(compare_table([(label, report)]))
    return out.getvalue()


def _exercise(report: Report) -> None:
    for m in check_report(report):
        str(m)
    _render(report)


def test_seeded_mutations_never_crash_check_or_compare(fresh_report):
    bases = [json.loads(SAMPLE_000.read_text()), json.loads(SAMPLE_001.read_text()),
             fresh_report]
    rng = random.Random(20261130)
    valid = 0
    for _ in range(1500):
        d = _mutate(copy.deepcopy(rng.choice(bases)), rng)
        try:
            report = parse_report(d, "odd.json", text=json.dumps(d))
        except ReportError as exc:
            assert "\n" not in str(exc) and str(exc).isprintable()
            continue
        valid += 1
        _exercise(report)
    assert valid > 200  # the run explored valid reports, not only refusals


def _with(base: dict, edit) -> Report:
    d = copy.deepcopy(base)
    edit(d)
    return parse_report(d, "odd.json", text=json.dumps(d))


ODD = {
    # found by the mutation run; each was a traceback before
    "head_dim_over_128": lambda d: d.update(q_shape=[1, 256, 2, 640]),
    "q_len_beyond_a_float": lambda d: d.update(q_shape=[1, 10**300, 2, 64]),
    "causal_with_a_huge_q_len": lambda d: (d.update(q_shape=[1, 10**15, 2, 64]),
                                          d["variants"][0]["scheduler"].update(causal=True)),
    "config_shape_not_an_object": lambda d: (d.pop("layout"), d["config"].update(shape=5)),
    "verdict_without_its_upper_bound": lambda d: d["variants"][1]["verdict"].pop(
        "ci_high_percent"),
    "variant_name_closing_markup": lambda d: _rename(d, "a", "[/x]"),
    "variant_name_with_markup": lambda d: _rename(d, "a", "[link=file:///etc/passwd]a[/link]"),
    "variant_name_with_escape_codes": lambda d: _rename(d, "a", "\x1b[2J\x1b]0;pwned\x07"),
    "phase_name_with_escape_codes": lambda d: d["variants"][0]["phase_timings"].update(
        {"\x1b[31mred": d["variants"][0]["phase_timings"]["fused_mainloop"]}),
}


def _rename(d: dict, old: str, new: str) -> None:
    for v in d["variants"]:
        if v["name"] == old:
            v["name"] = new
    if d.get("baseline") == old:
        d["baseline"] = new
    d["samples"][new] = d["samples"].pop(old)


@pytest.mark.parametrize("case", sorted(ODD))
def test_odd_report_is_checked_and_compared(case, fresh_report, tmp_path, capsys):
    report = _with(fresh_report, ODD[case])
    _exercise(report)
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(report.to_json_dict()))
    assert main(["check", str(path)]) in (0, 1)
    assert main(["compare", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out  # report text never drives the terminal
    if "markup" in case:
        assert "[/x]" in out or "[link=file:///etc/passwd]a[/link]" in out  # shown as written


def test_exports_of_odd_reports(fresh_report):
    """CSV and Markdown of a report opened from disk (the console exports those too)."""
    for case in ODD:
        report = _with(fresh_report, ODD[case])
        to_csv(report)
        to_markdown(report)


def test_view_of_an_odd_report_builds_its_panels(fresh_report):
    from sagetui.tui.source import saved_source

    for case in ODD:
        saved_source(_with(fresh_report, ODD[case]), "odd.json", path="odd.json")


def test_csv_export_defuses_spreadsheet_formulas(fresh_report):
    d = json.loads(json.dumps(fresh_report))
    d["samples"]["=HYPERLINK(1)"] = d["samples"].pop("a")
    from sagetui.core.report.model import Report

    text = to_csv(Report.model_validate(d))
    assert "\n'=HYPERLINK(1)," in text and "\n=HYPERLINK" not in text
