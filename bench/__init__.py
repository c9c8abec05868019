"""Benchmarks: `python -m bench.run_all --quick` (CI smoke) or `--full` (the figures of docs/benchmarks.md)."""
