"""Benchmarks: scripts that print figures and assert nothing (`make bench`)."""
