"""Variants built from a SageAttention source tree, into a cache keyed by what went into
them (README, "Building variants from a source tree"). Runs the tree's own setup.py in a
subprocess and reads files; never imports torch (the runner must not build)."""
