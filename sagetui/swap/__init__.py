"""`sagetui swap` inside the user's program: the recorder's wrappers (recorder/install.py) with
a variant's backend (runner/backends) in the original's place for every call it can run, the
step the program marks timed, the outputs kept and compared (inside.py); `python -m
sagetui.swap` is the process the CLI starts for each arm and round (session/swap.py drives
them). api.py is what the program calls: `sagetui.region`, `sagetui.output`."""
