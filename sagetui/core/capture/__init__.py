"""A capture of a program's attention calls, as it lies on disk: the manifest's model, the
`--calls` selection, the check of a capture against its files and the workload it loads as.
No torch here: the recorder (sagetui/recorder) writes captures inside the user's program, the
runner loads their tensors (runner/captured_call.py)."""
