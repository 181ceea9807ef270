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


def test_the_timing_thread_is_pinned_for_the_run_and_the_threads_it_starts_move_off() -> None:
    """The runner's pin (Engine.setup): its thread on the CPUs named until pinned again; a
    thread it starts inherits the pin and, calling release(), goes to the process's other CPUs;
    a thread started before keeps its CPUs (Linux pins the calling thread alone)."""
    before = os.sched_getaffinity(0)
    cpu = min(before)
    seen: dict[str, set[int]] = {}
    asked, answered = threading.Event(), threading.Event()

    def earlier() -> None:
        asked.wait(timeout=60)
        seen["earlier"] = os.sched_getaffinity(0)
        answered.set()

    def started_by_the_pinned_one() -> None:
        seen["inherited"] = os.sched_getaffinity(0)
        affinity.release()
        seen["released"] = os.sched_getaffinity(0)

    def timing() -> None:  # the runner's main thread, here a thread of this test's own
        affinity.pin_timing_thread(str(cpu))
        seen["pinned"] = os.sched_getaffinity(0)
        asked.set()
        answered.wait(timeout=60)
        t = threading.Thread(target=started_by_the_pinned_one)
        t.start()
        t.join()
        affinity.pin_timing_thread(None)
        seen["after"] = os.sched_getaffinity(0)

    e = threading.Thread(target=earlier)
    e.start()
    t = threading.Thread(target=timing)
    t.start()
    t.join()
    e.join()
    assert seen["pinned"] == seen["inherited"] == {cpu}
    assert seen["released"] == (before - {cpu} or before)
    assert seen["earlier"] == seen["after"] == before
    affinity.release()  # no thread pinned now: nothing moves
    assert os.sched_getaffinity(0) == before


def test_a_pin_on_every_cpu_the_process_has_is_cautioned(capsys, tmp_path) -> None:
    """Where --affinity names all the CPUs the process may run on (a taskset around it named
    the same), the runner's other threads have nowhere else to go: `sagetui run` says so on
    stderr and runs; a pin that leaves CPUs free draws no word."""
    from sagetui.cli.main import main

    allowed = sorted(os.sched_getaffinity(0))
    every = affinity.cpus_text(allowed)
    caution = affinity.crowded(every)
    assert caution is not None and caution.startswith(f"--affinity {every}: these are all")
    if len(allowed) > 1:
        assert affinity.crowded(str(allowed[0])) is None
    assert affinity.crowded("4095") is None  # refused, not cautioned
    assert main(["run", "--backend", "reference", "--rounds", "1", "--warmup", "0",
                 "--iterations", "1", "--affinity", every, "--quiet",
                 "--json", str(tmp_path / "r.json")]) == 0
    assert f"sagetui: --affinity {every}: these are all" in capsys.readouterr().err
