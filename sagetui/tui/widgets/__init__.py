"""The console's panels; each shows one Source (tui/source.py) through `sync(data, ctx)`."""
