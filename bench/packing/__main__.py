"""`python -m bench.packing`: see bench.packing.run."""

from bench.packing.run import main

if __name__ == "__main__":
    raise SystemExit(main())
