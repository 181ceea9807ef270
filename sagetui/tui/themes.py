"""Colour themes: TOML files registered through Textual's Theme API.

Where they come from, in order (a later file of the same name wins):
1. the installed package `sagetui.themes` (the repository's themes/ directory, read with
   importlib.resources; in a source checkout that is not installed, themes/ next to sagetui/);
2. $XDG_CONFIG_HOME/sagetui/themes/*.toml (~/.config/...), a user's own.

A file holds Textual's Theme fields (name, primary, ..., dark, luminosity_spread), an optional
[variables] table, and `series`: the plot colours, one per variant, in order. They are also
set as the CSS variables $series-1 ... so that tables can show the same colours as legends.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from textual.app import App
from textual.theme import Theme

from sagetui.core.palette import OKABE_ITO
from sagetui.core.paths import themes_dir

DEFAULT_TRUECOLOR = "sage-dark"
DEFAULT_256 = "sage-256"
_COLOUR = re.compile(r"^#[0-9A-Fa-f]{6}$")
_THEME_FIELDS = ("primary", "secondary", "warning", "error", "success", "accent", "foreground",
                 "background", "surface", "panel", "boost")


class ThemeError(ValueError):
    pass


@dataclass(frozen=True)
class ThemeSpec:
    theme: Theme
    series: tuple[str, ...]
    origin: str


def parse_theme(data: Mapping[str, Any], origin: str) -> ThemeSpec:
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise ThemeError(f"{origin}: a theme needs a name")
    if not isinstance(data.get("primary"), str):
        raise ThemeError(f"{origin}: a theme needs a primary colour")
    series = tuple(data.get("series") or OKABE_ITO)
    bad = [c for c in series if not isinstance(c, str) or not _COLOUR.match(c)]
    if bad:
        raise ThemeError(f"{origin}: series colours must be #RRGGBB, not {bad[0]!r}")
    variables = {str(k): str(v) for k, v in (data.get("variables") or {}).items()}
    variables.update({f"series-{i + 1}": c for i, c in enumerate(series)})
    kwargs: dict[str, Any] = {k: data[k] for k in _THEME_FIELDS if k in data}
    theme = Theme(name=name, dark=bool(data.get("dark", True)),
                  luminosity_spread=float(data.get("luminosity_spread", 0.15)),
                  variables=variables, **kwargs)
    return ThemeSpec(theme, series, origin)


def _packaged() -> Iterable[tuple[str, str]]:
    try:
        root = resources.files("sagetui.themes")
        entries = [(e.name, e) for e in root.iterdir()]
    except (ModuleNotFoundError, FileNotFoundError, NotADirectoryError):
        checkout = Path(__file__).resolve().parent.parent.parent / "themes"  # sagetui/tui/
        entries = [(p.name, p) for p in checkout.glob("*.toml")] if checkout.is_dir() else []
    for name, entry in sorted(entries, key=lambda e: e[0]):
        if name.endswith(".toml"):
            yield f"sagetui.themes/{name}", entry.read_text(encoding="utf-8")


def _user_dir() -> Path:
    return themes_dir()


def _user() -> Iterable[tuple[str, str]]:
    d = _user_dir()
    if d.is_dir():
        for p in sorted(d.glob("*.toml")):
            yield str(p), p.read_text(encoding="utf-8")


def load_themes() -> tuple[dict[str, ThemeSpec], list[str]]:
    """(themes by name, one line per file that could not be read)."""
    out: dict[str, ThemeSpec] = {}
    problems: list[str] = []
    for origin, text in [*_packaged(), *_user()]:
        try:
            spec = parse_theme(tomllib.loads(text), origin)
        except (tomllib.TOMLDecodeError, ThemeError, TypeError, ValueError) as exc:
            problems.append(f"theme {origin}: {exc}")
            continue
        out[spec.theme.name] = spec
    return out, problems


def install_themes(app: App[Any], wanted: str | None) -> tuple[dict[str, tuple[str, ...]],
                                                                list[str]]:
    """Register every theme with `app` and choose `wanted` (default: the terminal's): the
    series colours by theme, and one line per problem (a file unread, an unknown name)."""
    specs, problems = load_themes()
    for spec in specs.values():
        app.register_theme(spec.theme)
    name = wanted or default_theme_name(os.environ)
    if name not in app.available_themes:
        problems.append(
            f"unknown theme {name!r}; known: {', '.join(sorted(app.available_themes))}")
        name = default_theme_name(os.environ)
    if name in app.available_themes:
        app.theme = name
    return {n: spec.series for n, spec in specs.items()}, problems


def truecolor(env: Mapping[str, str]) -> bool:
    return env.get("COLORTERM", "").lower() in ("truecolor", "24bit")


def default_theme_name(env: Mapping[str, str]) -> str:
    """SSH does not forward COLORTERM: without it, the theme made of 256-colour entries."""
    return DEFAULT_TRUECOLOR if truecolor(env) else DEFAULT_256


def rgb(colour: str) -> tuple[int, int, int]:
    c = colour.lstrip("#")
    return int(c[0:2], 16), int(c[2:4], 16), int(c[4:6], 16)
