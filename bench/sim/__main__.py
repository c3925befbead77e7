"""`python -m bench.sim`: see bench.sim.run."""

from bench.sim.run import main

if __name__ == "__main__":
    raise SystemExit(main())
