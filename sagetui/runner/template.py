"""`python -m sagetui.runner --template SOCKET`: a runner template, a fork server for runners
and for the doctor (core/runner_template.py has its wire and says why).

It imports torch and the runner's modules once, never runs a tensor operation (torch's thread
pools and CUDA start in each runner, after the fork: neither survives one), and forks a runner
per request, its own objects frozen out of the cyclic collector's sight first (gc.freeze). A
forked runner is set up as a started one is: a process group of its own, SIGINT ignored,
stdin/stdout/stderr the requester's pipes, the requester's environment and working directory; it
dies with the template (PR_SET_PDEATHSIG) and with its requester (a pidfd watched by a thread).
The template reaps each runner and writes its exit code on the runner's exit pipe. It prints
"ready" on stdout once it listens, and ends with its parent.
"""

from __future__ import annotations

import gc
import os
import selectors
import signal
import socket
import sys
import threading
import traceback

from sagetui.core import runner_template


def _die_with_parent() -> None:
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _die_with(pid: int) -> None:
    """End this process when `pid` ends (a runner with its requester)."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        os.kill(os.getpid(), signal.SIGKILL)  # gone already
        return

    def watch() -> None:
        sel = selectors.DefaultSelector()
        sel.register(fd, selectors.EVENT_READ)
        sel.select()
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, daemon=True, name="requester-watch").start()


def _runner(req: runner_template.Request, fds: list[int], template: int) -> int:
    """In the forked child: become the requester's runner, run it, its exit code."""
    os.setpgid(0, 0)
    _die_with_parent()
    if os.getppid() != template:
        return 1  # the template ended before the prctl took
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stdin, stdout, stderr, _exit = fds
    for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
        os.dup2(fd, target)
        os.close(fd)
    os.environ.clear()
    os.environ.update(req.env)
    os.chdir(req.cwd)
    _die_with(req.requester)
    sys.argv[1:] = req.args
    from sagetui.runner.entry import run

    return run(list(req.args))


def serve(path: str) -> int:
    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import torch  # noqa: F401  the cost each runner would pay

    import sagetui.runner.doctor  # noqa: F401
    import sagetui.runner.engine  # noqa: F401
    import sagetui.runner.main  # noqa: F401

    gc.collect()  # what the imports left as garbage is not handed to every runner
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    os.set_blocking(wake_r, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    exits: dict[int, int] = {}  # a runner's pid -> the write end of its exit pipe
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ)
    sel.register(wake_r, selectors.EVENT_READ)
    print("ready", flush=True)
    template = os.getpid()
    while True:
        for key, _ in sel.select():
            if key.fileobj is listener:
                conn, _ = listener.accept()
                with conn:
                    # what a forked runner must not hold: the template's own descriptors
                    inherited: list[selectors.BaseSelector | socket.socket] = [
                        sel, listener, conn]
                    _answer(conn, exits, template, inherited, (wake_r, wake_w))
            else:
                _drain(wake_r)
                _reap(exits)


def _answer(conn: socket.socket, exits: dict[int, int], template: int,
            inherited: list[selectors.BaseSelector | socket.socket],
            wake: tuple[int, int]) -> None:
    """One request: fork its runner and answer its pid (or why not)."""
    try:
        data, fds, _, _ = socket.recv_fds(conn, runner_template.MAX_MESSAGE,
                                          runner_template.FDS)
    except OSError as exc:
        conn.send(f"error: {exc}".encode())
        return
    try:
        if len(fds) != runner_template.FDS:
            raise ValueError("four descriptors expected")
        req = runner_template.Request.decode(data)
    except (ValueError, KeyError) as exc:  # the descriptors that came with it are closed
        for fd in fds:
            os.close(fd)
        conn.send(f"error: {exc}".encode())
        return
    sys.stdout.flush()
    sys.stderr.flush()
    # the template's objects (torch's, mostly) out of the cyclic collector's sight: a runner's
    # collections would otherwise walk them all and write to every page they sit on, copying
    # the template's heap into each runner (the gc module's documentation advises it before a
    # fork; a tiny run's forked runner used 0.28 s of CPU, 0.13 s with it)
    gc.freeze()
    pid = os.fork()
    if pid == 0:  # the runner: never returns
        code = 1
        try:
            for held in inherited:
                held.close()
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for fd in (*wake, fds[3], *exits.values()):
                os.close(fd)
            code = _runner(req, fds, template)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    for fd in fds[:3]:
        os.close(fd)
    exits[pid] = fds[3]
    conn.send(str(pid).encode())


def _drain(fd: int) -> None:
    """Empty the signal wake-up pipe (a SIGCHLD each byte)."""
    while True:
        try:
            if not os.read(fd, 512):
                return
        except BlockingIOError:
            return


def _reap(exits: dict[int, int]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        fd = exits.pop(pid, None)
        if fd is not None:
            try:
                os.write(fd, f"{os.waitstatus_to_exitcode(status)}\n".encode())
            except OSError:
                pass  # nobody reads it any more
            os.close(fd)
