"""The runner process: torch, SageAttention, CUDA. Started by the session as
`python -m sagetui.runner`; never imported by the UI."""
