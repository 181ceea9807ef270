"""What a runner process runs, started (`python -m sagetui.runner ARGS`) or forked by a runner
template with the arguments of its request (runner/template.py): the doctor (`--doctor
[--peak]`) or a runner (no arguments)."""

from __future__ import annotations


def run(args: list[str]) -> int:
    if "--doctor" in args:
        from sagetui.runner import doctor

        return doctor.main(args)
    from sagetui.runner import main

    return main.main()
