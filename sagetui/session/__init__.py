"""Orchestration: spawn and drive the runner process, schedule rounds, build the report,
autosave. No Textual, no torch: the TUI and the headless `sagetui run` both drive this."""
