"""Benchmarks: `python -m bench.run_all --quick` (CI smoke) or `--full` (the README's figures)."""
