"""Reports side by side (`sagetui compare`, the console's Compare tab): run reports variant by
variant and phase by phase, sweeps point by point, profiles phase by phase; whether reports can
be compared at all (facts.py: the rule), a verdict of B against A across two runs
(statistics/unpaired.py), and the gates a CI job exits on (gate.py). Pure: it reads Report
objects; formatting is core/format.py's."""
