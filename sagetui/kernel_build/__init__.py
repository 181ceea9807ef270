"""Variants built from a SageAttention source tree, into a cache keyed by what went into
them (docs/building.md). Runs the tree's own setup.py in a
subprocess and reads files; never imports torch (the runner must not build)."""
