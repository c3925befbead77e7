"""DRA benchmarks: `python -m bench.dra` compares the CEL libraries for device selectors;
`python -m bench.dra --sim` runs the simulator's workloads with GPUs as extended resources
and as DRA devices, and counts the jobs that start the same."""

import sys

if "--sim" in sys.argv[1:]:
    from bench.dra.sim_equivalence import run

    run()
    raise SystemExit(0)

from bench.dra.cel_compare import main

raise SystemExit(main())
