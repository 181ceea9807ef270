"""docs/architecture.md held to the code where a test can read both: its layer tables against
pyproject's import-linter contracts, and "only the fold and the log line name every event"
against the source (an AST walk), with the count of files a new event touches."""

from __future__ import annotations

import ast
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import get_args

from sagetui.core import events as ev

from .conftest import ROOT

EVENTS = "sagetui.core.events"
DOC = ROOT / "docs" / "architecture.md"


# -- only the fold and the log line name every event ------------------------------------------
def _events_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The names a module binds to core/events.py, and to the names it imports from it."""
    modules: set[str] = set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "sagetui.core":
            modules |= {a.asname or a.name for a in node.names if a.name == "events"}
        elif isinstance(node, ast.ImportFrom) and node.module == EVENTS:
            names |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Import):
            modules |= {a.asname for a in node.names if a.name == EVENTS and a.asname}
    return modules, names


def _event_class(cls: ast.expr, modules: set[str], names: set[str]) -> str | None:
    """The event class a pattern names (`ev.Hello`, or `Hello` imported from events)."""
    if isinstance(cls, ast.Attribute) and isinstance(cls.value, ast.Name):
        return cls.attr if cls.value.id in modules else None
    return cls.id if isinstance(cls, ast.Name) and cls.id in names else None


def _calls_unexpected(body: list[ast.stmt], modules: set[str], names: set[str]) -> bool:
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Attribute) and f.attr == "unexpected"
                    and isinstance(f.value, ast.Name) and f.value.id in modules):
                return True
            if isinstance(f, ast.Name) and f.id == "unexpected" and "unexpected" in names:
                return True
    return False


@dataclass(frozen=True)
class EventMatch:
    line: int
    named: frozenset[str]  # the event classes its top-level arms name
    exhaustive: bool  # its last case is a bare `case _:` that calls events.unexpected


def event_matches(path: Path) -> list[EventMatch]:
    """Each `match` in the file whose cases name an event class."""
    tree = ast.parse(path.read_text(), str(path))
    modules, names = _events_names(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Match):
            continue
        # a class nested in a pattern (FromRunner(event=RoundDone())) is another subject's
        tops = [q for case in node.cases for q in (case.pattern.patterns
                if isinstance(case.pattern, ast.MatchOr) else [case.pattern])]
        named = {c for q in tops if isinstance(q, ast.MatchClass)
                 and (c := _event_class(q.cls, modules, names))}
        if not named:
            continue
        last = node.cases[-1]
        bare = (isinstance(last.pattern, ast.MatchAs) and last.pattern.pattern is None
                and last.pattern.name is None and last.guard is None)
        found.append(EventMatch(node.lineno, frozenset(named),
                                bare and _calls_unexpected(last.body, modules, names)))
    return found


def naming_every_event() -> dict[str, list[EventMatch]]:
    """The modules with a match that names every event: each needs an arm for a new one."""
    every = {c.__name__ for c in get_args(ev.Event)}
    found: dict[str, list[EventMatch]] = {}
    for path in sorted((ROOT / "sagetui").rglob("*.py")):
        for m in event_matches(path):
            if m.named >= every:
                found.setdefault(path.relative_to(ROOT).as_posix(), []).append(m)
    return found


# docs/architecture.md, Events: the fold and the log line name every event (mypy points at a
# missing arm, and under the tests an unhandled one raises); a display matches what it shows
EXHAUSTIVE = {"sagetui/core/run/fold.py", "sagetui/core/eventlog.py"}


def test_only_the_fold_and_the_log_line_name_every_event() -> None:
    found = naming_every_event()
    assert set(found) == EXHAUSTIVE, sorted(found)
    assert all(m.exhaustive for ms in found.values() for m in ms), found


def test_a_match_that_ends_in_unexpected_names_all_it_can_be_given() -> None:
    """Elsewhere `events.unexpected` ends a match only over a narrowed type (the runner's
    commands, the events a set-up waits for), never over every event."""
    narrowed = {}
    for path in sorted((ROOT / "sagetui").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for m in event_matches(path):
            if m.exhaustive and rel not in EXHAUSTIVE:
                narrowed[f"{rel}:{m.line}"] = m.named
    every = {c.__name__ for c in get_args(ev.Event)}
    assert narrowed, "the walk finds the runner's match on commands"
    assert all(not named >= every for named in narrowed.values()), narrowed


def test_the_doc_counts_the_files_a_new_event_touches() -> None:
    """"Adding an event ... N files": events.py and each module naming every event."""
    text = " ".join(DOC.read_text().split())
    said = re.search(r"\*\*Adding an event\*\* touches (\w+) files", text)
    assert said, "docs/architecture.md says how many files a new event touches"
    words = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
    assert words[said.group(1)] == 1 + len(naming_every_event())


def test_the_walk_tells_a_display_from_an_exhaustive_match(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("from sagetui.core import events as ev\n"
                 "def f(e):\n"
                 "    match e:\n"
                 "        case ev.Hello() | ev.Ready():\n"
                 "            pass\n"
                 "        case ev.FromRunner(event=ev.Bye()):\n"
                 "            pass\n"
                 "        case _:\n"
                 "            pass\n"
                 "    match e:\n"
                 "        case ev.Bye():\n"
                 "            pass\n"
                 "        case _:\n"
                 "            ev.unexpected(e)\n")
    assert event_matches(f) == [
        EventMatch(3, frozenset({"Hello", "Ready", "FromRunner"}), False),
        EventMatch(10, frozenset({"Bye"}), True)]


# -- the layer tables against the contracts -----------------------------------------------------
def _contracts() -> list[dict]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"]


def _table(heading: str) -> list[list[str]]:
    """The rows (cells) of the first table after the line `heading` in the doc."""
    lines = DOC.read_text().splitlines()
    start = lines.index(heading)
    rows: list[list[str]] = []
    for line in lines[start:]:
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif rows:
            break
    assert len(rows) > 2, f"no table after {heading!r}"
    return rows[2:]  # past the header and its rule


def _ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def _allowed_packages() -> dict[str, set[str]]:
    """What each of sagetui's packages may import of the others, by the contracts: the
    packages in the layers below its own (not its independent siblings), less those a
    forbidden contract names for it."""
    contracts = _contracts()
    layers = next(c for c in contracts if c["type"] == "layers" and "containers" not in c)
    rows = [[m.strip() for m in row.split("|")] for row in layers["layers"]]
    allowed = {m: {x for below in rows[i + 1:] for x in below}
               for i, row in enumerate(rows) for m in row}
    for c in contracts:
        if c["type"] == "forbidden":
            for src in c["source_modules"]:
                if src in allowed:
                    allowed[src] -= set(c["forbidden_modules"])
    return allowed


def test_the_package_table_is_the_contracts() -> None:
    """Each package's row names, in backticks, exactly the packages of sagetui it may import;
    every package is in the table and in the layers contract; and a library a row names is
    not one a contract forbids it."""
    allowed = _allowed_packages()
    forbidden = {src: set(c["forbidden_modules"]) for c in _contracts()
                 if c["type"] == "forbidden" for src in c["source_modules"]}
    table = {}
    for package, may, _holds in _table("| package | may import | holds |"):
        name = _ticked(package)[0]
        ticked = _ticked(may)
        table[name] = {f"sagetui.{p}" for p in ticked}
        libraries = [w.strip() for w in re.sub(r"`[^`]+`,?", "", may).split(",") if w.strip()]
        for lib in libraries:
            assert lib.replace("-", "_") not in forbidden.get(name, set()), (name, lib)
    packages = {f"sagetui.{p.parent.name}" for p in (ROOT / "sagetui").glob("*/__init__.py")}
    assert set(table) == set(allowed) == packages
    assert table == allowed


def test_the_core_table_is_the_core_contract() -> None:
    """docs/architecture.md's core order, row by row, is the layers contract over core's
    folders and modules (exhaustive: every one of them is placed)."""
    contract = next(c for c in _contracts()
                    if c["type"] == "layers" and c.get("containers") == ["sagetui.core"])
    assert contract.get("exhaustive") is True
    want = [sorted(m.strip() for m in row.split("|")) for row in contract["layers"]]
    got = [sorted(n.removesuffix("/").removesuffix(".py") for n in _ticked(row[0]))
           for row in _table("| core, top to bottom | holds |")]
    assert got == want
    children = {p.stem if p.is_file() else p.name
                for p in (ROOT / "sagetui" / "core").iterdir()
                if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists()}
    assert children == {m for row in want for m in row}


def test_the_doc_counts_the_events() -> None:
    """"Counted ...: N events; M `match`es name all of them" against events.Event and the walk."""
    text = " ".join(DOC.read_text().split())
    said = re.search(r"Counted on [\d-]+: (\d+) events; (\d+) `match`es "
                     r"name all of them", text)
    assert said, "docs/architecture.md counts the events"
    assert (int(said.group(1)), int(said.group(2))) == (
        len(get_args(ev.Event)), sum(len(ms) for ms in naming_every_event().values()))
