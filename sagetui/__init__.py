"""sagetui: a live terminal console for benchmarking SageAttention kernels."""

__version__ = "0.1.0"
