"""Engines for the results store: SQLite in WAL mode (embedded default) or PostgreSQL."""

from __future__ import annotations

from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine


def make_engine(url: str, durable: bool = True) -> Engine:
    if url.startswith("sqlite"):
        return _sqlite(url, durable)
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


def _sqlite(url: str, durable: bool) -> Engine:
    engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy issue BEGIN itself (below), and make every connection durable and WAL.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        # IMMEDIATE takes the write lock up front: several processes write, and a deferred
        # transaction that upgrades to a writer can fail with "database is locked" at once.
        # Reads (marked readonly) need no lock in WAL mode.
        readonly = connection.get_execution_options().get("readonly", False)
        connection.exec_driver_sql("BEGIN" if readonly else "BEGIN IMMEDIATE")

    return engine


def is_postgres(engine: Engine) -> bool:
    return engine.dialect.name == "postgresql"
