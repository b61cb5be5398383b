"""Alembic environment: runs migrations on the connection or URL handed in by infra.sql.migrate."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from infra.sql.games import load_all

metadata = load_all()  # the shared tables and every game's own

config = context.config
connection = config.attributes.get("connection")
if connection is not None:
    context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    engine = create_engine(config.get_main_option("sqlalchemy.url") or "")
    with engine.connect() as conn:
        context.configure(connection=conn, target_metadata=metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()
