"""Single-process micro-benchmarks; run a module with ``python -m bench.<name>``."""
