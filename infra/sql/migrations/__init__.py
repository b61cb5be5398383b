"""Alembic migrations of the results store."""
