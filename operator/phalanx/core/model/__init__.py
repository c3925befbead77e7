"""The vocabulary every stage of a cycle shares: names, quantities, the typed inputs
(`inputs`), the knobs (`config`), and what a cycle returns (`result`, `status`, `eviction`,
`nomination`, `backoff`). Imports nothing else of the core."""
