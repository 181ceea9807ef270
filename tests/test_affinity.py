"""--affinity (core/affinity.py): the CPU list's syntax both ways, the refusals, and a pin that
holds the calling thread alone for its block and gives its CPUs back after."""

from __future__ import annotations

import os
import threading

import pytest

from sagetui.core import affinity
from sagetui.core.config import default_config


def test_a_cpu_list_reads_and_writes_back_canonically() -> None:
    assert affinity.parse_cpus("0-3,8") == [0, 1, 2, 3, 8]
    assert affinity.parse_cpus(" 5 ") == [5]
    assert affinity.cpus_text([8, 0, 1, 2, 3, 3]) == "0-3,8"
    assert affinity.cpus_text(affinity.parse_cpus("4,2,3,7")) == "2-4,7"
    for bad in ("", "a", "3-1", "-1", "1,,2"):
        with pytest.raises(ValueError, match="give CPUs as 2, 0-3 or 0,2-3"):
            affinity.parse_cpus(bad)
    assert default_config(affinity="1,0").affinity == "0-1"


def test_a_cpu_this_process_may_not_use_is_refused() -> None:
    allowed = sorted(os.sched_getaffinity(0))
    assert affinity.refusal(str(allowed[0])) is None
    why = affinity.refusal("4095")
    assert why is not None and why.startswith("--affinity 4095: CPU 4095 is not one")


def test_a_pin_holds_the_calling_thread_alone_and_gives_its_cpus_back() -> None:
    before = os.sched_getaffinity(0)
    cpu = min(before)
    seen: dict[str, set[int]] = {}
    asked, answered = threading.Event(), threading.Event()

    def other() -> None:  # started before the pin: Linux pins the calling thread alone
        asked.wait(timeout=60)
        seen["other"] = os.sched_getaffinity(0)
        answered.set()

    t = threading.Thread(target=other)
    t.start()
    with affinity.pinned(str(cpu)):
        seen["inside"] = os.sched_getaffinity(0)
        asked.set()
        assert answered.wait(timeout=60)
    t.join()
    assert seen == {"inside": {cpu}, "other": before}
    assert os.sched_getaffinity(0) == before
    with affinity.pinned(None):
        assert os.sched_getaffinity(0) == before
