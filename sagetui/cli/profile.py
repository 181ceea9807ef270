"""`sagetui profile`: the profile pass for each selected variant, as a report.

Shares of sampled warp time inside the fused main loop, from Nsight Compute; separate from
timing (no timed rounds run here). A failure is one line and exit 2.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console

from sagetui.cli.outputs import MakeText, check_outputs, write_files
from sagetui.cli.run_options import config_from_args, default_report_path
from sagetui.core.blocks.profile import MainloopProfile
from sagetui.core.build_facts import LeftOut
from sagetui.core.config import RunConfig
from sagetui.core.export.report import mainloop_markdown
from sagetui.core.profile.diff_view import diff_text
from sagetui.core.profile.failures import ProfileError
from sagetui.core.profile.markdown import mainloop_lines
from sagetui.core.report.io import iter_report_json
from sagetui.core.report.model import Report
from sagetui.core.run.assemble import profile_report, with_left_out
from sagetui.session.profile_pass import Pass, ProfileCancelled, Tools, profile_variant


def print_profiles(report: Report) -> None:
    """stdout: the profiles' Markdown block, then the diff as a text table."""
    print("\n".join(mainloop_lines(report.mainloop_profiles or [], report.baseline)))
    if report.mainloop_diff is not None:
        print(diff_text(report.mainloop_diff))


def _resolved(config: RunConfig) -> RunConfig:
    """The reference shape and best backend on a GPU when none was given (as `sagetui run`),
    and each variant's backend available here, before ncu starts."""
    from sagetui.core.config import resolve_auto
    from sagetui.session.probe import probe

    try:
        info = probe()
    except Exception as exc:
        raise ProfileError("probe", f"the runner could not start: {exc}") from None
    if config.auto or config.auto_shape:
        config = resolve_auto(config, info["device"], info["backends"])
    for v in config.variants:
        why = info.get("backends", {}).get(v.backend, "unknown backend")
        if why is not None:
            raise ProfileError("unavailable", f"{v.name}: {v.backend} cannot run here: {why}")
    return config


def cmd_profile(args: argparse.Namespace) -> int:
    build_failed: dict[str, LeftOut] = {}  # source variants whose build failed: not profiled
    config = config_from_args(args, build_failed=build_failed)
    if not args.json:
        args.json = default_report_path().replace("report", "profile")
    check_outputs(args, ("json", "markdown"))
    try:
        tools = Tools.find()
    except ProfileError as exc:
        print(f"sagetui profile: {exc}", file=sys.stderr)
        return 2
    try:
        config = _resolved(config)
    except ProfileError as exc:
        print(f"sagetui profile: {exc}", file=sys.stderr)
        return 2
    workdir = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="sagetui-ncu-"))
    workdir.mkdir(parents=True, exist_ok=True)
    say = (lambda _s: None) if args.quiet else (lambda s: print(s, file=sys.stderr))
    p = Pass(workdir=workdir, tools=tools, source_dirs=list(args.source_dir), progress=say)
    profiles: list[MainloopProfile] = []
    try:
        for spec in config.variants:
            t0 = time.monotonic()
            prof = profile_variant(config, spec, p)
            profiles.append(prof)
            say(f"{spec.name}: {prof.total_samples} samples, {prof.placed_share:.1%} placed in "
                f"named phases ({time.monotonic() - t0:.1f} s)")
    except ProfileError as exc:
        print(f"sagetui profile: {exc}", file=sys.stderr)
        return 2
    except (ProfileCancelled, KeyboardInterrupt):
        print("sagetui profile: cancelled", file=sys.stderr)
        return 130
    finally:
        if not args.keep:
            import shutil

            shutil.rmtree(workdir, ignore_errors=True)
    report = profile_report(config.model_dump(mode="json"), profiles, "complete",
                            environment=p.environment, baseline=config.baseline_name)
    report = with_left_out(report, build_failed)  # partial, saying which never ran
    if not args.quiet:
        print_profiles(report)
    outputs: list[tuple[str, MakeText]] = [(args.json, lambda: iter_report_json(report))]
    if args.markdown:
        outputs.append((args.markdown, lambda: mainloop_markdown(report)))
    written = write_files(outputs, args, Console(stderr=True, soft_wrap=True))
    for why in written.failed:
        print(f"sagetui profile: could not write {why}", file=sys.stderr)
    return 0 if report.status == "complete" and written.kept_all else 1
