"""`sagetui swap`: the attention calls of the user's own program sent to a variant's backend,
in rounds of whole processes (model.py: what a process is told and what it hands back, and the
report's block; derive.py: every figure from the processes' own numbers, for the report and for
`check`)."""
