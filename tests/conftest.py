import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# an event that a display's `match` does not handle raises in the tests (core/events.unexpected)
os.environ.setdefault("SAGETUI_STRICT_EVENTS", "1")
SAMPLES = ROOT / "sample_results"
# Two reports made elsewhere, before sagetui, at one attention call of a video model (1,344 x 768,
# 124 frames, block 24: 1 x 37,810 x 56 x 128): SageAttention2's phases timed one by one, with
# the scheduler's grid and the tail study; and two builds of it (baseline, interleave-softmax)
# over 5 rounds.
VIDEO_CALL_PHASES = SAMPLES / "000_a7d5760a8f7ea9fe.json"
TWO_BUILDS = SAMPLES / "001_c3fd8b591d904547.json"

# Textual's Pilot.pause() waits for the app to go idle: it sleeps in windows of 20 ms until one
# passes with under 1 ms of the process's CPU. The console tests pause thousands of times, and
# most pauses end after one window: in 5 ms windows (the same rule, 5 % of the window) the
# suite idles a quarter less in its console tests (tests/tui: 161 s -> 123 s on 2 workers).
# Textual has no public setting for it; the tests that need a state wait on it (wait_for).
import textual._wait  # noqa: E402

textual._wait.SLEEP_GRANULARITY = 1 / 200
textual._wait.SLEEP_IDLE = textual._wait.SLEEP_GRANULARITY / 20

# A shape that runs a reference-backend round in a fraction of a second.
TINY = ["--heads", "2", "--q-len", "256", "--head-dim", "64", "--warmup", "1"]


def pytest_addoption(parser):
    parser.addoption(
        "--busy-loops", type=int, metavar="N",
        default=int(os.environ.get("SAGETUI_TEST_BUSY_LOOPS") or 0),
        help="run the tests marked `loaded` (the consoles in tmux, the dying console) beside N "
             "busy loops, as on a loaded machine (also SAGETUI_TEST_BUSY_LOOPS=N; "
             "default 0)")


def _users_folders() -> list[Path]:
    """The user's own sagetui state and cache folders (before the suite points elsewhere)."""
    home = Path.home()
    return [Path(os.environ.get("XDG_STATE_HOME") or home / ".local" / "state") / "sagetui",
            Path(os.environ.get("XDG_CACHE_HOME") or home / ".cache") / "sagetui"]


def _snapshot(folders: list[Path]) -> dict[str, tuple[int, int]]:
    out = {}
    for folder in folders:
        for p in [folder, *(folder.rglob("*") if folder.is_dir() else [])]:
            with contextlib.suppress(OSError):
                st = p.stat()
                out[str(p)] = (st.st_size, st.st_mtime_ns)
    return out


def pytest_configure(config):
    """The checkout's sagetui compiled once, in the controller, before any test process starts:
    the suite's processes that import it from here (the workers, the runner templates, the
    children given PYTHONPATH=ROOT) then read its bytecode, where with PYTHONDONTWRITEBYTECODE
    set (CI's machine sets it) each compiled what it imported again (0.3 s of CPU a process,
    some seventy processes a run; compiling all of it takes 0.6 s once).

    And the suite's state and cache folders (XDG_STATE_HOME, XDG_CACHE_HOME) are its own, for
    every process it starts: a test that lost its own (monkeypatch.undo() once undid it) wrote a
    fake H200's calibration into the user's file. pytest_sessionfinish fails the run if the
    user's own folders changed all the same."""
    if not hasattr(config, "workerinput"):
        import compileall
        import tempfile

        compileall.compile_dir(ROOT / "sagetui", quiet=1)
        config._users_folders = _users_folders()
        config._users_before = _snapshot(config._users_folders)
        own = Path(tempfile.mkdtemp(prefix="sagetui-suite-home-"))
        os.environ["XDG_STATE_HOME"] = str(own / "state")
        os.environ["XDG_CACHE_HOME"] = str(own / "cache")


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if hasattr(config, "workerinput") or not hasattr(config, "_users_before"):
        return
    after = _snapshot(config._users_folders)
    if after != config._users_before:
        changed = sorted(set(after.items()) ^ set(config._users_before.items()))
        print(f"\nthe suite changed the user's own sagetui folders: {changed[:5]}",
              file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_report_header(config):
    n = config.getoption("--busy-loops")
    return f"busy loops beside the tests marked loaded: {n}" if n else None


@pytest.fixture(autouse=True)
def _busy_loops(request):
    """--busy-loops N: N processes spinning (`while True: pass`) while a test marked `loaded`
    runs, started before it and ended after it, each by its own pid."""
    n = request.config.getoption("--busy-loops")
    if n <= 0 or request.node.get_closest_marker("loaded") is None:
        yield
        return
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for p in loops:
            p.kill()
        for p in loops:
            p.wait()


def _cuda_available() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (run on the H200)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def runner_template(tmp_path_factory):
    """The runners of a test session are forked from one runner template per test process
    (runner/template.py): a real runner each, set up as a started one, without a Python start
    and a torch import (2.5 s of CPU) each; children started with this environment (the CLI,
    the console in tmux) use it too. Not on a GPU machine (runners there are started, the way a
    user's are), nor with SAGETUI_TEST_STARTED_RUNNERS=1; tests that look at how a runner was
    started use `started_runners`."""
    from sagetui.core.runner_template import ENV

    if os.environ.get("SAGETUI_TEST_STARTED_RUNNERS") or _cuda_available():
        yield None
        return
    import selectors
    import warnings

    path = tmp_path_factory.mktemp("template") / "runners"
    proc = subprocess.Popen([sys.executable, "-m", "sagetui.runner", "--template", str(path)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:  # its "ready", or the runners are started
        sel.register(proc.stdout, selectors.EVENT_READ)
        ready = bool(sel.select(120)) and proc.stdout.readline().strip() == "ready"
    if not ready:  # test_runner_template.py says what is wrong with it
        proc.kill()
        proc.wait()
        warnings.warn("the runner template did not start: this session starts its runners",
                      stacklevel=1)
        yield None
        return
    os.environ[ENV] = str(path)
    yield str(path)
    os.environ.pop(ENV, None)
    proc.kill()
    proc.wait()


@pytest.fixture
def started_runners(monkeypatch):
    """This test's runners started as their own processes (`python -m sagetui.runner`), not
    forked from the template: it looks at their parent, command line or environment."""
    from sagetui.core.runner_template import ENV

    monkeypatch.delenv(ENV, raising=False)


def fake_noise_floor(monkeypatch, floor: float) -> None:
    """Mocked: the machine's noise. A busy shared 2-core machine cannot be made quiet (its
    real A/A floor at the tiny shape is 3-16 %) or noisy on demand; the A/A run itself stays
    real, only the floor measured from it is replaced."""
    from sagetui.session import calibration

    real, real_point = calibration.measured_noise_floor, calibration.point_noise_floor
    monkeypatch.setattr(calibration, "measured_noise_floor",
                        lambda r: None if real(r) is None else floor)
    monkeypatch.setattr(calibration, "point_noise_floor",  # an A/A sweep's, point by point
                        lambda p: None if real_point(p) is None else floor)


@pytest.fixture(autouse=True)
def _private_state(tmp_path, monkeypatch):
    """Every test gets its own state directory: a session looks up stored calibrations, and
    one in the user's own home must never change a test's threshold."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


@pytest.fixture
def cli(tmp_path):
    """Run `sagetui ...` as a user would, in tmp_path, with recovery files kept there too."""
    import subprocess

    def run(*args, timeout=120, env=None, check=False):
        full_env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"), **(env or {}))
        return subprocess.run([sys.executable, "-m", "sagetui", *map(str, args)],
                              cwd=tmp_path, capture_output=True, text=True, timeout=timeout,
                              env=full_env, check=check)
    return run


def main_status(args) -> int:
    """`sagetui ARGS`'s exit status from main() in this process, as the process would end it
    (argparse's SystemExit included)."""
    from sagetui.cli.main import main

    try:  # main() puts back the signal handlers `sagetui run` installs
        return main([str(a) for a in args])
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1


@pytest.fixture
def cli_here(tmp_path, monkeypatch, capsys):
    """`sagetui ...` in this process (so a test can replace a part with monkeypatch), in
    tmp_path with its own state directory; the runner is still a real subprocess.
    Returns (exit status, stdout, stderr)."""
    from types import SimpleNamespace

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))

    def run(*args):
        rc = main_status(args)
        out = capsys.readouterr()
        return SimpleNamespace(returncode=rc, stdout=out.out, stderr=out.err)
    return run


def sagetui_here(*args: object, cwd: Path, env: dict[str, str] | None = None):
    """cli_here for a fixture wider than a test: `sagetui ARGS` in this process, in `cwd`
    with its own state directory and `env` added, its output kept apart. Returns (exit
    status, stdout, stderr)."""
    import contextlib
    import io
    from types import SimpleNamespace

    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        mp.chdir(cwd)
        mp.setenv("XDG_STATE_HOME", str(cwd / "state"))
        for key, value in (env or {}).items():
            mp.setenv(key, value)
        rc = main_status(args)
    return SimpleNamespace(returncode=rc, stdout=out.getvalue(), stderr=err.getvalue())


@pytest.fixture
def has_tmux():
    return shutil.which("tmux") is not None


TINY_ARCH = "8.9"  # the architecture the tests' tiny tree is built for (it has no CUDA code)


@pytest.fixture(scope="session")
def tiny_build(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, object]:
    """The tests' tiny SageAttention-like tree (build_tree.py, its plain kind) built once a
    session, by its own setup.py: (tree, cache root, its build facts). A test that needs a good
    build of it in a cache of its own seeds one from this (`seed_build_cache`): the key holds no
    path, so any copy of the tree is then a cache hit."""
    from sagetui.kernel_build.builder import build, plan

    from .build_tree import write_tree

    base = tmp_path_factory.mktemp("build")
    tree, root = write_tree(base / "tree"), base / "cache"
    facts = build(plan(tree, "sage2-sm89", arch=TINY_ARCH), progress=lambda _: None,
                  cache_root=root)
    return tree, root, facts


def seed_build_cache(tiny: tuple[Path, Path, object], xdg_cache_home: Path) -> None:
    """`tiny_build`'s entries copied into XDG_CACHE_HOME's sagetui build cache (not the
    per-tree objects: each tree there builds incrementally on its own)."""
    shutil.copytree(tiny[1], xdg_cache_home / "sagetui" / "builds",
                    ignore=shutil.ignore_patterns("trees"), dirs_exist_ok=True)


REPLAYED_CALLS = 12  # tests/capture_model.py's 3 steps of 4 blocks, every call saved


def made_once_per_run(tmp_path_factory: pytest.TempPathFactory, name: str, make) -> Path:
    """The folder `name`, filled by `make(folder)` once for the whole test run: under
    pytest-xdist its workers share it (the first to come makes it, holding a lock the others
    wait on), where a session fixture is made once per worker. Read-only to the tests."""
    import fcntl

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's own folder, above each worker's (popen-gwN)
    folder, done = root / name, root / f"{name}.done"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)  # a worker that failed half-way
            folder.mkdir()
            make(folder)
            done.touch()
    return folder


@pytest.fixture(scope="session")
def replayed_workload(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workload report from a real replay, made once a test run (made_once_per_run: both
    xdist workers read it): `sagetui capture` of tests/capture_model.py (3 steps, 12 calls:
    causal and not, one block with GQA), then `sagetui run --workload` of it on the CPU's
    reference backend, two variants (one slowed). Returns the report's path (read-only to the
    tests: copy it to change it)."""
    return made_once_per_run(tmp_path_factory, "workload", _replay_workload) / "workload.json"


def _replay_workload(base: Path) -> None:
    env = dict(os.environ, XDG_STATE_HOME=str(base / "state"))

    def sagetui(*args: object) -> None:
        subprocess.run([sys.executable, "-m", "sagetui", *map(str, args)], cwd=base, env=env,
                       check=True, capture_output=True, text=True, timeout=300)

    sagetui("capture", "--out", "cap", "--", sys.executable, ROOT / "tests" / "capture_model.py",
            "--steps", "3", "--record", "own.json")
    sagetui("run", "--workload", "cap", "--variant", "ref=reference", "--variant",
            "slow=reference[slowdown=1.3]", "--device", "cpu", "--warmup", "1", "--rounds", "2",
            "--iterations", "2", "--quiet", "--json", "workload.json")
