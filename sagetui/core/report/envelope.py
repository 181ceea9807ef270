"""The envelope every report kind carries, assembled here once: the schema version, the tool,
when it was made (one format), how it ended (status and why) and the environment it ran in.
A run's, a sweep's, a workload's, a swap's and a profile's report each put their own block
inside it (core/run, core/sweep, core/workload, core/swap assemble them; cli renders them)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sagetui.core.version import VERSION

# 2: mainloop_profiles (core/blocks/profile.py), the `sweep` block (core/blocks/sweep.py),
#    accuracy, provenance and peaks per variant
# 3: one run model (core/run/): each variant's own kernel, scheduler grid, options as they ran,
#    intervals, rounds asked and the round it failed in; status_detail. The top-level
#    scheduler, phase_timings and achieved are a report's made elsewhere (the phase-breakdown
#    and two-build reports): sagetui writes them per variant only.
# 4: accuracy per query head (per_head, worst_heads), the `inputs` block (a synthetic
#    distribution and its parameters, or the file), a variant's `dispatch` (sage2-auto) and
#    `build` (a variant built from a source tree: core/build_facts.py), the `workload` block:
#    an older sagetui refuses such a report as newer instead of tripping on unknown fields
# 5: a variant's `kernel_facts` (core/kernel_facts.py) and `sol` (speed of light per phase,
#    core/sol.py), the GPU's copy bandwidth in the environment, `mainloop_diff` and each
#    profile's stall shares (core/profile/diff.py), the lse's error with return_lse, packed
#    sequences (`seqlens`) in the shape
# 6: one envelope for every kind (this module): a swap report's schema version, created_utc
#    in one format (a profile's wrote "Z"), status and environment always; a variant's host,
#    GPU and back-to-back times of the call the user makes (`timed_call`, `call_gpu_s`:
#    core/host_time.py), no longer of the instrumented decomposition
# 7: a variant's and a point's `host_share` (its host time over its GPU time:
#    core/host_time.py), which `check` recomputes; a swap process records what it ran
#    (ProcessResult.ran: each arm with its backend's spec)
# 8: a workload's `order` (its calls taken in turn, round by round: session/workload.py)
SCHEMA_VERSION = 8
ONE_ENVELOPE_FROM = 6  # the first schema whose created_utc has the one format

TOOL = "sagetui"


def created_now() -> str:
    """Now, as every report writes `created_utc`: ISO 8601 to the second, "+00:00"."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def created_format_ok(created: str) -> bool:
    """`created_utc` as created_now writes it (a report before ONE_ENVELOPE_FROM may end in
    "Z")."""
    try:
        at = dt.datetime.fromisoformat(created)
    except ValueError:
        return False
    return at.utcoffset() == dt.timedelta(0) and at.isoformat(timespec="seconds") == created


def envelope(*, created_utc: str | None, status: str, environment: dict[str, Any] | None,
             status_detail: list[str] | None = None) -> dict[str, Any]:
    """The envelope's fields, as JSON values, for a report of any kind."""
    return {"schema_version": SCHEMA_VERSION, "tool": {"name": TOOL, "version": VERSION},
            "created_utc": created_utc or created_now(), "status": status,
            "status_detail": status_detail or None, "environment": environment or {}}
