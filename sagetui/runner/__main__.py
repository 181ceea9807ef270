import sys

if "--doctor" in sys.argv[1:]:
    from sagetui.runner.doctor import main
elif sys.argv[1:2] == ["--template"] and len(sys.argv) == 3:
    from sagetui.runner.template import serve

    def main() -> int:
        return serve(sys.argv[2])
else:
    from sagetui.runner.main import main

sys.exit(main())
