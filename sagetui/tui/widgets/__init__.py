"""The console's panels; each shows one RunData through `sync(data, ctx)`."""
