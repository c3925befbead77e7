"""DRA benchmarks: `python -m bench.dra` compares the two CEL libraries for device selectors."""
