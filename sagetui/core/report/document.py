"""A report's JSON text from its head (everything but the raw samples, already JSON) and its
samples, in pieces: json and numpy alone, so that the recovery file's writer process
(session/recovery_writer.py) starts without pydantic."""

from __future__ import annotations

from collections.abc import Iterator

from sagetui.core.samples import Samples


def iter_json_document(head: str, samples: Samples | None) -> Iterator[str]:
    """report_head_json's text with the samples added as its last field."""
    if samples is None:
        yield head + "\n"
        return
    yield f'{head[:-2]},\n  "samples": '
    yield from samples.iter_json(indent=2, level=1)
    yield "\n}\n"
