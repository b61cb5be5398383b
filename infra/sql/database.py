"""The `Database` a process's parts of the results store are built on, with each contest's
transparency log: every write transaction, whichever part runs it, writes its facts' log entries
(`infra.sql.transparency.log_facts`) before it commits."""

from __future__ import annotations

from sqlalchemy.engine import Engine

from infra.sql.base import Database
from infra.sql.transparency import log_facts


def open_database(engine: Engine) -> Database:
    return Database(engine, log_facts=log_facts)
