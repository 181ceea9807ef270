"""`--arch` on the commands that build a `backend@src:PATH` variant's tree before they run it
(run, sweep, profile, the console), as `sagetui build` takes it: on this CPU machine there is
no GPU to take the architecture from, and "give --arch" must be advice a user can follow.
Real builds of the tests' tiny tree (conftest's tiny_build, its cache seeded: the key holds
the arch, so a hit is a build for that arch) and real runner processes."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import pytest

from sagetui.core.report.io import load_report

from .conftest import TINY_ARCH, seed_build_cache

needs_compiler = pytest.mark.skipif(shutil.which("c++") is None or shutil.which("ninja") is None,
                                    reason="needs a C++ compiler and ninja")
SMALL = ["--heads", "2", "--head-dim", "32", "--device", "cpu", "--warmup", "1", "--rounds", "2",
         "--iterations", "2", "--quiet"]


@pytest.fixture
def no_gpu_arch(tiny_build, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """No TORCH_CUDA_ARCH_LIST (the CPU has no GPU to ask): only --arch names the arch. The
    tiny tree's build in this test's own cache."""
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU gives the arch")
    monkeypatch.delenv("TORCH_CUDA_ARCH_LIST", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    seed_build_cache(tiny_build, tmp_path / "xdg")
    return tiny_build


def _variants(tree: Path) -> list[str]:
    return ["--variant", "ref=reference", "--variant", f"s=sage2-sm89@src:{tree}"]


@needs_compiler
def test_run_without_arch_says_give_arch_and_run_takes_it(no_gpu_arch, cli_here) -> None:
    tree, _, facts = no_gpu_arch
    refused = cli_here("run", *_variants(tree), *SMALL, "--json", "r.json")
    assert refused.returncode == 2 and "give --arch (e.g. --arch 9.0)" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    out = cli_here("run", "--arch", TINY_ARCH, *_variants(tree), "--q-len", "64", *SMALL,
                   "--json", "r.json")
    assert "unrecognized arguments" not in out.stderr
    assert f"for arch {TINY_ARCH} (given by --arch)" in out.stderr
    # the runner has no sm89 here: the built variant fails to start, the run is partial
    assert out.returncode == 1, out.stderr
    built = load_report(Path("r.json")).variant("s")
    assert built is not None and built.build is not None
    assert (built.build.arch, built.build.arch_from) == (TINY_ARCH, "--arch")
    assert built.build.key == facts.key  # the tiny tree's build for that arch


@needs_compiler
def test_sweep_and_profile_take_arch(no_gpu_arch, cli_here) -> None:
    tree = no_gpu_arch[0]
    sweep = cli_here("sweep", "--arch", TINY_ARCH, *_variants(tree), "--q-len", "64", *SMALL,
                     "--json", "sweep.json")
    assert f"for arch {TINY_ARCH} (given by --arch)" in sweep.stderr, sweep.stderr
    point = load_report(Path("sweep.json")).sweep.points[0]  # type: ignore[union-attr]
    assert [v.name for v in point.variants] == ["ref", "s"]
    # profile builds before it looks for Nsight Compute (absent here: one line, exit 2)
    profile = cli_here("profile", "--arch", TINY_ARCH, *_variants(tree), "--q-len", "64",
                       "--device", "cpu", "--json", "p.json")
    assert "unrecognized arguments" not in profile.stderr
    assert f"for arch {TINY_ARCH} (given by --arch)" in profile.stderr, profile.stderr


@needs_compiler
def test_the_console_takes_arch_for_its_builds(no_gpu_arch) -> None:
    from sagetui.cli.console import console_app
    from sagetui.cli.errors import UsageError
    from sagetui.cli.main import build_parser, run_config

    tree = no_gpu_arch[0]
    with pytest.raises(UsageError, match="give --arch"):
        console_app(build_parser("").parse_args(_variants(tree)), run_config)
    app = console_app(build_parser("").parse_args(["--arch", TINY_ARCH, *_variants(tree)]),
                      run_config)
    assert app.sources_flow.arch == TINY_ARCH  # what its build worker plans with


def test_arch_without_a_source_variant_is_one_line(cli_here) -> None:
    out = cli_here("run", "--arch", "9.0", "--backend", "reference")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert "no variant here is built from a tree" in out.stderr


def test_build_and_run_share_the_option() -> None:
    from sagetui.cli.main import build_parser

    def arch_action(command: str) -> argparse.Action:
        parser = build_parser(command)
        if command:
            sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
            parser = sub.choices[command]
        return next(a for a in parser._actions if "--arch" in a.option_strings)

    actions = [arch_action(c) for c in ("build", "run", "sweep", "profile", "")]
    assert len({(a.help, a.metavar, a.default) for a in actions}) == 1
