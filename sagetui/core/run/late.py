"""The late figures: what a run computes after its last round, once its verdicts are final
(docs/architecture.md, "Late figures").

None of them is needed by a verdict, and each costs seconds at a large shape (on an H200 at
1 x 37,810 x 56 x 128: the fp32 reference 1.4 s, the inputs' sha256 3.1 s, the public API's
first call 5.7 s), so they never stand between `r` and the first round, nor between the last
round and its verdict. The session announces them in `measured` by these keys; each leaves the
model's `computing` list when it arrives (fold.py); what is still there when the run ends was
never computed, and the run's status says so (status.py).
"""

from __future__ import annotations

ACCURACY = "accuracy:"  # + the variant's name
INPUT_SHA256 = "input_sha256"
DECOMPOSITION = "decomposition"


def accuracy_key(variant: str) -> str:
    return ACCURACY + variant


def describe(keys: list[str]) -> str:
    """`["accuracy:a", "accuracy:b", "input_sha256"]` -> "the accuracy of a, b; the inputs'
    sha256" (a status line's, a log line's)."""
    variants = [k.removeprefix(ACCURACY) for k in keys if k.startswith(ACCURACY)]
    parts = [f"the accuracy of {', '.join(variants)}"] if variants else []
    if DECOMPOSITION in keys:
        parts.append("the decomposition check")
    if INPUT_SHA256 in keys:
        parts.append("the inputs' sha256")
    return "; ".join(parts)
