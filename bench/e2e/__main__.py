"""`python -m bench.e2e`: see bench.e2e.run."""

from bench.e2e.run import main

if __name__ == "__main__":
    raise SystemExit(main())
