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


def _upto(series: RoundSeries, r: int) -> RoundSeries:
    return RoundSeries(series.values[: series.bounds[r + 1]], series.bounds[: r + 2])


def test_a_report_shares_the_models_arrays():
    """The recovery file's report (one per round) and the final one copy no sample."""
    from sagetui.core.run.assemble import build_report

    from .test_check import _made_model, _made_report

    m = _made_model()
    r1, r2 = build_report(m), build_report(m)
    for v in ("a", "b"):
        for phase in ("total", "fused_mainloop"):
            a, b = r1.samples[v][phase].values, r2.samples[v][phase].values
            assert np.shares_memory(a, b)
            assert np.shares_memory(a, m.variants[v].samples[phase].values)
    assert r1.samples == _made_report().samples


def test_growable_array_views_survive_appends():
    g = GrowableArray(capacity=2)
    g.extend([1.0, 2.0])
    view = g.view
    g.extend([3.0] * 100)  # a new buffer
    g.append(4.0)
    assert view.tolist() == [1.0, 2.0] and len(g) == 103 and g.view[-1] == 4.0


def test_the_consoles_model_adopts_the_sessions_round_arrays_without_copying():
    """Two models in one process (the session's and the console's), one copy of each
    completed round: the session hands its arrays over on round_done, which never change once
    written; the numbers are the same as a model that folded its own."""
    import dataclasses

    from sagetui.core import events as ev
    from sagetui.core.run.fold import apply, new_model

    from .test_check import _made_model

    session = _made_model()
    own = new_model()
    adopted = new_model()
    for m in (own, adopted):
        apply(m, ev.RunStarted(config=session.config, created_utc="x"))
        for n in ("a", "b"):
            apply(m, ev.VariantLoaded(name=n, backend="reference", status="ok",
                                      phases=session.variants[n].phases))
    for r in range(3):
        for m in (own, adopted):
            apply(m, ev.RoundStarted(round=r, variants=["a", "b"]))
            for n in ("a", "b"):
                s = session.variants[n]
                apply(m, ev.Iterations(
                    variant=n, round=r, half=0, start=0,
                    phases={p: s.samples[p].round_values(r).tolist()
                            for p in ("k_mean_and_smoothing_preparation", "fused_mainloop")},
                    total_s=s.total.round_values(r).tolist()))
        done = ev.RoundDone(round=r, completed=["a", "b"])
        apply(own, done)
        hand = {n: {p: (_upto(ps.series(), r), list(ps.rounds[:r + 1]))  # as at round r
                    for p, ps in v.samples.items()} for n, v in session.variants.items()}
        apply(adopted, dataclasses.replace(done, samples=hand))
    for n in ("a", "b"):
        mine, theirs, source = (m.variants[n].total for m in (own, adopted, session))
        assert np.shares_memory(theirs.values, source.values)
        assert not np.shares_memory(mine.values, source.values)
        assert mine.values.tolist() == theirs.values.tolist() == source.values.tolist()
        assert own.variants[n].round_medians == adopted.variants[n].round_medians
        assert not theirs.pending  # the unfinished round it folded itself went
