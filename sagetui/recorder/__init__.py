"""The recorder: runs inside the user's program (`sagetui capture -- python SCRIPT`, or `with
sagetui.capture(DIR):` in a notebook), wraps its attention functions and saves the calls it
selects. Imports core and torch; never the UI, the session or the runner."""
