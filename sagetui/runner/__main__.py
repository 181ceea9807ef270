import sys

if "--doctor" in sys.argv[1:]:
    from sagetui.runner.doctor import main
else:
    from sagetui.runner.main import main

sys.exit(main())
