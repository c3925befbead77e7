"""The FGD paper's packing benchmark, and the tools that explain its losses.

    python -m bench.packing            # allocation at 130% demand (run.py; tables: report.py)
    python -m bench.packing.headroom   # the room above FGD, and where GPU stays free
    python -m bench.packing.losses     # why arrivals fail, and why the free GPU is of no use
"""
