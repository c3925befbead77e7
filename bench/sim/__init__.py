"""The simulator benchmarks, and the tools that look into one simulation.

    python -m bench.sim                # every workload of bench/workloads/ (run.py)
    python -m bench.sim.cycles ...     # each simulated cycle: CPU, searches, a decisions digest
    python -m bench.sim.trace ...      # why high-priority jobs waited, which evictions were wasted
"""
