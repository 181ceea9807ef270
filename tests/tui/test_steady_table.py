"""SteadyTable (tui/widgets/steady_table.py) overrides DataTable's private `_on_resize` and calls
its private caches. textual is pinned below its next major version (pyproject.toml); within it,
this says loudly, by name, when a release moves what SteadyTable leans on."""

from __future__ import annotations

import inspect
from importlib.metadata import version

from textual.widgets import DataTable

CACHES = ("_row_render_cache", "_cell_render_cache", "_row_renderable_cache", "_line_cache",
          "_styles_cache")


def test_textual_is_the_major_version_steady_table_was_written_for() -> None:
    assert version("textual").split(".")[0] == "8", (
        "textual's next major version: check SteadyTable's overrides of DataTable's private "
        "methods (tui/widgets/steady_table.py), then move the pin in pyproject.toml")


def test_the_datatable_internals_steady_table_relies_on_are_there() -> None:
    table = DataTable()
    missing = [name for name in CACHES if not hasattr(table, name)]
    assert not missing, f"DataTable no longer has {missing}: SteadyTable keeps stale caches"
    assert hasattr(DataTable._get_styles_to_render_cell, "cache_clear"), \
        "DataTable._get_styles_to_render_cell is no longer an lru_cache: SteadyTable calls it"
    assert "_update_count" in inspect.getsource(DataTable._on_resize), \
        "DataTable._on_resize changed: SteadyTable skips it on a same-size Resize"
    source = inspect.getsource(DataTable.notify_style_update)
    dropped = [name for name in CACHES if f"self.{name}.clear()" not in source]
    assert not dropped, f"DataTable.notify_style_update no longer drops {dropped}: " \
                        "SteadyTable's reason to skip it has changed"
