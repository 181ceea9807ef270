import sys

if "--doctor" in sys.argv[1:]:
    from .doctor import main
else:
    from .main import main

sys.exit(main())
