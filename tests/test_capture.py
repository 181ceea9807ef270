"""Capturing a program's attention calls (`sagetui capture`, `sagetui.capture`) and loading
them back (core/capture/loaded.load_workload, runner/captured_call.load_call): a small
transformer (tests/capture_model.py) run for real, its files checked against what the model
itself recorded it passed, on the CPU."""

import json
import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import sagetui
from sagetui.core.capture.loaded import load_workload
from sagetui.core.capture.manifest import Manifest
from sagetui.core.capture.outcome import CaptureError
from sagetui.core.capture.selection import Selection, parse_size
from sagetui.core.format import size
from sagetui.runner.captured_call import load_call

from .capture_model import run, sha256
from .conftest import ROOT

MODEL = Path(__file__).with_name("capture_model.py")
BLOCKS = [f"blocks.{i}.attn" for i in range(4)]
CALL_BYTES = [3072, 3072, 2048, 3072]  # q, k, v of each block's call (GQA: k and v halved)


@contextmanager
def one_thread():
    """As the script runs: one thread, the same sums in the same order, the same bytes."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)


def captured(directory, steps=3, **options):
    """The model's `steps` passes inside `sagetui.capture(directory, **options)`."""
    with one_thread(), sagetui.capture(directory, **options) as c:
        model, out = run(steps)
    return c.manifest, model, out


def leftovers(tmp_path, name="cap"):
    """Staging directories left beside a capture (there must be none)."""
    return [p.name for p in tmp_path.iterdir() if p.name.startswith(f".{name}.")]


# --- the command: a real script in a child process ------------------------------------------

def test_capture_of_a_script_saves_exactly_what_the_model_passed(cli, tmp_path):
    out = cli("capture", "--out", "cap", "--calls", "0-7", "--", sys.executable, MODEL,
              "--steps", "3", "--record", "rec.json")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ("captured 8 of the program's 12 attention calls (4 distinct, "
                                  "22.0 KiB) into cap")
    assert out.stderr == "" and leftovers(tmp_path) == []
    own = json.loads((tmp_path / "rec.json").read_text())  # what the model says it passed
    w = load_workload(tmp_path / "cap")  # every file checked against the manifest
    m = w.manifest
    assert (m.calls_seen, m.calls_selected, len(w.calls)) == (12, 8, 8)
    assert m.argv == [str(MODEL), "--steps", "3", "--record", "rec.json"]
    assert m.settings.calls == "0-7" and m.settings.max_bytes == 4 << 30
    assert (m.device, m.torch) == ("cpu", torch.__version__)
    for call, mine in zip(w.calls, own["calls"], strict=False):
        assert call.module == mine["module"]
        assert {n: call.facts.tensors[n].sha256 for n in "qkv"} == {n: mine[n] for n in "qkv"}
    assert [c.module for c in w.calls] == BLOCKS * 2
    assert {c.weight for c in w.calls} == {3}  # each block's call, once a pass
    assert len({c.facts.signature for c in w.calls}) == 4
    f = [c.facts for c in w.calls[:4]]
    assert [(x.is_causal, x.mask, x.gqa, x.scale) for x in f] == [
        (True, "causal", False, None), (False, "none", False, None),
        (False, "none", True, None), (True, "causal", False, 0.25)]
    assert {(x.layout, x.dtype, x.module_root) for x in f} == {("HND", "bfloat16", "Tiny")}
    assert f[2].tensors["k"].shape == [1, 2, 16, 8]
    # the tensors load as the model passed them, and its output was the same without capture
    gqa = load_call(w.calls[2])
    assert (sha256(gqa.q), sha256(gqa.k), sha256(gqa.v)) == tuple(own["calls"][2][n]
                                                                  for n in "qkv")
    with one_thread():
        _, plain = run(3)
    assert own["output"] == sha256(plain)


@pytest.mark.parametrize(("words", "line"), [
    (["--out", "cap", "--", "python", "fail.py"],
     "sagetui: error: the program failed with exit status 3; nothing was captured"),
    (["--out", "cap", "--calls", "module:nomatch*", "--", "python", str(MODEL), "--record",
      "r.json"],
     "sagetui: error: no call matched --calls module:nomatch*: the program made 8 calls"),
])
def test_a_failing_program_or_no_match_keeps_nothing(cli, tmp_path, words, line):
    (tmp_path / "fail.py").write_text("import sys\nprint('working')\nsys.exit(3)\n")
    out = cli("capture", *words)
    assert out.returncode == 2
    assert out.stderr.splitlines() == [line]
    assert not (tmp_path / "cap").exists() and leftovers(tmp_path) == []


def test_a_module_run_with_a_budget_keeps_what_fit_and_says_so(cli, tmp_path):
    """`python -m`, and --max-bytes cutting the capture short: exit 0, one line on stderr."""
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT),
                                                       os.environ.get("PYTHONPATH")]))}
    out = cli("capture", "--out", "cap", "--max-bytes", "7000", "--", "python", "-m",
              "tests.capture_model", "--record", "rec.json", env=env)
    assert out.returncode == 0, out.stderr
    assert out.stderr.splitlines() == [
        "sagetui capture: call 2 (2.0 KiB) would pass --max-bytes 6.8 KiB with 6.0 KiB saved: "
        "saving stopped there, 2 calls kept; the program ran to its end"]
    m = load_workload(tmp_path / "cap").manifest
    assert [c.index for c in m.calls] == [0, 1] and m.calls_seen == 8  # it ran to its end
    assert m.budget_cut is not None and m.budget_cut.index == 2
    assert m.argv == ["-m", "tests.capture_model", "--record", "rec.json"]
    assert (tmp_path / "rec.json").is_file()


def _sagetui(capsys, *words):
    """`sagetui ...` in this process: (exit status, stdout, stderr lines)."""
    from sagetui.cli.main import main

    try:
        rc = main([str(w) for w in words])
    except SystemExit as exc:  # argparse's own refusals
        rc = exc.code
    out = capsys.readouterr()
    return rc, out.out, out.err.splitlines()


@pytest.mark.parametrize(("words", "needle"), [
    (["--out", "cap"], "no program given: sagetui capture --out DIR -- python SCRIPT"),
    (["--", "python", MODEL], "--out DIR is required"),
    (["--out", "cap", "--calls", "3-1", "--", "python", MODEL], "--calls '3-1': the range"),
    (["--out", "cap", "--calls", "every:0", "--", "python", MODEL], "every:N takes"),
    (["--out", "cap", "--calls", "blocks.*", "--", "python", MODEL],
     "--calls 'blocks.*' is not a selection: give indices and ranges (0,3,5-9), every:N"),
    (["--out", "cap", "--calls", "", "--", "python", MODEL], "--calls '' is empty"),
    (["--out", "cap", "--max-calls", "0", "--", "python", MODEL], "--max-calls: '0'"),
    (["--out", "cap", "--max-bytes", "12Q", "--", "python", MODEL],
     "--max-bytes: '12Q' is not a size"),
    (["--out", "cap", "--", "torchrun", "x.py"], "the program must be Python"),
    (["--out", "cap", "--", "python"], "no script or module to run"),
    (["--out", "cap", "--", "python", "-u", "x.py"], "interpreter option '-u'"),
    (["--out", "cap", "--", "python", "nosuch.py"], "script nosuch.py does not exist"),
    (["--out", "full", "--", "python", MODEL], "full exists and is not empty (--force"),
    (["--out", "file", "--", "python", MODEL], "file exists and is not a directory"),
    (["--verify", "cap", "--", "python", MODEL], "--verify DIR checks a capture"),
    (["--verify", "nosuch"], "nosuch: no such directory"),
    (["--verify", "full"], "full: no manifest.json (not a capture)"),
])
def test_bad_input_is_one_line_and_exit_2_with_nothing_left(capsys, tmp_path, monkeypatch,
                                                            words, needle):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    (tmp_path / "file").write_text("x")
    rc, out, err = _sagetui(capsys, "capture", *words)
    assert rc == 2 and len(err) == 1 and needle in err[0], err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "full"]


# --- checking a capture against its files ----------------------------------------------------

def test_verify_lists_the_calls_and_how_each_runs(capsys, tmp_path):
    captured(tmp_path / "cap", steps=1)
    rc, out, err = _sagetui(capsys, "capture", "--verify", tmp_path / "cap")
    assert rc == 0 and err == []
    assert out.splitlines()[0].endswith("4 of 4 calls saved, 11.0 KiB, torch "
                                        f"{torch.__version__}, cpu; every file matches the "
                                        "manifest (shape, dtype, sha256)")
    assert "blocks.2.attn" in out and "1x16x4/2kvx8 bf16 HND" in out
    first = tmp_path / "cap" / "call-000000.safetensors"
    assert out.splitlines()[-1] == (
        "each call's file runs on its own at its shape, e.g. sagetui run --heads 4 --q-len 16 "
        f"--head-dim 8 --causal --layout HND --inputs {first}")


def _flip_last_byte(d):
    p = d / "call-000001.safetensors"
    raw = bytearray(p.read_bytes())
    raw[-1] ^= 1
    p.write_bytes(bytes(raw))


def _drop_k(d):
    from safetensors.torch import load_file, save_file

    p = str(d / "call-000003.safetensors")
    t = load_file(p)
    save_file({"q": t["q"], "v": t["v"]}, p)


def _edit_manifest(change):
    def edit(d):
        m = json.loads((d / "manifest.json").read_text())
        change(m)
        (d / "manifest.json").write_text(json.dumps(m))
    return edit


def _as_fp16(m):
    m["calls"][0]["dtype"] = m["calls"][0]["tensors"]["q"]["dtype"] = "float16"


@pytest.mark.parametrize(("tamper", "problem"), [
    (_flip_last_byte, "call 1 (call-000001.safetensors): v's bytes have sha256 "),
    (lambda d: (d / "call-000002.safetensors").unlink(),
     "call 2 (call-000002.safetensors): no such file"),
    (_drop_k, "call 3 (call-000003.safetensors): no tensor 'k' in the file"),
    (_edit_manifest(lambda m: m["calls"][1]["tensors"]["q"].update(shape=[1, 4, 8, 16])),
     "call 1 (call-000001.safetensors): q is bfloat16 [1, 4, 16, 8] in the file; the manifest "
     "says bfloat16 [1, 4, 8, 16]"),
    (_edit_manifest(_as_fp16), "call 0 (call-000000.safetensors): q is bfloat16 [1, 4, 16, 8] "
                               "in the file; the manifest says float16 [1, 4, 16, 8]"),
    (_edit_manifest(lambda m: m["calls"][0].update(count=0)),
     "manifest.json: $.calls[0].count: Input should be greater than or equal to 1"),
    (lambda d: (d / "call-000000.safetensors").write_bytes(b"\x00" * 4),
     "call 0 (call-000000.safetensors): too short for a safetensors file"),
])
def test_a_capture_unlike_its_files_is_one_line_naming_the_call(capsys, tmp_path, tamper,
                                                                 problem):
    captured(tmp_path / "cap", steps=1)
    tamper(tmp_path / "cap")
    rc, out, err = _sagetui(capsys, "capture", "--verify", tmp_path / "cap")
    assert rc == 2 and len(err) == 1 and problem in err[0], err


# --- the context manager -------------------------------------------------------------------

def test_context_manager_leaves_the_model_alone_and_saves_what_it_passed(tmp_path):
    sdpa = F.scaled_dot_product_attention
    with one_thread():
        _, plain = run(2)
    m, model, out = captured(tmp_path / "cap", steps=2)
    assert sha256(out) == sha256(plain)  # byte for byte what the model gives without capture
    assert F.scaled_dot_product_attention is sdpa  # the original is back
    assert isinstance(m, Manifest) and (m.calls_seen, len(m.calls)) == (8, 8)
    assert m.argv == sys.argv and m.settings.max_bytes is None
    own = model.attention_log()
    assert [c.module for c in m.calls] == [x["module"] for x in own] == BLOCKS * 2
    assert [c.tensors["q"].sha256 for c in m.calls] == [x["q"] for x in own]
    assert [c.nbytes for c in m.calls] == CALL_BYTES * 2 and m.bytes_saved == 2 * 11264
    assert leftovers(tmp_path) == []


def test_a_saved_call_runs_as_sagetui_run_inputs(tmp_path):
    """A call's file is an inputs file of `sagetui run`: WorkloadCall.run_argv is the command
    line, and the runner loads the very tensors the program passed."""
    from sagetui.cli.main import run_config
    from sagetui.core.config import Shape
    from sagetui.runner.inputs import from_file

    captured(tmp_path / "cap", steps=1)
    w = load_workload(tmp_path / "cap")
    call = w.calls[2]
    assert call.shape == Shape(batch=1, heads=4, kv_heads=2, q_len=16, head_dim=8,
                               dtype="bf16", layout="HND", causal=False)
    config = run_config(call.run_argv() or [])
    assert config.shape == call.shape and config.inputs_path == str(call.file)
    q, k, v = from_file(str(call.file), config, "cpu")
    mine = load_call(call)
    assert all(torch.equal(a, b) for a, b in ((q, mine.q), (k, mine.k), (v, mine.v)))


@pytest.mark.parametrize(("options", "saved", "selected"), [
    ({"calls": "every:4"}, [0, 4, 8], 3),
    ({"calls": "module:blocks.2.*"}, [2, 6, 10], 3),
    ({"calls": "1,module:blocks.3.attn"}, [1, 3, 7, 11], 4),
    ({"calls": "5-6,every:10,6"}, [0, 5, 6, 10], 4),
    ({"max_calls": 2}, [0, 1], 12),
    ({"calls": "module:blocks.*", "max_calls": 5}, [0, 1, 2, 3, 4], 12),
])
def test_selection(tmp_path, options, saved, selected):
    m, _, _ = captured(tmp_path / "cap", **options)
    assert [c.index for c in m.calls] == saved
    assert (m.calls_selected, m.calls_seen) == (selected, 12)
    assert {c.count for c in m.calls} == {3}
    assert sorted(p.name for p in (tmp_path / "cap").iterdir()) == sorted(
        [c.file for c in m.calls] + ["manifest.json"])


def test_the_budget_stops_saving_and_the_program_runs_on(tmp_path, capsys):
    m, _, _ = captured(tmp_path / "cap", max_bytes="7000")
    assert [c.index for c in m.calls] == [0, 1] and m.calls_seen == 12
    assert m.budget_cut is not None and m.budget_cut.model_dump() == dict(
        index=2, call_bytes=2048, saved_bytes=6144, max_bytes=7000)
    assert len(capsys.readouterr().err.splitlines()) == 1
    with pytest.raises(CaptureError, match=r"^call 0 alone \(3.0 KiB\) passes --max-bytes "
                                           r"1000 B; nothing was captured$"):
        captured(tmp_path / "small", max_bytes=1000)
    assert not (tmp_path / "small").exists() and leftovers(tmp_path, "small") == []


@pytest.mark.parametrize(("options", "message"), [
    ({"calls": "x"}, "--calls 'x' is not a selection"),
    ({"calls": "module:nomatch"}, "no call matched --calls module:nomatch: the program made 4"),
    ({"max_calls": 0}, "max_calls is 0: give a whole number >= 1"),
    ({"max_bytes": "lots"}, "'lots' is not a size"),
    ({"calls": 3}, "calls is 3: give a selection as text"),
])
def test_context_manager_refusals_keep_nothing(tmp_path, options, message):
    with pytest.raises(CaptureError, match=message):
        captured(tmp_path / "cap", steps=1, **options)
    assert not (tmp_path / "cap").exists() and leftovers(tmp_path) == []


def test_an_exception_in_the_block_keeps_nothing_and_unwraps(tmp_path):
    sdpa = F.scaled_dot_product_attention
    with pytest.raises(RuntimeError, match="the program's own"):
        with sagetui.capture(tmp_path / "cap"):
            run(1)
            raise RuntimeError("the program's own")
    assert F.scaled_dot_product_attention is sdpa
    assert not (tmp_path / "cap").exists() and leftovers(tmp_path) == []


def test_force_replaces_a_capture(tmp_path):
    captured(tmp_path / "cap", steps=1)
    with pytest.raises(CaptureError, match="exists and is not empty"):
        captured(tmp_path / "cap", steps=1)
    m, _, _ = captured(tmp_path / "cap", steps=2, calls="4-7", force=True)
    assert [c.file for c in m.calls] == [f"call-00000{i}.safetensors" for i in range(4, 8)]
    assert len(load_workload(tmp_path / "cap").calls) == 4 and leftovers(tmp_path) == []


def test_a_directory_filled_while_the_program_ran_is_kept_and_the_capture_goes_beside(
        tmp_path, capsys):
    """Issue 28: DIR was free at the start; files put in it during the run (here by the block
    itself, as another program would) are kept, the capture goes to DIR.1, one line says so."""
    out = tmp_path / "cap"
    with one_thread(), sagetui.capture(out) as c:
        run(1)
        out.mkdir()
        (out / "theirs.txt").write_text("kept")
    assert c.directory == tmp_path / "cap.1" and (out / "theirs.txt").read_text() == "kept"
    assert len(load_workload(c.directory).calls) == 4 and leftovers(tmp_path) == []
    assert f"{out} appeared during the capture and is kept; wrote {c.directory} beside it" in \
        capsys.readouterr().err.splitlines()


def test_the_command_keeps_a_directory_filled_while_the_program_ran(cli, tmp_path):
    program = tmp_path / "fills.py"
    program.write_text("import os, runpy, sys\n"
                       "os.makedirs('cap'); open('cap/theirs.txt', 'w').write('kept')\n"
                       f"sys.argv = [{str(MODEL)!r}, '--steps', '1', '--record', 'r.json']\n"
                       f"runpy.run_path({str(MODEL)!r}, run_name='__main__')\n")
    out = cli("capture", "--out", "cap", "--", sys.executable, program)
    assert out.returncode == 1, out.stderr
    assert out.stderr.splitlines() == [
        "cap appeared during the capture and is kept; wrote cap.1 beside it"]
    assert out.stdout.strip().endswith("into cap.1")
    assert (tmp_path / "cap" / "theirs.txt").read_text() == "kept"
    assert len(load_workload(tmp_path / "cap.1").calls) == 4 and leftovers(tmp_path) == []


# --- SageAttention: wrapped where the program imports it ------------------------------------

STAND_IN = '''"""A stand-in for SageAttention's public API (its kernels need CUDA): the same
signatures, torch's SDPA inside."""
import torch
import torch.nn.functional as F

__version__ = "0.0+stand-in"


def sageattn(q, k, v, tensor_layout="HND", is_causal=False, sm_scale=None, return_lse=False,
             **kwargs):
    if tensor_layout == "NHD":
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    o = F.scaled_dot_product_attention(q, k, v, is_causal=is_causal, scale=sm_scale)
    return o.transpose(1, 2) if tensor_layout == "NHD" else o


def sageattn_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                    is_causal=False, sm_scale=None, smooth_k=True, **kwargs):
    out = []
    for i in range(len(cu_seqlens_q) - 1):
        a, b, c, d = cu_seqlens_q[i], cu_seqlens_q[i + 1], cu_seqlens_k[i], cu_seqlens_k[i + 1]
        out.append(sageattn(q[None, a:b], k[None, c:d], v[None, c:d], "NHD", is_causal)[0])
    return torch.cat(out)
'''


def test_sageattention_is_wrapped_when_the_program_imports_it(tmp_path, monkeypatch):
    (tmp_path / "site" / "sageattention").mkdir(parents=True)
    (tmp_path / "site" / "sageattention" / "__init__.py").write_text(STAND_IN)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "sageattention", raising=False)  # a real one comes back
    meta_path = list(sys.meta_path)
    q = torch.randn(2, 8, 4, 16, dtype=torch.float16)  # NHD
    packed = torch.randn(12, 4, 16, dtype=torch.float16)
    cu = torch.tensor([0, 5, 12], dtype=torch.int32)
    try:
        with sagetui.capture(tmp_path / "cap") as c:
            import sageattention  # imported after the capture began: the import hook wraps it

            got = sageattention.sageattn(q, q, q, tensor_layout="NHD", sm_scale=0.5)
            sageattention.sageattn_varlen(packed, packed, packed, cu, cu, 7, 7, is_causal=True)
        assert sys.meta_path == meta_path  # the hook is gone
        assert not hasattr(sageattention.sageattn, "__wrapped__")  # the original is back
        assert torch.equal(got, sageattention.sageattn(q, q, q, tensor_layout="NHD",
                                                       sm_scale=0.5))
        with sagetui.capture(tmp_path / "again"):  # already imported: wrapped at once
            sageattention.sageattn(q, q, q)
    finally:
        sys.modules.pop("sageattention", None)
    m = c.manifest
    assert m is not None and m.sageattention == "0.0+stand-in"
    # the stand-in's own calls inside (SDPA, sageattn in varlen) are not the program's
    assert [(x.function, x.layout, x.scale, x.is_causal, x.module) for x in m.calls] == [
        ("sageattention.sageattn", "NHD", 0.5, False, None),
        ("sageattention.sageattn_varlen", "NHD", None, True, None)]
    w = load_workload(tmp_path / "cap")
    assert w.calls[0].shape is not None and w.calls[0].shape.describe() == "2x8x4x16 fp16 NHD"
    # a varlen call replays as packed sequences, its lengths read from its cu_seqlens
    assert w.calls[1].shape is not None and w.calls[1].shape.seqlens == (5, 7)
    assert w.calls[1].shape.describe() == "1x12x4x16 2 packed fp16 NHD causal"
    assert w.calls[1].facts.varlen is not None and w.calls[1].facts.varlen.max_seqlen_q == 7
    from safetensors import safe_open

    with safe_open(str(w.calls[1].file), "pt") as f:  # the file alone says how it was called
        assert f.metadata() == {"function": "sageattention.sageattn_varlen", "layout": "NHD",
                                "is_causal": "True", "max_seqlen_q": "7", "max_seqlen_k": "7"}
    varlen = load_call(w.calls[1])
    assert varlen.cu_seqlens_q is not None and torch.equal(varlen.cu_seqlens_q, cu)
    assert torch.equal(varlen.q, packed)
    again = load_workload(tmp_path / "again").manifest.calls
    assert [(x.function, x.layout) for x in again] == [("sageattention.sageattn", "HND")]


# --- the pieces ----------------------------------------------------------------------------

def test_selection_syntax():
    s = Selection.parse(" 0, 3 ,5-9,every:4,module:blocks.*.attn")
    assert [i for i in range(14) if s.matches(i, None)] == [0, 3, 4, 5, 6, 7, 8, 9, 12]
    assert s.matches(13, "blocks.24.attn") and not s.matches(13, "blocks.24.mlp")
    assert not s.matches(13, "Blocks.1.attn")  # case counts, as in module names
    assert Selection.parse(None).matches(10**6, None)
    for bad in ("-1", "1-", "every:", "every:x", "module:", "mod:x", "1,,2", "3-2"):
        with pytest.raises(ValueError, match="--calls"):
            Selection.parse(bad)


def test_sizes():
    assert [parse_size(t) for t in ("1000", "500M", "2G", "1.5GiB", "4kb", "1T")] == [
        1000, 500 << 20, 2 << 30, 3 << 29, 4096, 1 << 40]
    for bad in ("", "0", "12Q", "-1M", "M"):
        with pytest.raises(ValueError):
            parse_size(bad)
    assert [size(n) for n in (0, 1023, 1024, 1536, 22528, 5 << 30)] == [
        "0 B", "1023 B", "1.0 KiB", "1.5 KiB", "22.0 KiB", "5.0 GiB"]


def test_schema_file_is_the_generated_one():
    kept = json.loads((ROOT / "sagetui" / "core" / "capture" / "schema.json").read_text())
    assert kept == Manifest.model_json_schema(), (
        "regenerate it: sagetui schema capture > sagetui/core/capture/schema.json")


def test_import_sagetui_stays_light():
    """`import sagetui` and the capture command's module load no torch: the context manager
    brings it in when first asked for."""
    code = ("import sys, sagetui, sagetui.cli.capture; light = 'torch' not in sys.modules; "
            "sagetui.capture; print(light, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.split() == ["True", "True"], out.stderr
