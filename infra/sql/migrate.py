"""Apply the Alembic migrations (what `up`, `tilejudge migrate` and the tests do before anything
else), one upgrade at a time even when several hosts start one together."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.migration import MigrationContext
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from infra.sql.engine import SCHEMA_LOCK, UPGRADE_LOCK, is_postgres

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


@dataclass(frozen=True)
class Upgraded:
    """The database's revision before and after an upgrade (None: no schema yet)."""

    before: str | None
    after: str | None


def alembic_config(url: str = "") -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(engine: Engine) -> Upgraded:
    """Upgrade to the newest revision in one transaction, which first takes the database's
    write lock: on PostgreSQL an advisory lock (let go at commit, or when a dying process's
    connection drops), on SQLite the lock BEGIN IMMEDIATE takes. A second upgrade waits for the
    first, then finds the schema at head and changes nothing."""
    config = alembic_config()
    with engine.begin() as connection:
        if is_postgres(engine):
            connection.execute(text(SCHEMA_LOCK), {"kind": UPGRADE_LOCK})
        before = _revision(connection)
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
        return Upgraded(before, _revision(connection))


def _revision(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()
