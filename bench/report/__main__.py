"""`python -m bench.report`: see bench.report."""

from bench.report import main

if __name__ == "__main__":
    raise SystemExit(main())
