import sys

if sys.argv[1:2] == ["--template"] and len(sys.argv) == 3:
    from sagetui.runner.template import serve

    sys.exit(serve(sys.argv[2]))
from sagetui.runner.entry import run

sys.exit(run(sys.argv[1:]))
