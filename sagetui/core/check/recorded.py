"""What `sagetui check` cannot re-derive from a report, defined once: the raw samples (what
everything else is recomputed from) and the recorded facts (a clock reading, the environment, a
hash the runner took, the configuration asked for...), which `check` lists as "taken as
recorded" and counts. Every other leaf of a report is a derived figure or word that `check`
recomputes; the mutation benchmark (benchmarks/check_mutation.py) changes each of those in turn
and counts how many `check` catches.

A rule is a regular expression over a leaf's JSON path ("$.variants[0].timing.p50_s") and the
reason it is taken as recorded. Rules that hold only in some reports (a summary whose samples
the report does not keep) say so with a condition on the report's JSON.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

Json = dict[str, Any]

# a point of a sweep or of a workload (the replayed call): the two blocks share SweepPoint
POINT = r"\.(?:sweep|workload)\.points\[\d+\]"
# the raw per-iteration seconds: a run's samples[variant][phase][round][i], a point's
# variants[j].samples[phase][round][i]
RAW_SAMPLES = re.compile(rf"^\$({POINT}\.variants\[\d+\])?\.samples\.")

_V = r"^\$\.variants\[\d+\]"
_P = rf"^\${POINT}"
# a variant's result (blocks/result.py): a run's or a point's
_R = rf"^\$({POINT})?\.variants\[\d+\]"
_SUMMARY = r"\.(count|mean_s|p50_s|p90_s|p95_s|p99_s|min_s|max_s)$"


@dataclass(frozen=True)
class Recorded:
    path: str
    why: str


def _no_samples(data: Json, path: str) -> bool:
    """A summary of a variant whose raw samples the report does not keep (the two-build report's,
    and every summary of a report made elsewhere)."""
    m = re.match(r"^\$\.variants\[(\d+)\]", path)
    if m is None:
        return not data.get("samples")
    v = data["variants"][int(m[1])]
    return not (data.get("samples") or {}).get(v.get("name"))


def _per_head(data: Json, path: str) -> bool:
    m = re.match(r"^\$\.variants\[(\d+)\]", path)
    return m is not None and bool((data["variants"][int(m[1])].get("accuracy") or {})
                                   .get("per_head"))


def _unmeasured_call(data: Json, path: str) -> bool:
    """A call to replay that has no point: the replay stopped before it."""
    wl = data.get("workload") or {}
    call = wl["calls"][int(path.split("[")[1].split("]")[0])]
    return call.get("point") is not None and \
        call["point"] not in {p.get("index") for p in wl.get("points") or []}


Rule = tuple[re.Pattern[str], str, Callable[[Json, str], bool] | None]


def _rule(pattern: str, why: str, when: Callable[[Json, str], bool] | None = None) -> Rule:
    return re.compile(pattern), why, when


RULES: list[Rule] = [
    _rule(r"^\$\.(schema_version|created_utc|source_commit)$", "the report's envelope"),
    _rule(r"^\$\.tool\.", "the report's envelope"),
    _rule(r"^\$\.environment\.", "the machine it ran on, as the runner and the host said"),
    _rule(r"^\$\.config\.", "the configuration asked for"),
    _rule(r"^\$\.metadata\.", "the workload's own facts, as given"),
    _rule(r"sha256$", "a hash the runner took"),
    _rule(r"\.provenance\.", "the build's files as the runner found them"),
    _rule(r"\.telemetry\[\d+\]\.", "NVML's readings during the round"),
    _rule(r"^\$\.faults\[\d+\]\.", "what went wrong, as it was seen"),
    _rule(_P + r"\.faults\[\d+\]\.", "what went wrong, as it was seen"),
    _rule(r"^\$\.schedule\[\d+\]\.(round|half|variant)$", "the interleaving that ran"),
    _rule(_V + r"\.(checksum|max_abs_diff|mean_abs_diff)$", "the runner's reading of the output"),
    _rule(r"^\$\.manual_decomposition_vs_public_sage2\.(max_abs|mean_abs)$",
          "the runner's comparison of the outputs"),
    _rule(r"^\$\.tail_study\[\d+\]\.checksum$", "the runner's reading of the output"),
    _rule(_P + r"\.variants\[\d+\]\.checksum$", "the runner's reading of the output"),
    _rule(_P + r"\.variants\[\d+\]\.accuracy\.(max_abs_diff|mean_abs_diff)$",
          "the runner's comparison of the outputs"),
    _rule(_P + r"\.(elapsed_s)$", "a clock reading"),
    _rule(_P + r"\.measured_on\.", "the runner that measured it"),
    _rule(r"\.profile_wall_s$", "a clock reading"),
    _rule(r"^\$\.sweep\.axes\.", "the sweep's axes, as asked"),
    _rule(r"^\$\.workload\.order$", "the order the session measured the calls in"),
    _rule(r"^\$\.workload\.calls_seen$", "the program's attention calls, as the capture counted "
          "them (its manifest)"),
    _rule(r"^\$\.workload\.calls\[\d+\]\.scale$", "the program's own softmax scale, as captured"),
    _rule(r"^\$\.workload\.calls\[\d+\]\.(index|count)$", "the call's place among the program's "
          "calls and how often it made it, as the capture's manifest says"),
    _rule(r"^\$\.workload\.points\[\d+\]\.shape\.", "the call's shape, as captured (its call's "
          "entry is held to it)"),
    _rule(r"^\$\.workload\.calls\[\d+\]\.shape\.", "the call's shape, as the capture's manifest "
          "gives it (the replay stopped before it: no point holds it)",
          lambda d, p: _unmeasured_call(d, p)),
    _rule(_V + r"\.deterministic$", "the runner's hashes of every block's output"),
    _rule(_V + r"\.accuracy\.per_head\[\d+\]\.(max_abs_error|elements)$",
          "the runner's measurement of the head's output (a max is no sum)"),
    _rule(_V + r"\.accuracy\.per_head\[\d+\]\.sums\.", "the runner's sums of the head's output"),
    _rule(_V + r"\.accuracy\.(cosine_similarity|relative_l1|rmse|max_abs_error|elements)$",
          "the runner's measurement of the output (no per-head sums kept)",
          lambda d, p: not _per_head(d, p)),
    _rule(_V + r"\.accuracy\.lse_max_abs_error$", "the runner's measurement of the lse"),
    _rule(r"\.noise_floor_percent$", "the calibration's measurement (an A/A run before it)"),
    _rule(r"^\$\.mainloop_profiles\[\d+\]\..*\.(samples|instructions_executed)$",
          "Nsight Compute's counts"),
    _rule(r"^\$\.mainloop_profiles\[\d+\]\.hot_lines\[\d+\]\.line$",
          "the source line Nsight Compute placed the samples on"),
    _rule(r"^\$\.mainloop_profiles\[\d+\]\.(line_info|sampling_interval)$",
          "the build and the profiler's settings, as found"),
    _rule(r"^\$\.([qkv]_shape\[\d+\]|warmup)$", "the run's shape and warm-up, as the report "
          "made elsewhere gives them", lambda d, p: "tool" not in d),
    _rule(r"^\$\.scheduler\.(explicit_pipeline_stages|cta_q|cta_k|warp_q|warp_k)$",
          "the kernel's tile configuration, as the report made elsewhere gives it",
          lambda d, p: "tool" not in d),
    _rule(_P + r"\.variants\[\d+\]\.accuracy\.(cosine_similarity|relative_l1|rmse|"
          r"max_abs_error|worst_head|worst_head_relative_l1)$",
          "the runner's measurement of the output (a point keeps no sums)"),
    _rule(_P + r"\.scheduler\.(sm_count|ctas_per_sm)$", "the GPU's, as the runner said"),
    _rule(_V + r"\.achieved\.peak_tops$", "the datasheet peak as recorded (a report before "
          "the per-type peaks names no peak types to look it up by)",
          lambda d, p: "peak" not in d["variants"][int(p.split("[")[1].split("]")[0])]),
    _rule(r"^\$\.achieved\.peak_tops$", "the datasheet peak as recorded (a report before the "
          "per-type peaks)", lambda d, p: not any("peak" in v for v in d.get("variants") or [])),
    _rule(rf"^\$({POINT})?\.variants\[\d+\]\.(host_times_s|back_to_back_times_s|call_gpu_times_s)"
          r"\[\d+\]$", "the runner's per-block clock readings (host_s, back_to_back_s and "
          "call_gpu_s are recomputed from them)"),
    _rule(rf"^\$({POINT})?\.variants\[\d+\]\.(redone_blocks|drained_blocks)$",
          "the runner's count of the blocks it redid or drained"),
    _rule(_R + r"\.peak_memory_bytes$", "the CUDA allocator's peak, as the runner read it"),
    _rule(_R + r"\.first_call_s$", "the runner's clock around the variant's first call"),
    _rule(_R + r"\.load_s$", "the runner's clock around the variant's load"),
    _rule(r"^\$(\.sweep\.points\[\d+\])?\.variants\[\d+\]\.timed_call$",
          "the call the runner timed, as it named it"),
    _rule(_V + r"\.kernel_facts\.kernel\.", "the kernel's resources, as cuobjdump read them "
          "from the module (the occupancy is recomputed from them)"),
    _rule(_V + r"\.build\.(build_s|cache_hit)$", "the build's clock reading and the cache, as "
          "the runner found them"),
    _rule(_V + r"\.dispatch\.options\.", "the options sage2-auto dispatched to, as the runner "
          "saw them"),
    _rule(r"^\$\.swap\.(output_)?processes\[\d+\]\.", "the process's own measurements, "
          "outputs' sums and NVML telemetry, as it reported them (every figure is recomputed "
          "from them)"),
    _rule(r"^\$\.swap\.replay\.totals_s\.", "the replay's totals (the replay's report holds "
          "their samples)"),
    _rule(r"^\$\.swap\.(rounds_asked|threshold_percent|mode)$", "the swap asked for"),
    _rule(r"^\$\.swap\.interleave\.", "the swap asked for"),
    _rule(r"^\$\.swap\.stopped_by$", "the signal the swap saw, as it saw it"),
    # a summary of samples the report does not keep: what its neighbours cannot fix
    _rule(r"\.(rounds\[\d+\]|phase_timings\.[^.]+)\.(min_s|mean_s|p50_s)$",
          "a summary of samples the report does not keep", _no_samples),
    _rule(_V + r"\.timing\.(p50_s|p90_s|p95_s|p99_s)$",
          "a summary of samples the report does not keep", _no_samples),
    _rule(r"^\$\.tail_study\[\d+\]\.mainloop\.(min_s|mean_s|p50_s)$",
          "a summary of the tail study's samples, which the report does not keep"),
    _rule(r"^\$\.tail_study\[\d+\]\.mainloop\.count$",
          "the tail study's iterations, as the report made elsewhere ran them",
          lambda d, p: "tool" not in d),
]


def members(x: Any, path: str = "$") -> Iterator[tuple[str, Any]]:
    """Every member of a JSON value with its path, each object or list before what it holds."""
    yield path, x
    if isinstance(x, dict):
        for k, v in x.items():
            yield from members(v, f"{path}.{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from members(v, f"{path}[{i}]")


def leaves(x: Any, path: str = "$") -> Iterator[tuple[str, Any]]:
    """Every leaf of a JSON value with its path."""
    return ((p, v) for p, v in members(x, path) if not isinstance(v, dict | list))


def is_raw_sample(path: str) -> bool:
    return RAW_SAMPLES.match(path) is not None


def recorded_why(data: Json, path: str) -> str | None:
    """Why this leaf is taken as recorded (None: a raw sample, or derived)."""
    for pattern, why, when in RULES:
        if pattern.search(path) and (when is None or when(data, path)):
            return why
    return None


@dataclass(frozen=True)
class Inventory:
    raw_samples: int
    recorded: list[Recorded]
    derived: list[str]  # every other leaf: `check` recomputes it


# the words `check` always decides again: never taken as recorded
WORDS = re.compile(r"(^\$\.status|\.verdict\.state|^\$\.variants\[\d+\]\.status|"
                   rf"^\${POINT}(\.variants\[\d+\])?\.status)$")
NAME = "a name or a word, as given"


def inventory(data: Json, recomputed: set[str] | frozenset[str] = frozenset()) -> Inventory:
    """Every leaf of a report's JSON (to_json_dict) as a raw sample, a recorded fact or a
    derived figure. A string that `check` did not recompute (`recomputed`: its paths) is a
    name or a word as given (a variant's name, an error, a kernel's), except the statuses and
    verdict states, which are always derived."""
    raw, recorded, derived = 0, [], []
    for path, value in leaves(data):
        if value is None:
            continue
        if is_raw_sample(path):
            raw += 1
        elif (why := recorded_why(data, path)) is not None:
            recorded.append(Recorded(path, why))
        elif isinstance(value, str) and path not in recomputed and not WORDS.search(path):
            recorded.append(Recorded(path, NAME))
        else:
            derived.append(path)
    return Inventory(raw, recorded, derived)
