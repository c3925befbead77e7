"""Benchmarks, one package each: `python -m bench.core`, `python -m bench.packing`,
`python -m bench.sim`, `python -m bench.e2e`, `python -m bench.chaos`; their generated
tables again from bench/results: `python -m bench.report` (common.py: what they share)."""
