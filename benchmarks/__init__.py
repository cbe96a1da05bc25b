"""Benchmarks of this machine's speed: run with `make benchmarks` (not part of the test suite)."""
