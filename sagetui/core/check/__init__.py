"""`sagetui check` of a report of any kind (report.py dispatches to each kind's check: run/,
sweep/, workload/, swap/, profile/), what it takes as recorded, and its mutation coverage."""
