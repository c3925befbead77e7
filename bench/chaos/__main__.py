"""`python -m bench.chaos`: see bench.chaos.run."""

from bench.chaos.run import main

if __name__ == "__main__":
    raise SystemExit(main())
