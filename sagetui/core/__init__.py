"""Pure data and arithmetic: configuration, the report model, statistics, verdicts, scheduler
geometry and the runner protocol. Imports only the standard library, numpy, scipy and pydantic."""
