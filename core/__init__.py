"""The pipeline's own types and use cases: intake, the group commit, judging, rejudging and
sweeping, written against the ports in `core.ports`. No framework or driver is imported here."""
