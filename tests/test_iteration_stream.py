"""A block's iterations leave the runner as columns: as they come when calls are slow (the
console's plots move during a block), in few events when they are fast."""

from __future__ import annotations

import time

from sagetui.core import events as ev
from sagetui.core.protocol import STREAM_CHUNK_S
from sagetui.runner.engine import IterationStream


def test_slow_calls_are_sent_one_by_one_and_fast_ones_together():
    sent: list[ev.RunnerEventT] = []
    stream = IterationStream(sent.append, "a", 2, 1)
    for i in range(3):  # calls slower than a chunk: each is sent as it ends
        time.sleep(STREAM_CHUNK_S * 1.2)
        stream.add({"q": 0.1 * i, "k": 0.2})
    assert [e.n for e in sent if isinstance(e, ev.Iterations)] == [1, 1, 1]
    for _ in range(100):  # fast calls: held until a chunk's time has passed, or the end
        stream.add({"q": 1e-5, "k": 2e-5})
    stream.flush()
    events = [e for e in sent if isinstance(e, ev.Iterations)]
    assert sum(e.n for e in events) == 103 and len(events) <= 5
    assert [e.start for e in events] == [0, 1, 2, *[3 + sum(x.n for x in events[3:i])
                                                   for i in range(3, len(events))]]
    first = events[0]
    assert (first.variant, first.round, first.half) == ("a", 2, 1)
    assert first.phases == {"q": [0.0], "k": [0.2]} and first.total_s == [0.2]


def test_a_change_of_phases_starts_new_columns():
    sent: list[ev.RunnerEventT] = []
    stream = IterationStream(sent.append, "a", 0, 0)
    stream.add({"q": 1.0}, flush_due=False)
    stream.add({"q": 1.0, "k": 2.0}, flush_due=False)
    stream.flush()
    assert [(e.phases, e.start) for e in sent if isinstance(e, ev.Iterations)] == [
        ({"q": [1.0]}, 0), ({"q": [1.0], "k": [2.0]}, 1)]
