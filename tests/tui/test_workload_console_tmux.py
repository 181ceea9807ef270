"""A capture replayed in the console (`sagetui --workload DIR`, then r), in a real terminal: its
header once read "✓ COMPLETE 0/2 rounds" with "telemetry: after the first round" under it, and
its Verdicts panel "-" for a variant the Variants panel called SLOWER. Each call runs rounds of
its own: the header counts the calls, and the verdicts are the totals' in both panels."""

from __future__ import annotations

import re
from pathlib import Path

from sagetui.core.report.io import load_report
from sagetui.core.workload import export

from ..conftest import REPLAYED_CALLS
from .test_e2e_tmux import (  # noqa: F401  (pytestmark: tmux needed, e2e, loaded)
    RUN_S,
    Tmux,
    pytestmark,
)

WORDS = r"(FASTER|SLOWER|SAME|INCONCLUSIVE)"


def test_a_replay_in_the_console_counts_its_calls_and_its_panels_agree(
        tmp_path: Path, replayed_workload: Path) -> None:
    cap = replayed_workload.parent / "cap"
    tmux = Tmux("workload")
    tmux.start_console(tmp_path, f"--workload {cap} --rounds 2 --iterations 2 --warmup 1 "
                       "--variant ref=reference --variant 'slow=reference[slowdown=1.3]' "
                       f"--recovery-dir {tmp_path / 'recovery'}", size=(160, 48))
    try:
        tmux.wait_ready()
        tmux.keys("8")  # before the replay, the Sweep tab says what r does here
        tmux.wait_for(f"r replays the capture's {REPLAYED_CALLS} calls in turn,")
        tmux.keys("1")
        tmux.wait_for("Verdicts")
        tmux.keys("r")
        screen = tmux.wait_for("✓ COMPLETE", timeout=RUN_S)
        screen = tmux.wait_for("e/c/m/s export it")  # the notice: the run's end is drawn
        tmux.keys("e")  # its baseline is its block's: no word of another one
        tmux.wait_for("Export the report JSON to:")
        tmux.keys("Enter")
        tmux.wait_for("Wrote the report JSON")
    finally:
        tmux("kill-server")
    assert f"✓ COMPLETE  {REPLAYED_CALLS}/{REPLAYED_CALLS} calls" in screen
    assert f"Run complete: {REPLAYED_CALLS}/{REPLAYED_CALLS} calls." in screen
    assert "rounds" not in screen.splitlines()[2]
    assert "telemetry: after the first round" not in screen
    (path,) = tmp_path.glob("*.json")  # the report exported
    wl = load_report(path).workload
    assert wl is not None
    total = next(t for t in wl.totals if t.variant == "slow")
    word = export.total_word(wl, total.ci_low_percent, total.ci_high_percent)
    row = next(line for line in screen.splitlines() if re.search(r"\[x\]\s+slow\b", line))
    variants, verdicts = row.split("││")
    assert re.findall(WORDS, variants) == [word], row  # the Variants panel's total
    assert re.findall(WORDS, verdicts) == [word], row  # the Verdicts panel agrees
    assert f"{total.speedup_percent:+.2f}" in verdicts
