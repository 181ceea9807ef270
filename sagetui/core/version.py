"""sagetui's version, in the bottom layer: every layer (reports, the recorder's manifests, the
CLI's --version) reads it here, so none imports the package's root (sagetui/__init__.py), which
sits over every layer as the API a user's program imports."""

VERSION = "0.1.0"  # pyproject.toml's [project] version
