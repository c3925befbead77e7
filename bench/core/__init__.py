"""One scheduling cycle of the core on large synthetic snapshots (`python -m bench.core`,
run.py)."""
