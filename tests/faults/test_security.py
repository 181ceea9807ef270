"""Opening a report never runs code: no pickle, no eval, and a report's variant paths are never
loaded by check, compare or view; tensor input files load without pickle."""

from __future__ import annotations

import builtins
import json
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from .conftest import ROOT, SAMPLE_000, SAMPLE_001, build_so, env, needs_gcc, tiny_config

CONSTRUCTOR = """
#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void loaded(void) {
    int fd = open("%s", O_CREAT | O_WRONLY, 0644);
    if (fd >= 0) close(fd);
}
int PyInit__qattn_sm89(void) { return 0; }
"""


@pytest.fixture
def trap(tmp_path) -> tuple[Path, Path]:
    """A .so that creates `marker` the moment anything loads it, and proof that it does."""
    marker = tmp_path / "LOADED"
    so = build_so(tmp_path, "_qattn_sm89", CONSTRUCTOR % marker)
    subprocess.run([sys.executable, "-c", f"import ctypes; ctypes.CDLL({str(so)!r})"], check=True)
    assert marker.exists()  # the trap works
    marker.unlink()
    return so, marker


def _report_naming(so: Path, fresh: dict) -> dict:
    d = json.loads(json.dumps(fresh))
    for v in d["variants"]:
        v["path"], v["spec"] = str(so), f"sage2-sm89@{so}"
    for v in d["config"]["variants"]:
        v["backend"], v["path"] = "sage2-sm89", str(so)
    d["metadata"] = {"note": "__import__('os').system('touch /tmp/x')", "pickle": "gASVAAAA"}
    return d


# Everything that runs code from data, poisoned once the commands have run (so that their
# lazy imports, which use exec and marshal, are done): any later call fails the test.
def poison(warm: list[Path]) -> str:
    return WARM % [str(p) for p in warm] + POISON


WARM = """
import builtins, ctypes, importlib.util, io, marshal, os, pickle, subprocess, sys, _imp
from contextlib import redirect_stdout
from sagetui.cli.main import main, build_parser
from sagetui.cli.console import view_reports
from sagetui.tui.source import saved_source
with redirect_stdout(io.StringIO()):
    for warm in %r:
        main(["check", warm])
        main(["compare", warm, warm])
        for path, report in view_reports(build_parser().parse_args(["view", warm])):
            saved_source(report, "warm.json", path=path)
"""
POISON = """

def trap(name):
    def called(*a, **k):
        sys.stderr.write("CALLED " + name + "\\n")
        os._exit(99)
    return called

for where, obj, name in [
        ("builtins", builtins, "eval"), ("builtins", builtins, "exec"),
        ("builtins", builtins, "compile"), ("pickle", pickle, "loads"),
        ("pickle", pickle, "load"), ("pickle", pickle, "Unpickler"),
        ("marshal", marshal, "loads"), ("ctypes", ctypes, "CDLL"),
        ("ctypes.cdll", ctypes.cdll, "LoadLibrary"), ("os", os, "system"),
        ("subprocess", subprocess, "Popen"), ("_imp", _imp, "create_dynamic"),
        ("importlib.util", importlib.util, "spec_from_file_location")]:
    setattr(obj, name, trap(where + "." + name))
"""


@needs_gcc
def test_check_compare_and_view_never_load_a_reports_variant(trap, tmp_path, fresh_report):
    so, marker = trap
    evil = tmp_path / "evil.json"
    evil.write_text(json.dumps(_report_naming(so, fresh_report)))
    good = tmp_path / "good.json"
    good.write_text(json.dumps(fresh_report))
    code = poison([SAMPLE_001, good]) + f"""
# --force: 001 and this run differ in shape, and the table must be built all the same
rcs = [main(["check", {str(evil)!r}]),
       main(["compare", "--force", {str(SAMPLE_001)!r}, {str(evil)!r}])]
for path, report in view_reports(build_parser().parse_args(["view", {str(evil)!r}])):
    saved_source(report, "evil.json", path=path)
print("RCS", rcs)
"""
    p = subprocess.run([sys.executable, "-c", code], env=env(), capture_output=True, text=True,
                       timeout=120, cwd=ROOT)
    assert "CALLED" not in p.stderr and p.returncode == 0, p.stderr
    # check finds the edit (its variants' spec no longer what its configuration ran), and
    # loads nothing to say so; compare builds its table all the same
    assert "RCS [1, 0]" in p.stdout
    assert not marker.exists()


def test_reading_reports_never_unpickles_or_evaluates(tmp_path):
    """The reference reports through every reading command, with the poison in place (warmed
    with both: each report's own lazy imports are done before the poison)."""
    code = poison([SAMPLE_000, SAMPLE_001]) + f"""
rcs = [main(["check", {str(SAMPLE_000)!r}, {str(SAMPLE_001)!r}]),
       main(["compare", {str(SAMPLE_000)!r}, {str(SAMPLE_001)!r}])]
print("RCS", rcs)
"""
    p = subprocess.run([sys.executable, "-c", code], env=env(), capture_output=True, text=True,
                       timeout=120, cwd=ROOT)
    assert "CALLED" not in p.stderr and "RCS [0, 0]" in p.stdout, p.stdout + p.stderr


class Evil:
    """Unpickling this creates a file: the proof that pickle code ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (builtins.open, (self.marker, "w"))


def _evil_files(tmp_path: Path, marker: Path) -> dict[str, Path]:
    import torch

    out = {}
    obj = np.empty(3, dtype=object)
    obj[:] = [Evil(marker), 1, 2]
    out["npy"] = tmp_path / "evil.npy"
    np.save(out["npy"], obj, allow_pickle=True)
    out["npz"] = tmp_path / "evil.npz"
    np.savez(out["npz"], q=obj, k=np.zeros(3), v=np.zeros(3))
    out["pt"] = tmp_path / "evil.pt"
    torch.save({"q": Evil(marker), "k": torch.zeros(1), "v": torch.zeros(1)}, out["pt"])
    out["pickle_as_pt"] = tmp_path / "plain_pickle.pt"
    out["pickle_as_pt"].write_bytes(pickle.dumps({"q": Evil(marker)}))
    return out


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_tensor_files_holding_pickles_are_refused_without_running_them(tmp_path):
    from sagetui.runner.inputs import InputError, from_file

    marker = tmp_path / "UNPICKLED"
    files = _evil_files(tmp_path, marker)
    pickle.loads(pickle.dumps(Evil(marker))).close()  # the objects really run code...
    assert marker.exists()
    marker.unlink()
    config = tiny_config("a=reference")
    for kind, path in files.items():
        with pytest.raises(InputError) as info:
            from_file(str(path), config, "cpu")
        msg = str(info.value)
        assert msg.startswith(f"{path}: holds pickled Python objects"), (kind, msg)
        assert "\n" not in msg and "\x1b" not in msg
        assert not marker.exists(), kind  # ...but never here


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_the_clis_shape_check_runs_nothing_an_inputs_file_names(tmp_path):
    """`sagetui run --inputs` reads the shapes before a runner starts: torch.save's pickle
    for its tensors' sizes alone, every other global refused; the runner then says why."""
    from sagetui.core.capture.inputs_file import stored_shapes

    marker = tmp_path / "UNPICKLED"
    for kind, path in _evil_files(tmp_path, marker).items():
        assert stored_shapes(path) is None, kind
        assert not marker.exists(), kind


def test_plain_tensor_files_load(tmp_path):
    """The control: the same formats with numbers only load, and a bad shape is named."""
    import torch

    from sagetui.runner.inputs import InputError, from_file

    config = tiny_config("a=reference")
    shape = config.shape.tensor_shapes()["q_shape"]
    qkv = np.random.default_rng(0).standard_normal([3, *shape]).astype(np.float32)
    np.save(tmp_path / "ok.npy", qkv)
    torch.save({n: torch.from_numpy(qkv[i]) for i, n in enumerate("qkv")}, tmp_path / "ok.pt")
    for name in ("ok.npy", "ok.pt"):
        q, k, v = from_file(str(tmp_path / name), config, "cpu")
        assert list(q.shape) == shape and q.dtype == torch.bfloat16
    np.save(tmp_path / "short.npy", qkv[:, :, :100])
    with pytest.raises(InputError, match=r"short.npy: q has shape \[1, 100, 2, 64\], the "
                                         r"configuration says \[1, 256, 2, 64\]"):
        from_file(str(tmp_path / "short.npy"), config, "cpu")


def test_a_run_with_a_pickled_inputs_file_stops_with_the_reason(tmp_path):
    marker = tmp_path / "UNPICKLED"
    path = _evil_files(tmp_path, marker)["pt"]
    p = subprocess.run([sys.executable, "-m", "sagetui", "run", "--heads", "2", "--q-len", "256",
                        "--head-dim", "64", "--warmup", "1", "--rounds", "1", "--iterations", "2",
                        "--inputs", str(path), "--json", "r.json", "--recovery-dir", "rec"],
                       cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=120)
    assert p.returncode == 1
    assert f"InputError: {path}: holds pickled Python objects" in p.stderr
    assert not marker.exists()
