"""How a capture ends, in the same words for `sagetui capture` and `with sagetui.capture(...)`:
why a finished program's capture is refused (nothing is kept), the note when the byte budget
cut it short, and the summary line."""

from __future__ import annotations

from sagetui.core.capture.manifest import Manifest
from sagetui.core.format import size

# what the recorder leaves in the capture's directory, in place of the manifest, when the
# capture failed while the program ran (the line to print)
FAILED = "capture-failed.txt"


class CaptureError(ValueError):
    """A capture refused or failed, nothing kept; str() is the one line to print."""


def refusal(m: Manifest) -> str | None:
    """Why nothing is kept, or None: the capture stands."""
    if m.calls_seen == 0:
        forked = f" ({forked_note(m)})" if m.forked_calls else ""
        return ("the program made no attention call (torch's scaled_dot_product_attention or "
                f"sageattention's){forked}; nothing was captured")
    if m.calls_selected == 0:
        return f"no call matched --calls {m.settings.calls}: the program made {m.calls_seen} calls"
    if not m.calls and m.budget_cut is not None:
        cut = m.budget_cut
        return (f"call {cut.index} alone ({size(cut.call_bytes)}) passes --max-bytes "
                f"{size(cut.max_bytes)}; nothing was captured")
    return None


def budget_note(m: Manifest) -> str | None:
    cut = m.budget_cut
    if cut is None:
        return None
    return (f"sagetui capture: call {cut.index} ({size(cut.call_bytes)}) would pass --max-bytes "
            f"{size(cut.max_bytes)} with {size(cut.saved_bytes)} saved: saving stopped there, "
            f"{len(m.calls)} calls kept; the program ran to its end")


def forked_note(m: Manifest) -> str | None:
    """The manifest's count of calls in forked processes, in words."""
    if not m.forked_calls:
        return None
    n = len(m.forked_pids)
    return (f"{m.forked_calls} calls in forked processes, not recorded ({n} "
            f"process{'es' * (n != 1)}: a capture records the program's own process)")


def notes(m: Manifest) -> list[str]:
    """The lines (stderr) beside the summary: the budget's cut, the forked processes' calls."""
    forked = forked_note(m)
    return [x for x in (budget_note(m), forked and f"sagetui capture: {forked}") if x]


def summary(m: Manifest, where: str) -> str:
    kinds = len({c.signature for c in m.calls})
    return (f"captured {len(m.calls)} of the program's {m.calls_seen} attention calls "
            f"({kinds} distinct, {size(m.bytes_saved)}) into {where}")
