"""Adapters for S3, Redis, SQL and the event log, plus the local service launcher."""
