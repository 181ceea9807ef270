"""sagetui/kernel_build on the CPU with real builds (no mocks): a tiny tree that looks like a
SageAttention checkout (build_tree.py) built by its own setup.py, cached, checked, rebuilt; and
the bad inputs refused with one line. What torch's BuildExtension and ninja print (the steps,
a compiler error) is tested on the tree's torch kind; the cache's workings on its plain kind."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sagetui.cli.main import main
from sagetui.kernel_build import cache, tools
from sagetui.kernel_build.builder import build, module_files, plan
from sagetui.kernel_build.errors import BuildFailed, BuildInputError
from sagetui.runner.variants import load_extension

from .build_tree import MODULE, set_qattn_source
from .conftest import TINY_ARCH

pytestmark = pytest.mark.skipif(shutil.which("c++") is None or shutil.which("ninja") is None,
                                reason="needs a C++ compiler and ninja")
ARCH = TINY_ARCH
_loaded = iter(range(10_000))


def answer(entry: str | Path, module: str = "_qattn_sm89") -> int:
    """The module's answer(), loaded by sagetui's own loader under a fresh name."""
    return int(load_extension(entry, module, f"t{next(_loaded)}").answer())


def build_temp(cache_root: Path, tree: Path) -> dict[str, int]:
    """The tree's build-temp (its objects), each file's modification time: a compiler that
    ran would change them."""
    temp = cache.tree_dir(cache_root, tree) / "build-temp"
    return {str(p.relative_to(temp)): p.stat().st_mtime_ns for p in temp.rglob("*")
            if p.is_file()}


@pytest.fixture
def built(tiny_build: tuple[Path, Path, object]) -> tuple[Path, Path, object]:
    """The tests' tree built once a session (conftest.tiny_build): (tree, cache root, facts)."""
    return tiny_build


def test_first_build_is_a_miss_and_its_modules_import(built) -> None:
    tree, root, facts = built
    assert not facts.cache_hit and facts.build_s > 0
    assert facts.modules == ["_qattn_sm89", "_fused"] and facts.arch == ARCH
    assert facts.nvcc_flags == "-lineinfo" and facts.source == str(tree.resolve())
    assert Path(facts.entry).parent == root
    assert set(module_files(facts)) == {"_qattn_sm89", "_fused"}
    assert answer(facts.entry) == 89 and answer(facts.entry, "_fused") == 1


def test_unchanged_tree_is_a_hit_without_a_compiler(built) -> None:
    tree, root, facts = built
    before = build_temp(root, tree)
    assert any(name.endswith(".o") for name in before)
    t0 = time.monotonic()
    again = build(plan(tree, "sage2-sm89", arch=ARCH), progress=pytest.fail, cache_root=root)
    assert time.monotonic() - t0 < 5
    assert again.cache_hit and again.key == facts.key and again.build_s == facts.build_s
    assert build_temp(root, tree) == before  # no compiler ran


def test_source_change_and_flag_change_rebuild(built, tmp_path: Path) -> None:
    tree, root, facts = built
    copy = shutil.copytree(tree, tmp_path / "tree")
    set_qattn_source(copy, MODULE.format(value=90))
    changed = build(plan(copy, "sage2-sm89", arch=ARCH), progress=lambda _: None,
                    cache_root=root)
    assert not changed.cache_hit and changed.key != facts.key
    assert changed.source_sha256 != facts.source_sha256
    assert answer(changed.entry) == 90
    flagged = build(plan(copy, "sage2-sm89", arch=ARCH, cxx_flags="-DBONUS=5"),
                    progress=lambda _: None, cache_root=root)
    assert not flagged.cache_hit and flagged.cxx_flags == "-DBONUS=5"
    assert answer(flagged.entry) == 95 and answer(flagged.entry, "_fused") == 6


def test_ninjas_steps_stream_each_named_by_its_extension(tmp_path: Path) -> None:
    """The real tree's path, torch's BuildExtension and ninja: the second build of a tree
    streams each step with the first's time as the estimate."""
    from .build_tree import write_tree

    tree, root = write_tree(tmp_path / "tree", torch=True), tmp_path / "cache"
    first = build(plan(tree, "sage2-sm89", arch=ARCH), progress=lambda _: None, cache_root=root)
    assert (cache.tree_dir(root, tree) / "build-temp" / ".ninja_log").is_file()
    lines: list[str] = []
    flagged = build(plan(tree, "sage2-sm89", arch=ARCH, cxx_flags="-DBONUS=5"),
                    progress=lines.append, cache_root=root)
    assert answer(first.entry) == 89 and answer(flagged.entry) == 94
    assert any("step " in ln and "last build" in ln for ln in lines)
    # ninja runs once per extension, each counting from step 1: every step is named apart
    # (not `step 1/1` twice), its extension with it
    steps = [ln.split("  ")[0] for ln in lines]
    assert len(steps) == len(set(steps)), steps
    assert {s.split(":")[0] for s in steps} == {"_qattn_sm89", "_fused"}, steps


@pytest.mark.parametrize("damage", ["truncate", "delete"])
def test_a_corrupted_entry_is_rebuilt(built, damage: str) -> None:
    tree, root, facts = built
    so = module_files(facts)["_qattn_sm89"]
    head = so.read_bytes()[:100]
    so.unlink()  # a new file, not the loaded one cut in place (its mapping would fault)
    if damage == "truncate":
        so.write_bytes(head)
    lines: list[str] = []
    again = build(plan(tree, "sage2-sm89", arch=ARCH), progress=lines.append, cache_root=root)
    assert not again.cache_hit and again.key == facts.key
    assert "corrupted" in lines[0] and ("modified" if damage == "truncate" else "missing") \
        in lines[0]
    assert answer(again.entry) == 89


def test_a_syntax_error_shows_the_compiler_lines_and_caches_nothing(
        built, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """As ninja shows it (the tree's torch kind); then the CLI's one block, from the plain
    kind's compiler."""
    from .build_tree import write_tree

    tree, root, _ = built
    bad = write_tree(tmp_path / "tree", torch=True)
    set_qattn_source(bad, "int answer() { return 89 }\n")
    with pytest.raises(BuildFailed) as caught:
        build(plan(bad, "sage2-sm89", arch=ARCH), progress=lambda _: None, cache_root=root)
    block = caught.value.block
    assert 0 < len(block) <= 20
    assert any("pybind_sm89.cpp" in ln and "error" in ln for ln in block)
    entries = [p for p in root.iterdir() if p.name not in ("trees",)]
    assert not any(p.name.startswith(".staging") for p in entries)
    assert all(cache.stale_reason(p, p.name) is None for p in entries)  # only whole ones
    # the CLI: one block, exit 1
    bad = shutil.copytree(tree, tmp_path / "plain")
    set_qattn_source(bad, "int answer() { return 89 }\n")
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        assert main(["build", str(bad), "--arch", ARCH, "--backend", "sage2-sm89"]) == 1
    err = capsys.readouterr().err
    assert "failed" in err and "error" in err and len(err.splitlines()) <= 22
    assert not any((tmp_path / "xdg" / "sagetui" / "builds").glob("[0-9a-f]*"))


def test_cli_build_prints_the_spec_and_says_the_arch(
        built, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    tree, root, facts = built
    monkeypatch.setenv("XDG_CACHE_HOME", str(root.parent / "xdg"))
    (root.parent / "xdg" / "sagetui").mkdir(parents=True, exist_ok=True)
    if not (root.parent / "xdg" / "sagetui" / "builds").exists():
        os.symlink(root, root.parent / "xdg" / "sagetui" / "builds")
    assert main(["build", str(tree), "--arch", ARCH]) == 0
    out, err = capsys.readouterr()
    backend, _, entry = out.strip().partition("@")
    assert backend == "sage2-sm89" and Path(entry).name == facts.key  # through the link
    assert "arch 8.9 (given by --arch)" in err and "cache hit" in err


# bad input: one line, exit 2, before any compiler runs


def _refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["build", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_not_a_tree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "not a SageAttention tree" in _refused(capsys, str(tmp_path), "--arch", ARCH)
    (tmp_path / "csrc").mkdir()
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup(name='x')\n")
    assert "declares no sageattention extension" in _refused(capsys, str(tmp_path))


def test_a_backend_the_tree_does_not_build(built, capsys: pytest.CaptureFixture[str]) -> None:
    tree, _, _ = built
    line = _refused(capsys, str(tree), "--backend", "sage2-sm90", "--arch", "9.0")
    assert "does not build _qattn_sm90" in line


def test_no_compiler_and_no_nvcc(tmp_path: Path) -> None:
    with pytest.raises(BuildInputError, match="no C\\+\\+ compiler: CXX=/nowhere/g"):
        tools.cxx_compiler({"CXX": "/nowhere/g++", "PATH": os.environ["PATH"]})
    with pytest.raises(BuildInputError, match="no C\\+\\+ compiler: c\\+\\+ on PATH"):
        tools.cxx_compiler({"PATH": ""})
    with pytest.raises(BuildInputError, match="no CUDA toolkit: nvcc is not on PATH"):
        tools.nvcc({"PATH": ""}, default_home=str(tmp_path / "cuda"))
    with pytest.raises(BuildInputError, match="no CUDA toolkit: .*bin/nvcc not found"):
        tools.nvcc({"PATH": "", "CUDA_HOME": str(tmp_path)})


def test_no_compiler_refuses_the_cli_with_one_line(
        built, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    tree, _, _ = built
    monkeypatch.setenv("CXX", "/nowhere/g++")
    assert "no C++ compiler" in _refused(capsys, str(tree), "--arch", ARCH)


@pytest.mark.parametrize(("listed", "ok"), [("9.0a", True), ("8.9", True), ("8.9;9.0", False),
                                            ("9.0+PTX", False), ("sm_90", False)])
def test_the_arch_list_takes_one_arch_with_or_without_its_a(listed: str, ok: bool) -> None:
    """CUDA images set TORCH_CUDA_ARCH_LIST=9.0a (the H200 machine does): one architecture."""
    from sagetui.kernel_build.tools import target_arch
    if ok:
        assert target_arch(None, {"TORCH_CUDA_ARCH_LIST": listed}) == (listed,
                                                                        "TORCH_CUDA_ARCH_LIST")
    else:
        with pytest.raises(BuildInputError, match="one architecture"):
            target_arch(None, {"TORCH_CUDA_ARCH_LIST": listed})


def test_no_gpu_and_no_arch_says_give_arch(built) -> None:
    tree, _, _ = built
    env = {k: v for k, v in os.environ.items() if k != "TORCH_CUDA_ARCH_LIST"}
    try:
        import torch
        if torch.cuda.is_available():
            pytest.skip("a GPU gives the arch")
    except ImportError:
        pass
    with pytest.raises(BuildInputError, match="give --arch"):
        plan(tree, "sage2-sm89", env=env)


# `backend@src:PATH` variants: built before a runner starts, their facts on the spec


def test_source_variants_resolve_to_their_builds_with_a_diff(
        built, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sagetui.cli.main import build_parser, run_config
    from sagetui.cli.run_options import config_from_args
    from sagetui.core.report.model import Variant
    from sagetui.core.run.assemble import _build_facts
    from sagetui.core.run.fold import new_model

    tree, root, facts = built
    mine = shutil.copytree(tree, tmp_path / "mine")
    (mine / "csrc" / "qattn" / "pybind_sm89.cpp").write_text(
        MODULE.format(value=89) + "// a comment\n// and another\n")
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", ARCH)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    (tmp_path / "xdg" / "sagetui").mkdir(parents=True)
    os.symlink(root, tmp_path / "xdg" / "sagetui" / "builds")
    argv = ["--variant", f"stock=sage2-sm89@src:{tree}", "--variant",
            f"mine=sage2-sm89@src:{mine}", "--baseline", "stock"]
    config = config_from_args(build_parser("run").parse_args(["run", *argv]))
    stock, ours = config.variants
    assert stock.build is not None and ours.build is not None
    assert stock.build.cache_hit and stock.build.key == facts.key
    assert Path(stock.path or "").name == facts.key and stock.source is None
    assert not ours.build.cache_hit and ours.build.source == str(mine.resolve())
    assert answer(ours.path or "") == 89
    diff = ours.build.diff_vs_baseline
    assert diff is not None and diff.baseline == "stock" and stock.build.diff_vs_baseline is None
    assert [(f.file, f.added, f.deleted) for f in diff.files] == [
        ("csrc/qattn/pybind_sm89.cpp", 2, 0)]
    # into the report's variant entry, and through its model
    entry = _build_facts(new_model(config), "mine")
    assert Variant.model_validate({"name": "mine", "build": entry}).build == ours.build
    assert "build" not in stock.model_copy(update={"build": None}).model_dump()
    # the console's run editor does not build (minutes in its thread): one line
    with pytest.raises(Exception, match="build its tree first"):
        run_config(argv)


def test_a_source_variant_of_a_non_tree_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--variant", f"x=sage2-sm89@src:{tmp_path}"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not a SageAttention tree" in err


# an entry is what was compiled; malformed entries, failures and archs in one line


def _keys_of(root: Path, source_sha256: str) -> list[str]:
    """The entries whose manifest says they were built from this source hash."""
    return [p.name for p in root.glob("[0-9a-f]*")
            if cache.read_manifest(p)["inputs"]["source_sha256"] == source_sha256]


def test_a_source_edited_during_the_build_leaves_no_entry_under_the_old_key(
        tmp_path: Path) -> None:
    """The cache-poisoning case: setup.py edits a source as the build starts (build_tree.HOOKS),
    the test puts it back after; the next build of the original tree must compile it, not load
    the edited code from an entry under the original's key."""
    from sagetui.kernel_build.tree import hash_sources

    from .build_tree import EDIT, write_tree

    tree, root = write_tree(tmp_path / "tree", hooks=True), tmp_path / "cache"
    original, _ = hash_sources(tree)
    (tree / EDIT).write_text(MODULE.format(value=90))
    lines: list[str] = []
    edited = build(plan(tree, "sage2-sm89", arch=ARCH), progress=lines.append, cache_root=root)
    said = [ln for ln in lines if "changed during the build" in ln]
    assert len(said) == 1 and said[0].startswith("csrc/qattn/pybind_sm89.cpp changed"), lines
    assert "no cache entry kept for key" in said[0]
    # what ran is the edited code, under the key of the edited tree; nothing under the original's
    assert edited.source_sha256 == hash_sources(tree)[0] != original
    assert answer(edited.entry) == 90 and _keys_of(root, original) == []
    set_qattn_source(tree, MODULE.format(value=89))  # the test puts it back
    again = build(plan(tree, "sage2-sm89", arch=ARCH), progress=lambda _: None,
                  cache_root=root)
    assert not again.cache_hit and again.source_sha256 == original
    assert answer(again.entry) == 89
    assert not list(root.glob(".staging-*"))


def test_a_source_written_during_the_build_but_left_as_it_was(tmp_path: Path) -> None:
    """Edited and put back within the build: the same hash after as before, yet the compiler
    read the edit, so no entry is kept from that build. And a setup.py that writes a source
    with the same text on every run: the second build reads what the first left, and its
    entry is kept under the edited tree's key (two builds, not a failure)."""
    from sagetui.kernel_build.tree import hash_sources

    from .build_tree import ALWAYS, EDIT, PUT_BACK, write_tree

    tree, root = write_tree(tmp_path / "tree", hooks=True), tmp_path / "cache"
    original, _ = hash_sources(tree)
    (tree / EDIT).write_text(MODULE.format(value=91))
    (tree / PUT_BACK).touch()
    lines: list[str] = []
    facts = build(plan(tree, "sage2-sm89", arch=ARCH), progress=lines.append, cache_root=root)
    assert len([ln for ln in lines if "changed during the build" in ln]) == 1, lines
    assert facts.source_sha256 == original and answer(facts.entry) == 89
    shutil.rmtree(facts.entry)  # a miss again, so that setup.py runs
    (tree / ALWAYS).write_text(MODULE.format(value=92))
    lines.clear()
    always = build(plan(tree, "sage2-sm89", arch=ARCH), progress=lines.append, cache_root=root)
    assert len([ln for ln in lines if "changed during the build" in ln]) == 1, lines
    assert always.source_sha256 == hash_sources(tree)[0] != original
    assert answer(always.entry) == 92 and _keys_of(root, original) == []
    assert not list(root.glob(".staging-*"))


def _damage(entry: Path, how: str) -> None:
    manifest = entry / "manifest.json"
    data = json.loads(manifest.read_text())
    if how == "manifest []":
        manifest.write_text("[]")
    elif how == "files a list":
        manifest.write_text(json.dumps({**data, "files": list(data["files"])}))
    elif how == "a module missing":
        data["files"] = {k: v for k, v in data["files"].items() if "_fused" not in k}
        manifest.write_text(json.dumps(data))
    elif how == "a file outside lib/":
        data["files"] = {"../../x.so": "0" * 64}
        manifest.write_text(json.dumps(data))
    elif how == "build_s a string":
        manifest.write_text(json.dumps({**data, "build_s": "soon"}))
    elif how == "manifest a folder":
        manifest.unlink()
        manifest.mkdir()
    elif how == "entry a file":
        shutil.rmtree(entry)
        entry.write_text("not a folder")


@pytest.mark.parametrize("how", ["manifest []", "files a list", "a module missing",
                                 "a file outside lib/", "build_s a string",
                                 "manifest a folder", "entry a file"])
def test_a_malformed_entry_is_rebuilt_with_one_line(built, how: str) -> None:
    tree, root, facts = built
    _damage(Path(facts.entry), how)
    lines: list[str] = []
    again = build(plan(tree, "sage2-sm89", arch=ARCH), progress=lines.append, cache_root=root)
    assert not again.cache_hit and again.key == facts.key
    said = [ln for ln in lines if "corrupted" in ln]
    assert len(said) == 1 and said[0].endswith(": rebuilding"), lines
    assert cache.stale_reason(Path(again.entry), again.key, again.modules) is None
    assert answer(again.entry) == 89 and answer(again.entry, "_fused") == 1


def test_a_setup_py_that_fails_silently_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """setup.py exits 3 (the driver's own status for an undeclared module) and prints nothing:
    the failure still has a reason, never an empty one."""
    from .build_tree import write_tree

    tree = write_tree(tmp_path / "tree")
    (tree / "setup.py").write_text("# sageattention._qattn_sm89, sageattention._fused\n"
                                   "import sys\nsys.exit(3)\n")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert main(["build", str(tree), "--arch", ARCH, "--backend", "sage2-sm89"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith("failed: setup.py exited with status 3 and printed nothing"), err
    assert not list((tmp_path / "xdg" / "sagetui" / "builds").glob(".staging-*"))


def test_an_arch_the_toolkit_does_not_know_is_refused(
        built, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    tree, _, _ = built
    line = _refused(capsys, str(tree), "--arch", "99.9")
    assert line.startswith("sagetui: --arch 99.9: not an architecture this CUDA toolkit builds ") \
        or "--arch 99.9: not an architecture this CUDA toolkit builds for" in line
    assert "8.9" in line  # the list it knows
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "99.9")
    assert "TORCH_CUDA_ARCH_LIST=99.9: not an architecture" in _refused(capsys, str(tree))
    # an nvcc that cannot list its architectures (older than CUDA 11): the documented table
    old = tmp_path / "nvcc"
    old.write_text("#!/bin/sh\necho 'nvcc fatal : Unknown option' >&2\nexit 1\n")
    old.chmod(0o755)
    archs, how = tools.known_archs(str(old))
    assert archs == tools.KNOWN_ARCHS and "CUDA 11.0 to 13.0" in how
    with pytest.raises(BuildInputError, match="--arch 99.9: not an architecture"):
        tools.target_arch("99.9", {}, str(old))
    assert tools.target_arch("9.0a", {}, str(old)) == ("9.0a", "--arch")


def test_a_file_where_a_cache_folder_belongs_is_replaced_saying_so(tmp_path: Path) -> None:
    (tmp_path / "trees").write_text("not a folder")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    lines: list[str] = []
    for name in ("trees", "dangling"):
        assert cache.folder(tmp_path / name, lines.append).is_dir()
    assert lines == [f"{tmp_path / 'trees'} was not a folder: removed",
                     f"{tmp_path / 'dangling'} was not a folder: removed"]
    assert cache.folder(tmp_path / "trees", pytest.fail).is_dir()  # a folder: nothing said
    (tmp_path / "last_build.json").write_text("[]")
    assert cache.last_build_s(tmp_path) is None


def test_a_cache_hit_sweeps_the_staging_of_gone_processes_only(built) -> None:
    tree, root, facts = built
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead = root / f".staging-{facts.key}-{int(gone.stdout)}"  # its process has ended
    live = root / f".staging-{facts.key}-{os.getppid()}"  # a process still there
    (dead / "lib").mkdir(parents=True)
    live.mkdir()
    lines: list[str] = []
    again = build(plan(tree, "sage2-sm89", arch=ARCH), progress=lines.append, cache_root=root)
    assert again.cache_hit
    assert lines == [f"removed 1 staging folder left in {root} by a build whose sagetui is gone "
                     f"(pid {int(gone.stdout)})"]
    assert not dead.exists() and live.is_dir()
    live.rmdir()
