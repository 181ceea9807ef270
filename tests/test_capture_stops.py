"""Captures publish only what ran, and stop clean (issue 29): forked processes, a program that
changes directory, signals to `sagetui capture` (forwarded to the program's group), staging
left by a killed sagetui, `--out` as typed, names that look like markup, special files, and
what an unselected call costs. Real programs in real processes, real signals, on the CPU."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
import torch
import torch.nn.functional as F

import sagetui
from sagetui.core.capture.loaded import load_workload
from sagetui.core.capture.outcome import CaptureError
from sagetui.recorder import module_path, recording

from .capture_model import run
from .conftest import ROOT
from .test_capture import MODEL, _sagetui, captured, leftovers, one_thread

ENV = {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}

FOREVER = '''import os, sys, time
import torch, torch.nn.functional as F
child = os.fork()
if child == 0:  # a process of the program's own: it goes with the program's group
    while True:
        time.sleep(0.05)
q = torch.randn(1, 1, 4, 8)
F.scaled_dot_product_attention(q, q, q)
with open(sys.argv[1] + ".tmp", "w") as fh:
    fh.write(f"{os.getpid()} {child}")
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    F.scaled_dot_product_attention(q, q, q)
    time.sleep(0.01)
'''

FORKED = '''import multiprocessing as mp
import torch, torch.nn.functional as F


def work(i):
    q = torch.full((1, 1, 4, 8), float(i))
    return float(F.scaled_dot_product_attention(q, q, q).sum())


if __name__ == "__main__":
    torch.set_num_threads(1)
    q = torch.randn(1, 2, 4, 8)
    F.scaled_dot_product_attention(q, q, q)
    with mp.get_context("fork").Pool(2) as pool:
        print(pool.map(work, range(5)))
    F.scaled_dot_product_attention(q, q, q, is_causal=True)
'''

HYDRA = '''import os
import torch, torch.nn.functional as F
os.makedirs("outputs/run", exist_ok=True)
os.chdir("outputs/run")  # as Hydra does
q = torch.randn(1, 2, 4, 8)
F.scaled_dot_product_attention(q, q, q)
'''

MARKUP = '''import torch, torch.nn.functional as F
from torch import nn


class Attn(nn.Module):
    def forward(self, x):
        return F.scaled_dot_product_attention(x, x, x)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleDict({"[bold red]x[/]": Attn(), "a[0]": Attn()})

    def forward(self, x):
        return [m(x) for m in self.heads.values()]


Model()(torch.randn(1, 2, 4, 8))
'''


def sagetui_in(cwd, *args, timeout=120):
    return subprocess.run([sys.executable, "-m", "sagetui", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **ENV))


def wait_for(condition, timeout=60.0, what="a condition"):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout} s for {what}")
        time.sleep(0.02)


def gone(pid: int) -> bool:
    """The process has ended (a zombie no one has reaped yet counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


# --- 1. a capture is what the program passed ------------------------------------------------

def test_calls_in_forked_processes_are_counted_not_recorded(cli, tmp_path):
    (tmp_path / "forked.py").write_text(FORKED)
    out = cli("capture", "--out", "cap", "--", "python", "forked.py")
    assert out.returncode == 0, out.stderr
    [line] = out.stderr.splitlines()
    assert re.fullmatch(r"sagetui capture: 5 calls in forked processes, not recorded \([12] "
                        r"process(es)?: a capture records the program's own process\)", line)
    assert out.stdout.splitlines()[-1].startswith("captured 2 of the program's 2 attention calls")
    w = load_workload(tmp_path / "cap")  # every file as the manifest says
    m = w.manifest
    assert (m.calls_seen, m.forked_calls) == (2, 5) and 1 <= len(m.forked_pids) <= 2
    assert [c.facts.is_causal for c in w.calls] == [False, True]
    assert sorted(p.name for p in (tmp_path / "cap").iterdir()) == [
        "call-000000.safetensors", "call-000001.safetensors", "manifest.json"]
    assert leftovers(tmp_path) == []


def test_a_fork_inside_the_context_manager_is_counted(tmp_path):
    q = torch.randn(1, 2, 4, 8)
    # one thread: torch's thread pool does not survive a fork (the child would hang in it)
    with one_thread(), sagetui.capture(tmp_path / "cap") as c:
        F.scaled_dot_product_attention(q, q, q)
        pid = os.fork()
        if pid == 0:  # the child: two calls, then gone without leaving the block
            F.scaled_dot_product_attention(q, q, q)
            F.scaled_dot_product_attention(q, q, q)
            os._exit(0)
        assert os.waitpid(pid, 0)[1] == 0
    assert c.manifest is not None
    assert (c.manifest.calls_seen, c.manifest.forked_calls, c.manifest.forked_pids) == (
        1, 2, [pid])
    assert len(load_workload(tmp_path / "cap").calls) == 1


def test_a_file_changed_before_publishing_is_refused(tmp_path):
    """Every saved file is hashed again before the capture is published."""
    q = torch.randn(1, 2, 4, 8)
    with pytest.raises(CaptureError, match=r"^the capture does not hold what the program "
                       r"passed: .*call 0 \(call-000000.safetensors\): [qkv]'s bytes have sha256 "):
        with sagetui.capture(tmp_path / "cap"):
            F.scaled_dot_product_attention(q, q, q)
            [staged] = tmp_path.glob(".cap.*.partial")
            f = staged / "call-000000.safetensors"
            raw = bytearray(f.read_bytes())
            raw[-1] ^= 1
            f.write_bytes(bytes(raw))
    assert not (tmp_path / "cap").exists() and leftovers(tmp_path) == []


def test_a_program_that_changes_directory_is_captured_at_out(cli, tmp_path):
    (tmp_path / "hydra.py").write_text(HYDRA)
    out = cli("capture", "--out", "cap", "--", "python", "hydra.py")
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert len(load_workload(tmp_path / "cap").calls) == 1
    assert not (tmp_path / "outputs" / "run" / "cap").exists() and leftovers(tmp_path) == []


def test_the_context_manager_with_a_relative_dir_and_a_change_of_directory(tmp_path,
                                                                          monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    with one_thread(), sagetui.capture("cap") as c:
        os.chdir(tmp_path / "elsewhere")
        run(1)
    assert c.manifest is not None and len(load_workload(tmp_path / "cap").calls) == 4
    assert leftovers(tmp_path) == [] and list((tmp_path / "elsewhere").iterdir()) == []


# --- 2. signals: forwarded to the program's group, staging removed --------------------------

def _end(*pids):
    """A test that failed leaves no process of its own behind."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _start_forever(tmp_path, request):
    """`sagetui capture` of a program that runs until stopped, once it runs; its output in
    files (the program's own child holds them open as long as it lives)."""
    (tmp_path / "forever.py").write_text(FOREVER)
    with open(tmp_path / "out.txt", "w") as out, open(tmp_path / "err.txt", "w") as err:
        p = subprocess.Popen([sys.executable, "-m", "sagetui", "capture", "--out", "cap", "--",
                              "python", "forever.py", "pids"], cwd=tmp_path, text=True,
                             stdout=out, stderr=err, env=dict(os.environ, **ENV))
    wait_for(lambda: (tmp_path / "pids").exists() or p.poll() is not None, what="the program")
    assert p.poll() is None, (tmp_path / "err.txt").read_text()
    program, child = map(int, (tmp_path / "pids").read_text().split())
    request.addfinalizer(lambda: _end(p.pid, program, child))
    return p, program, child


@pytest.mark.parametrize(("signum", "status"), [
    (signal.SIGINT, 130), (signal.SIGTERM, 128 + signal.SIGTERM),
    (signal.SIGHUP, 128 + signal.SIGHUP)])
def test_a_signal_stops_the_program_and_its_group_and_keeps_nothing(tmp_path, request, signum,
                                                                    status):
    p, program, child = _start_forever(tmp_path, request)
    assert len(leftovers(tmp_path)) == 1  # staging, being written
    p.send_signal(signum)  # to sagetui alone: it sends it on
    assert p.wait(timeout=60) == status
    assert (tmp_path / "err.txt").read_text().splitlines() == [
        f"sagetui capture: stopped by {signal.Signals(signum).name}: the program was stopped "
        "and nothing was captured"]
    wait_for(lambda: gone(program) and gone(child), what="the program's processes to end")
    assert not (tmp_path / "cap").exists() and leftovers(tmp_path) == []


def test_staging_of_a_killed_sagetui_is_swept_by_the_next_capture(cli, tmp_path, request):
    p, program, child = _start_forever(tmp_path, request)
    p.kill()  # SIGKILL: no handler runs
    p.wait(timeout=60)
    # the program ends with its parent, and the program's own child with the program
    wait_for(lambda: gone(program) and gone(child), what="the program to end with its parent")
    [left] = leftovers(tmp_path)
    assert f"-{p.pid}-" in left
    out = cli("capture", "--out", "cap", "--", "python", MODEL, "--record", "r.json")
    assert out.returncode == 0, out.stderr
    assert out.stderr.splitlines() == [
        f"sagetui capture: removed 1 staging directory ({left}) left by sagetui process "
        f"{p.pid}, no longer running"]
    assert leftovers(tmp_path) == [] and len(load_workload(tmp_path / "cap").calls) == 8


# --- 3. --out as typed ---------------------------------------------------------------------

def test_out_dot_from_an_empty_directory(tmp_path):
    here = tmp_path / "here"
    here.mkdir()
    out = sagetui_in(here, "capture", "--out", ".", "--", "python", MODEL, "--record",
                     tmp_path / "r.json")
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert out.stdout.strip().endswith("into .")
    assert len(load_workload(here).calls) == 8
    assert sorted(p.name for p in here.iterdir())[-1] == "manifest.json"
    assert not any(p.name.startswith(".") for p in here.iterdir())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["here", "r.json"]


def test_out_a_symlink_to_an_empty_directory(cli, tmp_path):
    (tmp_path / "target").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "target")
    out = cli("capture", "--out", "link", "--", "python", MODEL, "--record", "r.json")
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert (tmp_path / "link").is_symlink() and len(load_workload(tmp_path / "target").calls) == 8
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_force_into_the_working_directory_keeps_the_directory(tmp_path):
    here = tmp_path / "here"
    here.mkdir()
    (here / "old.txt").write_text("x")
    inode = here.stat().st_ino
    out = sagetui_in(here, "capture", "--out", ".", "--force", "--", "python", MODEL,
                     "--record", tmp_path / "r.json")
    assert out.returncode == 0, out.stderr
    assert here.stat().st_ino == inode and not (here / "old.txt").exists()
    assert len(load_workload(here).calls) == 8
    assert not any(p.name.startswith(".") for p in here.iterdir())


@pytest.mark.parametrize(("out", "needle"), [
    ("", "the capture's directory '' is empty"),
    ("/", "/ is the file system's root"),
    ("file/cap", "cannot write in or beside"),
])
def test_an_out_that_cannot_be_is_one_line(capsys, tmp_path, monkeypatch, out, needle):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "file").write_text("x")
    rc, _, err = _sagetui(capsys, "capture", "--out", out, "--", "python", MODEL)
    assert rc == 2 and len(err) == 1 and needle in err[0], err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


# --- 4. names as text, special files, absurd shapes -----------------------------------------

def test_module_paths_that_look_like_markup_print_as_they_are(cli, tmp_path):
    (tmp_path / "markup.py").write_text(MARKUP)
    assert cli("capture", "--out", "cap", "--", "python", "markup.py").returncode == 0
    out = cli("capture", "--verify", "cap")
    assert out.returncode == 0, out.stderr
    assert "heads.[bold red]x[/]" in out.stdout and "heads.a[0]" in out.stdout
    assert [c.module for c in load_workload(tmp_path / "cap").calls] == [
        "heads.[bold red]x[/]", "heads.a[0]"]


@pytest.mark.parametrize(("name", "line"), [
    ("call-000001.safetensors",
     "call 1 (call-000001.safetensors): not a regular file (a FIFO)"),
    ("manifest.json", "manifest.json: cannot read: not a regular file (a FIFO)"),
])
def test_a_fifo_in_a_capture_is_refused_without_blocking(cli, tmp_path, name, line):
    captured(tmp_path / "cap", steps=1)
    (tmp_path / "cap" / name).unlink()
    os.mkfifo(tmp_path / "cap" / name)
    out = cli("capture", "--verify", "cap", timeout=60)
    assert out.returncode == 2
    assert len(out.stderr.splitlines()) == 1 and line in out.stderr, out.stderr


def _header_file(path, shape, nbytes):
    header = json.dumps({"q": {"dtype": "BF16", "shape": shape,
                               "data_offsets": [0, nbytes]}}).encode()
    path.write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * nbytes)


@pytest.mark.parametrize(("shape", "nbytes", "problem"), [
    ([1] * 9, 2, "tensor 'q': shape [1, 1, 1, 1, 1, 1, 1, 1, 1] is no tensor's (at most 8 "),
    ([-1, -2], 4, "tensor 'q': shape [-1, -2] is no tensor's"),
    ([1 << 40, 1 << 40], 2, "tensor 'q': its bytes [0, 2) do not hold bfloat16"),
])
def test_absurd_shapes_are_one_line(capsys, tmp_path, shape, nbytes, problem):
    captured(tmp_path / "cap", steps=1)
    _header_file(tmp_path / "cap" / "call-000002.safetensors", shape, nbytes)
    rc, _, err = _sagetui(capsys, "capture", "--verify", tmp_path / "cap")
    assert rc == 2 and len(err) == 1 and problem in err[0], err


def test_a_manifest_shape_of_too_many_dimensions_is_one_line(capsys, tmp_path):
    captured(tmp_path / "cap", steps=1)
    m = json.loads((tmp_path / "cap" / "manifest.json").read_text())
    m["calls"][0]["tensors"]["q"]["shape"] = [1] * 40
    (tmp_path / "cap" / "manifest.json").write_text(json.dumps(m))
    rc, _, err = _sagetui(capsys, "capture", "--verify", tmp_path / "cap")
    assert rc == 2 and len(err) == 1 and "$.calls[0].tensors.q.shape" in err[0], err


# --- 6. what an unselected call costs --------------------------------------------------------

def test_a_calls_signature_and_module_path_are_made_once(tmp_path, monkeypatch):
    """12 calls from 4 modules: the full walk up the stack once per module, a signature once
    per module and way of calling; the counts as before."""
    walks, signatures = [], []
    of, signature = module_path.ModulePaths.of, recording._signature

    def counted_of(self, frame):
        walks.append(1)
        return of(self, frame)

    def counted_signature(*a):
        signatures.append(1)
        return signature(*a)

    monkeypatch.setattr(module_path.ModulePaths, "of", counted_of)
    monkeypatch.setattr(recording, "_signature", counted_signature)
    m, _, _ = captured(tmp_path / "cap", steps=3, calls="every:5")
    assert (len(walks), len(signatures)) == (4, 4)
    assert [(c.index, c.module, c.count) for c in m.calls] == [
        (0, "blocks.0.attn", 3), (5, "blocks.1.attn", 3), (10, "blocks.2.attn", 3)]


def test_calls_alike_given_differently_share_a_signature(tmp_path):
    q = torch.randn(1, 2, 4, 8)
    mask = torch.ones(4, 4, dtype=torch.bool)
    with sagetui.capture(tmp_path / "cap") as c:
        F.scaled_dot_product_attention(q, q, q, is_causal=True)
        F.scaled_dot_product_attention(q, q, q, None, 0.0, True)
        F.scaled_dot_product_attention(query=q, key=q, value=q, is_causal=True)
        F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
        F.scaled_dot_product_attention(q, q, q, mask.logical_not())  # another mask, alike
        F.scaled_dot_product_attention(q, q, q, attn_mask=mask.float())
    m = c.manifest
    assert m is not None
    assert [x.count for x in m.calls] == [3, 3, 3, 2, 2, 1]
    assert len({x.signature for x in m.calls}) == 3


def test_files_that_appear_in_out_while_the_program_runs_are_kept(cli, tmp_path):
    """DIR empty at the start (the staging inside it): a file the program puts there is never
    replaced; the capture goes beside, said in a line, exit 1."""
    (tmp_path / "cap").mkdir()
    (tmp_path / "writes.py").write_text(HYDRA.replace(
        "import os\n", "import os\nopen('cap/mine.txt', 'w').write('mine')\n"))
    out = cli("capture", "--out", "cap", "--", "python", "writes.py")
    assert out.returncode == 1
    assert out.stderr.splitlines() == ["cap appeared during the capture and is kept; wrote "
                                       "cap.1 beside it"]  # as DIR was typed
    assert [p.name for p in (tmp_path / "cap").iterdir()] == ["mine.txt"]
    assert len(load_workload(tmp_path / "cap.1").calls) == 1 and leftovers(tmp_path) == []
