"""Benchmarks: `python -m bench.core`, `python -m bench.sim`, `python -m bench.e2e`."""
