"""The end-to-end benchmark on the real control plane, and the tools that read its runs.

    python -m bench.e2e                      # Phalanx vs kube-scheduler (run.py)
    python -m bench.e2e.api_cost             # kube-apiserver CPU per kind of request
    python -m bench.e2e.cluster_start        # the local cluster's start, with and without KCM
    python -m bench.e2e.first_cycle          # the operator's first cycle at bench-5000's size
    python -m bench.e2e.snapshot             # the operator's snapshot at bench-5000's size
    python -m bench.e2e.topology_status_size # a NetworkTopology status's size at scale
    python -m bench.e2e.operator_log LOG     # where a run's gangs waited inside the operator
    python -m bench.e2e.partial_gangs RESULTS.json LOG   # the gangs a run saw partly bound

The run's parts: components.py (the schedulers under test), workload.py, submit.py,
measure.py (readings), report.py (figures), table.py (the generated tables).
"""
