"""Test helpers that ship with the package: synthetic sessions for tests and benchmarks."""
