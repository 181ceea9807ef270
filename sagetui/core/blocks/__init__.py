"""The blocks a saved report is made of, below every kind that fills them: the shared pieces
(base.py: summaries, verdicts, faults, provenance) and each kind's block (sweep, workload, swap,
profile). The run's own blocks and the report that holds them all are core/report/model.py."""
