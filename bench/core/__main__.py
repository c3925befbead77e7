"""`python -m bench.core`: see bench.core.run."""

from bench.core.run import main

if __name__ == "__main__":
    raise SystemExit(main())
