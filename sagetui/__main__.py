import sys

from sagetui.cli.main import main

sys.exit(main())
