"""Profiling from the console: `p` profiles the selected variant, `P` every enabled one, each
call once under Nsight Compute (session/profile_pass.py) in a thread worker, and only between
runs: ncu replays the kernel, so it never runs beside timed rounds. Its steps go to the log;
the same key again cancels. The profiles join the live source and its final report, so the
panel shows them and the exports carry them; the run's rounds and samples are never touched."""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sagetui.core import events as ev
from sagetui.core.blocks.profile import MainloopProfile
from sagetui.core.config import RunConfig, VariantSpec
from sagetui.core.run.assemble import with_profiles
from sagetui.core.run.fold import apply

if TYPE_CHECKING:
    from textual.app import App

    from sagetui.tui.run_control import RunControl

# (config, variant, the pass) -> its profile: session.profile_pass.profile_variant, or a stand-in
Profiler = Callable[[RunConfig, VariantSpec, Any], MainloopProfile]


class ProfileFlow:
    def __init__(self, app: App[int], run_control: RunControl, *,
                 profile: Profiler | None = None, tools: Callable[[], Any] | None = None) -> None:
        self.app, self.rc = app, run_control
        self.profile, self.tools = profile, tools  # None: the real pass and the real tools
        self.cancel: threading.Event | None = None  # set while a pass runs

    def start(self, which: str, selected: str | None) -> None:
        """which: "selected" or "all" (the enabled variants)."""
        rc = self.rc
        if self.cancel is not None:
            self.cancel.set()
            rc.log("profile: cancelling (the tool running now is stopped)", "warning")
            return
        cfg = rc.between_runs("nothing to profile",
                              "Stop the run first (r): a profile never runs beside timed rounds.")
        if cfg is None or rc.live is None:
            return
        enabled = {n for n in rc.live.variants if rc.live.is_enabled(n)}
        specs = [v for v in cfg.variants
                 if (v.name == selected if which == "selected" else v.name in enabled)]
        if not specs:
            self.app.notify("No variant to profile.", severity="warning")
            return
        self.cancel = threading.Event()
        rc.log(f"profile: {', '.join(s.name for s in specs)} under Nsight Compute, one call "
               f"each at {cfg.shape.describe()} (p again cancels)")
        self.app.run_worker(partial(self._work, cfg, specs, self.cancel), group="profile",
                            thread=True, exit_on_error=False)

    def _work(self, cfg: RunConfig, specs: list[VariantSpec], cancel: threading.Event) -> None:
        from sagetui.core.profile.failures import ProfileError
        from sagetui.session.profile_pass import Pass, ProfileCancelled, Tools, profile_variant

        def say(text: str, severity: str = "information") -> None:
            self.app.call_from_thread(self.rc.log, f"profile: {text}", severity)

        done: list[MainloopProfile] = []
        try:
            tools = (self.tools or Tools.find)()
            with tempfile.TemporaryDirectory(prefix="sagetui-ncu-") as work:
                p = Pass(workdir=Path(work), tools=tools, progress=say, cancel=cancel)
                for spec in specs:
                    prof = (self.profile or profile_variant)(cfg, spec, p)
                    done.append(prof)
                    say(f"{spec.name}: {prof.total_samples} samples, {prof.placed_share:.1%} "
                        "placed in named phases")
        except ProfileCancelled:
            say(f"cancelled; {len(done)} profile{'s' * (len(done) != 1)} kept", "warning")
        except ProfileError as exc:
            say(str(exc), "error")
        finally:
            self.app.call_from_thread(self._done, done)

    def _done(self, profiles: list[MainloopProfile]) -> None:
        self.cancel = None
        data = self.rc.live
        if not profiles or data is None:
            return
        names = {p.variant for p in profiles}
        # the console's own addition to the live model (the session's run has ended): the
        # next run's model starts without them; the finished run's exports carry them
        apply(data.model, ev.ProfilesAdded(profiles=profiles))
        self.rc.profiles = list(data.model.profiles)
        data.touch()
        report = self.rc.final_report
        if report is not None:
            self.rc.final_report = with_profiles(report, data.model.profiles)
        self.app.notify(f"Profiled {', '.join(sorted(names))}: the Scheduler tab's main-loop "
                        "panel shows the shares.")
