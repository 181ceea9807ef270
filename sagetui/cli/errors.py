"""The one error type of the command line."""


class UsageError(Exception):
    """Bad input found before anything runs: one line, exit status 2."""


def stdout_console():
    """A rich console for tables: the terminal's width, or wide enough not to cut numbers
    when the output goes to a pipe or a file."""
    import sys

    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=200)
