"""Raw samples held as arrays (core/samples.py): written as the JSON lists they always were,
read back equal, checked sample by sample, and shared with the collector, not copied."""

import json

import numpy as np
import pytest

from sagetui.core.report.io import ReportError, iter_report_json, load_report, parse_report
from sagetui.core.report.model import Report
from sagetui.core.samples import GrowableArray, RoundSeries, Samples


def _samples() -> Samples:
    return Samples({"a": {"total": RoundSeries.from_rounds([[0.25, 1e-7], [3.0]]),
                          "empty": RoundSeries.from_rounds([])},
                    'odd "name"\n': {"x": RoundSeries.from_rounds([[0.1 + 0.2]])},
                    "none": {}})


def test_dumps_is_the_json_of_the_lists_exactly():
    s = _samples()
    text = "".join(s.iter_json(indent=2, level=0))
    assert json.loads(text) == s.tolist()
    assert json.loads(text)['odd "name"\n']["x"] == [[0.30000000000000004]]  # repr: exact
    assert "[0.25, 1e-07]" in text  # a round's list is one line
    assert "".join(Samples().iter_json()) == "{}"


def test_round_series_indexing_and_equality():
    s = RoundSeries.from_rounds([[1.0, 2.0], [], [3.0]])
    assert len(s) == 3 and [r.tolist() for r in s] == [[1.0, 2.0], [], [3.0]]
    assert s[-1].tolist() == [3.0] and s.values.flags.writeable is False
    with pytest.raises(IndexError):
        s[3]
    assert s == RoundSeries.from_rounds([[1.0, 2.0], [], [3.0]])
    assert s != RoundSeries.from_rounds([[1.0], [2.0], [3.0]])  # same values, other rounds


def test_report_reads_back_equal_through_the_round_by_round_encoder(tmp_path):
    from .test_check import _made_report

    report = _made_report()
    assert isinstance(report.samples, Samples)
    text = "".join(iter_report_json(report))
    back = parse_report(json.loads(text), text=text)
    assert back == report and back.samples.count() == report.samples.count() > 0
    assert json.loads(text)["samples"] == report.to_json_dict()["samples"]


def test_a_bad_sample_is_named_by_its_path(tmp_path):
    from .test_check import _made_report

    data = _made_report().to_json_dict()
    data["samples"]["b"]["total"][2][1] = -1.0
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ReportError) as e:
        load_report(path)
    assert "$.samples.b.total[2][1]" in str(e.value) and "greater than 0" in str(e.value)
    data["samples"]["b"]["total"][2][1] = True  # strict: a boolean is not a number
    path.write_text(json.dumps(data))
    with pytest.raises(ReportError, match=r"\$\.samples\.b\.total\[2\]\[1\]"):
        load_report(path)


def test_arrays_are_checked_too():
    from .test_check import _made_report

    d = _made_report().model_dump()
    for bad in (0.0, -1.0, np.nan, np.inf, 2e6):
        values = np.array([0.1, bad, 0.2])
        d["samples"] = Samples({"a": {"total": RoundSeries(values, np.array([0, 1, 3]))}})
        with pytest.raises(ValueError, match=r"samples\['a'\]\['total'\]\[1\]\[0\]"):
            Report.model_validate(d)


def test_a_report_shares_the_collectors_arrays():
    """The recovery file's report (one per round) and the final one copy no sample."""
    from .test_check import _made_collector, _made_report

    c = _made_collector()
    r1, r2 = c.report(), c.report()
    for v in ("a", "b"):
        for phase in ("total", "fused_mainloop"):
            a, b = r1.samples[v][phase].values, r2.samples[v][phase].values
            assert np.shares_memory(a, b)
            assert np.shares_memory(a, c.variants[v].store[phase].values.view)
    assert r1.samples == _made_report().samples


def test_growable_array_views_survive_appends():
    g = GrowableArray(capacity=2)
    g.extend([1.0, 2.0])
    view = g.view
    g.extend([3.0] * 100)  # a new buffer
    g.append(4.0)
    assert view.tolist() == [1.0, 2.0] and len(g) == 103 and g.view[-1] == 4.0


def test_the_console_adopts_a_reports_samples_without_copying():
    """After a run the console shows the final report: its panels read the report's arrays
    (the session's), so each sample is held once; and the numbers are the same."""
    from sagetui.tui.report_view import load_report
    from sagetui.tui.run_data import RunData

    from .test_check import _made_report

    report = _made_report()
    data = RunData("run", live=True)
    load_report(data, report)
    for name in ("a", "b"):
        view = data.variants[name]
        assert np.shares_memory(view.total.values.view, report.samples[name]["total"].values)
        assert np.shares_memory(view.totals.values.view, view.total.values.view)
        main = view.phase_store["fused_mainloop"]
        assert np.shares_memory(main.values.view, report.samples[name]["fused_mainloop"].values)
        assert view.total.values.view.tolist() == report.samples[name]["total"].values.tolist()
        assert view.p50_s() == float(np.median(report.samples[name]["total"].values))
        # an append copies first: the report is never written to
        view.total.add_many(99, np.array([1.0]))
        assert report.samples[name]["total"].values[-1] != 1.0
