"""What the tests and the benchmarks share: the stack started in a process, the pipeline built in
one, the cached word lists, the plain judges the engines are checked against, and hostile
uploads. The stack itself never imports this package (tests/unit/test_architecture.py)."""
