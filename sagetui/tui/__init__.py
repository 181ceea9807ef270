"""The live console (Textual). Imports core, session, textual and plotext; never torch or the
runner: kernels are timed in the runner process (docs/architecture.md, Processes)."""
