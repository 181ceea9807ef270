"""The Session: one benchmark run from spawn to report (runner_session.py), then, after the
timed rounds and never inside them, the late figures (late.py: accuracy, the baseline's
decomposed phases against its public API, the inputs' sha256) and the tail study (points.py);
a stopped run can resume."""

from __future__ import annotations

from sagetui.core import events as ev
from sagetui.core.report.model import Report
from sagetui.session.errors import NotRunnable, SetupFailed
from sagetui.session.faults import gone_fault
from sagetui.session.late import late_figures
from sagetui.session.points import tail_study
from sagetui.session.runner_client import RunnerFault
from sagetui.session.runner_session import OnEvent, RunnerSession

__all__ = ["NotRunnable", "OnEvent", "Session", "SetupFailed"]


class Session(RunnerSession):
    def resume(self) -> Report:
        """Go on with a stopped run (blocking): its completed rounds are kept, the round it
        was stopped in is measured again, and rounds go on to the planned number."""
        self._cancel.clear()
        self.stopped_by = None
        self._resumed = True
        self.emit(ev.Resumed())
        self._autosaver = self._new_autosaver()  # the last one was drained with its run
        return self.run()

    def _post_run(self) -> None:
        """The verdicts are final: the late figures (the baseline's decomposition among
        them), then the tail study."""
        m = self.model
        base = m.baseline if m.baseline in m.active() else next(iter(m.active()), None)
        try:
            late_figures(self, decompose=base)
            if base is not None and self.config.tail_study and not self.cancelled:
                tail_study(self, base)  # a sweep of the tail plan's shapes
        except RunnerFault as f:
            self._record(gone_fault(f.gone, base, None))
