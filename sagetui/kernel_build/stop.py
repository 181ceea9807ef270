"""Stopping a build on a signal: SIGINT, SIGTERM or SIGHUP to the sagetui that builds is sent
on to the build's process group (setup.py, ninja, the compilers: setup_driver.py starts
setup.py as the leader of a group of its own), the group is waited for, the build's staging
folder is removed on the way out (builder.py), and the command ends with one line and the
signal's conventional exit status (BuildInterrupted.status: 130 for SIGINT, 128+N otherwise).

Why a group of its own and forwarding, rather than sharing the terminal's group: a signal sent
to sagetui's pid alone (`kill -TERM`, a job scheduler, a supervisor) never reached the compilers,
which went on writing into a folder nobody would clean; and Ctrl-C, which the terminal sends to
its whole group, reached them before sagetui could say what it stopped. `forward_signals` is for
the main thread of a CLI command; a build in another thread (the console's) runs without it.
A sagetui killed with SIGKILL cannot forward anything: setup.py then ends itself when its parent
dies (the driver's PR_SET_PDEATHSIG), and the next build sweeps the staging left behind
(cache.sweep_staging)."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator

from sagetui.kernel_build.errors import BuildFailed, BuildInterrupted

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
GRACE_S = 10.0  # after the signal, how long the group has to end before it is killed

_groups: set[int] = set()  # the process groups of builds running now
_received: list[int] = []  # the signals forward_signals' handler took, first first


def check(what: str) -> None:
    """BuildInterrupted when a signal came: `what` is what it stopped."""
    if _received:
        raise BuildInterrupted(_received[0], what)


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def _on_signal(signum: int, _frame: object) -> None:
    _received.append(signum)
    # the first signal is sent on as it came; a second one means "now": SIGKILL
    forward = signum if len(_received) == 1 else signal.SIGKILL
    for pgid in list(_groups):
        _signal_group(pgid, forward)


@contextlib.contextmanager
def forward_signals() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP sent on to every build's group while the block runs (main
    thread only); on leaving it, BuildInterrupted if one came (where the block did not raise
    it already: a signal during a cache hit or between two builds still ends the command)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signals are the main thread's: elsewhere a build runs as the console's do
        return
    previous = {sig: signal.getsignal(sig) for sig in SIGNALS}
    _received.clear()
    for sig in SIGNALS:
        signal.signal(sig, _on_signal)
    try:
        yield
        check("between builds (no compiler was running)")
    except (OSError, BuildFailed) as exc:  # what failed after a signal, as a hangup's EIO
        if _received:  # on a write to the terminal, is the signal's doing
            raise BuildInterrupted(_received[0], f"the build ({exc})") from None
        raise
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _received.clear()


@contextlib.contextmanager
def group(pgid: int) -> Iterator[None]:
    """A build's process group (its leader's pid), signalled by forward_signals while the block
    runs; a signal that came before the group existed is sent to it at once. On leaving, the
    group is ended (SIGTERM, then SIGKILL after GRACE_S) and waited for: no compiler outlives
    the build, whether it finished, failed or was stopped."""
    _groups.add(pgid)
    try:
        if _received:
            _signal_group(pgid, _received[0])
        yield
    finally:
        _groups.discard(pgid)
        end_group(pgid)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def end_group(pgid: int, grace_s: float = GRACE_S) -> None:
    """Wait for every process of the group to end: those still there get SIGTERM at once and
    SIGKILL after `grace_s`. Bounded: a member that is a zombie no one reaps is given up on."""
    if not _group_alive(pgid):
        return
    _signal_group(pgid, signal.SIGTERM)
    deadline, killed = time.monotonic() + grace_s, False
    while _group_alive(pgid):
        if time.monotonic() > deadline:
            if killed:
                return
            _signal_group(pgid, signal.SIGKILL)
            deadline, killed = time.monotonic() + 2.0, True
        time.sleep(0.02)
