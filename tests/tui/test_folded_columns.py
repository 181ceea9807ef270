"""A table too wide for its terminal folds its columns into bands (no scrolling sideways):
every header and cell whole, the key columns kept, the fewest bands that fit."""

from __future__ import annotations

from sagetui.tui.widgets.folded_columns import PADDING, SCROLLBAR, fold

HEADERS = ("variant", "p50 ms", "host ms", "accuracy")
ROWS = [["sm90", "51.213", "0.184", "cos 0.99924 · L1 3.91 % · worst head 7 3.99 %"],
        ["sm80-fp16", "82.575", "0.162", "cos 0.99921 · L1 3.92 %"]]


def _width(headers, rows) -> int:
    widths = [max(len(line) for c in (h, *(r[i] for r in rows)) for line in c.plain.split("\n"))
              for i, h in enumerate(headers)]
    return sum(w + PADDING for w in widths) + SCROLLBAR


def test_a_table_that_fits_is_left_as_it_is() -> None:
    folded = fold(HEADERS, ROWS, 200)
    assert [h.plain for h in folded.headers] == list(HEADERS)
    assert [[c.plain for c in r] for r in folded.rows] == ROWS
    assert folded.header_height == 1 and folded.heights == [1, 1]


def test_a_narrow_table_folds_into_bands_every_cell_whole() -> None:
    for width in (60, 40, 30):
        folded = fold(HEADERS, ROWS, width)
        assert max(folded.heights) > 1  # wrapped or folded: it did not fit one line a row
        assert _width(folded.headers, folded.rows) <= width
        # the key column unchanged; every header whole on a line of its own cell
        assert [r[0].plain for r in folded.rows] == ["sm90", "sm80-fp16"]
        assert set(HEADERS) <= {line for h in folded.headers for line in h.plain.split("\n")}
        # every word of every cell whole (a number never broken)
        words = {w for r in folded.rows for c in r for w in c.plain.split()}
        assert {w for r in ROWS for c in r for w in c.split()} - {"·"} <= words
        assert all(h == max(c.plain.count("\n") + 1 for c in r)
                   for h, r in zip(folded.heights, folded.rows, strict=True))
    assert fold(HEADERS, ROWS, 30).header_height > 1  # too narrow to wrap alone: bands


def test_it_folds_into_the_fewest_bands_a_wide_column_alone_in_its_place() -> None:
    # the workload's: role and status, then calls, total ms and the verdict under them
    headers = ("", "on", "variant", "role", "status", "calls", "total ms", "total Δ % [95% CI]")
    rows = [["■", "[x]", "slow", "", "ok", "12 of 12", "8.001",
             "SLOWER -17.15 [-19.35, -14.89]"]]
    folded = fold(headers, rows, 70, keys=3)
    assert folded.header_height == 2
    assert [h.plain for h in folded.headers[3:]] == ["role\ncalls", "status\ntotal ms",
                                                     "\ntotal Δ % [95% CI]"]
