"""A captured workload replayed on the GPU with its calls taken in turn, a round at a time
(session/workload.py): every call's set-up kept in the runner and resumed at its next turn,
its late figures after its last round, and the report whole under `check`. Real parts: the
calls captured from torch's own SDPA on the GPU, a real runner, the stock kernels."""

import pytest

from sagetui.core import events as ev
from sagetui.core.capture.loaded import load_workload
from sagetui.core.check.report import check_report
from sagetui.core.config import RunConfig, VariantSpec
from sagetui.session.workload import ORDER, WorkloadSession

pytestmark = pytest.mark.gpu

CALLS, ROUNDS = 4, 3


@pytest.fixture(scope="module")
def capture_dir(tmp_path_factory):
    import torch
    import torch.nn.functional as F

    import sagetui

    d = tmp_path_factory.mktemp("gpu_workload") / "cap"
    torch.manual_seed(0)
    with sagetui.capture(d):
        x = torch.randn(1, 8, 2048, 128, dtype=torch.bfloat16, device="cuda")
        for _ in range(CALLS):  # each call its own inputs, as a model's blocks
            q, k, v = (x + 0.1 * torch.randn_like(x) for _ in range(3))
            x = F.scaled_dot_product_attention(q, k, v)
        torch.cuda.synchronize()
    return d


def test_a_replay_takes_its_calls_in_turn_and_resumes_each_set_up(capture_dir):
    capture = load_workload(capture_dir)
    first = capture.calls[0]
    assert len(capture.calls) == CALLS and first.shape is not None
    cfg = RunConfig(shape=first.shape, inputs_path=str(first.file), warmup=2, rounds=ROUNDS,
                    iterations=10, variants=[VariantSpec.parse(s)
                                             for s in ("sdpa", "sage2-sm90")])
    events: list[ev.Event] = []
    session = WorkloadSession(cfg, capture, capture.calls, on_event=events.append)
    report = session.run()
    assert report.status == "complete", report.status_detail
    turns = [(e.index, e.round) for e in events if isinstance(e, ev.PointStarted)]
    assert turns == [(i, r) for r in range(ROUNDS) for i in range(CALLS)]
    models = [t.model for _, _, t in session._calls]
    assert all(m is not None and m.ready.get("reused_inputs") is True for m in models)
    wl = report.workload
    assert wl is not None and wl.order == ORDER
    assert all(v.round_count == ROUNDS and v.accuracy_brief is not None
               and v.accuracy_brief.relative_l1 is not None
               for p in wl.points for v in p.variants)
    assert all(t.back_to_back_seconds for t in wl.totals)
    assert check_report(report) == []
