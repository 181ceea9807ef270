"""Variants whose SPEC is `backend@src:PATH`: each tree checked before anything runs
(`plan_sources`), then built or found in the cache and turned into today's
`backend@/path/to/entry` with its build facts on the spec (`resolve_sources`), before a
runner starts: the runner only ever loads built modules."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from sagetui.core.build_facts import BuildFacts, TreeDiff
from sagetui.core.config import RunConfig
from sagetui.kernel_build.builder import Plan, build, plan
from sagetui.kernel_build.errors import BuildFailed
from sagetui.kernel_build.setup_driver import Progress
from sagetui.kernel_build.tree_diff import tree_diff


def plan_sources(config: RunConfig, *, arch: str | None = None,
                 env: Mapping[str, str] | None = None) -> dict[str, Plan]:
    """Each source variant's plan, by variant name (BuildInputError: the first bad one)."""
    return {v.name: plan(v.source, v.backend, arch=arch, env=env)
            for v in config.variants if v.source is not None}


Failure = Callable[[str, BuildFailed], None]


def resolve_sources(config: RunConfig, plans: dict[str, Plan], progress: Progress, *,
                    cache_root: Path | None = None,
                    on_failure: Failure | None = None) -> RunConfig:
    """The configuration with every source variant built and pointing at its cache entry; a
    variant's diff against the baseline's tree when the baseline is built from one too.
    A build that fails raises BuildFailed, or with `on_failure` is handed to it and its
    variant left out, the others going on (BuildFailed still when none is left)."""
    if not plans:
        return config
    built: dict[str, BuildFacts] = {}
    failed: list[str] = []
    for name, p in plans.items():
        progress(f"variant {name}: {p.describe()}")
        try:
            facts = build(p, progress=progress, cache_root=cache_root)
        except BuildFailed as exc:
            if on_failure is None or len(failed) + 1 == len(config.variants):
                raise
            on_failure(name, exc)
            failed.append(name)
            continue
        how = "cache hit" if facts.cache_hit else f"built in {facts.build_s:.1f} s"
        progress(f"variant {name}: {how} -> {facts.entry}")
        built[name] = facts
    base = config.baseline_name
    if base in built:
        for name, facts in built.items():
            if name == base:
                continue
            files = tree_diff(Path(built[base].source), Path(facts.source))
            if files is not None:
                built[name] = facts.model_copy(update={"diff_vs_baseline": TreeDiff(
                    baseline=base, baseline_source=built[base].source, files=files)})
    variants = [v.model_copy(update={"path": built[v.name].entry, "build": built[v.name]})
                if v.name in built else v for v in config.variants if v.name not in failed]
    update: dict[str, object] = {"variants": variants}
    if config.baseline in failed:  # the first variant left is the baseline
        update["baseline"] = None
    return config.model_copy(update=update)
