"""Chaos: gangs replayed while the operator is SIGKILLed (`python -m bench.chaos`, run.py).

workload.py draws the gangs and kills, invariants.py checks every pod state the watch
shows, report.py renders the generated tables.
"""
