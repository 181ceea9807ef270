"""Command-line entry points: `sagetui` (the console), `run`, `view`, `compare`, `check`,
`doctor`, `calibrate`. Heavy imports happen inside each command, so `--help` stays fast."""
