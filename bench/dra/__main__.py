"""Run the CEL comparison: `python -m bench.dra [--evaluations N]`."""

from bench.dra.cel_compare import main

raise SystemExit(main())
