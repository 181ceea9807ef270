"""Backend names and their options are listed once, in core/options.py (OPTIONS; config's
BACKEND_NAMES is its keys). The runner's REGISTRY maps each name to its class; these tests
keep the two from drifting apart instead of trusting that they were typed alike."""

from __future__ import annotations

from sagetui.core.config import BACKEND_NAMES
from sagetui.core.options import OPTIONS
from sagetui.runner.backends import REGISTRY, backend_class


def test_the_runner_registers_exactly_the_backends_core_names():
    assert tuple(REGISTRY) == BACKEND_NAMES == tuple(OPTIONS)


def test_each_registered_class_calls_itself_by_its_name():
    """Every class imports here (no GPU needed to import one: availability() does as much)."""
    for name in REGISTRY:
        assert backend_class(name).name == name
