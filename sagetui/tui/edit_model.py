"""What the run editor edits, as the `sagetui run` options a user would type (core/run_argv.py).

The editor never validates a value itself: it turns its fields into arguments, and the CLI's
own parser and rules (the builder the cli hands the app) accept them or say why not. An option
the user did not touch stays as the configuration had it: given if it was given, left out
(an `auto` choice, a default) if it was not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sagetui.core.config import RunConfig, split_variant
from sagetui.core.run_argv import ORDER, Value, explicit_options, option_values, to_argv
from sagetui.core.run_fields import OPTIONS, Option

# the fields of the form, beside the variants: the options run_fields.py gives a label
FORM: tuple[Option, ...] = tuple(o for o in OPTIONS if o.label)
FIELDS = tuple(o.flag for o in FORM)  # the option each edits
LABELS = {o.flag: o.label or o.flag for o in FORM}  # what the form calls each
_BACKEND = re.compile(r"^\s*([^\[@=\s]*)")


@dataclass
class VariantRow:
    """One variant as `--variant NAME=SPEC`; `enabled` is the console's toggle, not an option."""

    name: str
    spec: str
    enabled: bool = True

    @classmethod
    def parse(cls, text: str) -> VariantRow:
        """`NAME=SPEC` (or a bare `SPEC`), split as VariantSpec.parse splits it; nothing is
        checked here: the CLI's rules do that when the edit is applied."""
        name, spec = split_variant(text)
        if name:
            return cls(name, spec)
        m = _BACKEND.match(spec)
        return cls(m.group(1) if m else spec, spec)

    @property
    def text(self) -> str:
        """`--variant`'s value (run_argv.variant_text's rule: the bare SPEC when it names
        itself)."""
        bare = self.name == _BACKEND.match(self.spec).group(1)  # type: ignore[union-attr]
        return self.spec if bare and "@" not in self.spec else f"{self.name}={self.spec}"


class EditModel:
    def __init__(self, config: RunConfig, enabled: dict[str, bool] | None = None) -> None:
        self.shown = option_values(config)  # what each field starts with
        self.explicit = explicit_options(config)  # what the configuration's command line gives
        self.auto = config.auto  # no backend named: the runner picks the best one here
        on = enabled or {}
        self.rows = [VariantRow(v.name, v.spec, on.get(v.name, True)) for v in config.variants]
        self.baseline: str | None = config.baseline_name

    # -- the variants -------------------------------------------------------------------------
    def names(self) -> list[str]:
        return [r.name for r in self.rows]

    def _changed(self) -> None:
        self.auto = False  # the variants shown are now named on the command line
        if self.baseline not in self.names():
            self.baseline = self.rows[0].name if self.rows else None

    def add(self, text: str) -> VariantRow | None:
        if not text.strip():
            return None
        row = VariantRow.parse(text)
        self.rows.append(row)
        self._changed()
        return row

    def remove(self, i: int) -> None:
        del self.rows[i]
        self._changed()

    def rename(self, i: int, name: str) -> None:
        row = self.rows[i]
        if self.baseline == row.name:
            self.baseline = name
        row.name = name
        self._changed()

    def toggle(self, i: int) -> None:
        self.rows[i].enabled = not self.rows[i].enabled

    def set_baseline(self, i: int) -> None:
        self.baseline = self.rows[i].name

    # -- the command line ---------------------------------------------------------------------
    def argv(self, fields: dict[str, str | bool]) -> list[str]:
        """`sagetui run`'s arguments for what the form holds now."""
        opts: dict[str, Value] = {k: v for k, v in self.explicit.items()
                                  if k not in FIELDS and k not in ("--variant", "--baseline")}
        if self.rows and not self.auto:
            opts["--variant"] = [r.text for r in self.rows]
        first = self.rows[0].name if self.rows else None
        if self.baseline and (self.baseline != first or "--baseline" in self.explicit):
            opts["--baseline"] = self.baseline
        for flag in FIELDS:
            value = fields.get(flag, self.shown[flag])
            if isinstance(value, str):
                value = value.strip()
            if value not in ("", False) and (flag in self.explicit or value != self.shown[flag]):
                opts[flag] = value
        return to_argv({flag: opts[flag] for flag in ORDER if flag in opts})

    def enabled(self) -> dict[str, bool]:
        return {r.name: r.enabled for r in self.rows}

