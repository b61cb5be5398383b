"""The results store's plumbing: the `Database` every part of the store shares (the engine, read
and write transactions, the event rows every write transaction inserts and the hook that writes
their transparency log entries), and `StoreBase`, what each part (one class a port) derives from.

Events get ids in commit order: on PostgreSQL each writing transaction takes one advisory lock
before it inserts an event (SQLite serialises writers anyway), so a reader paging with
`after=N` never skips an event that commits late with a smaller id.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Protocol

import structlog
from sqlalchemy import (
    ColumnElement,
    Connection,
    Table,
    and_,
    bindparam,
    insert,
    select,
    text,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DataError, DBAPIError, IntegrityError

from core import clock
from core.errors import Duplicate, Invalid, MissingReference, StoreUnavailable
from core.events import VERDICT_FIELDS, Event, event_fields
from infra.sql.engine import EVENT_LOCK, SCHEMA_LOCK, is_postgres, write_lock
from infra.sql.schema import events

log = structlog.get_logger("tilejudge.events")


class PendingEvents(list[Event]):
    """A write transaction's events, as records; once it commits, `written` holds each as its
    row was stored (`event_fields`), with its time, its id and, for a fact the contest's
    transparency log records, the leaf of its first entry."""

    written: list[dict[str, Any]]

    def __init__(self) -> None:
        super().__init__()
        self.written = []


# Writes a transaction's events' entries in the contests' transparency logs, in that transaction.
LogFacts = Callable[[Connection, list[dict[str, Any]]], None]


class Database:
    """The engine and the transactions the results store's queries run in: one object, shared
    by every part of the store a process builds on it (`StoreBase`). So SQLite's write lock is
    one lock, which a thread holding it takes again at no cost whichever part writes, and every
    write transaction, whichever part runs it, inserts its events and hands them to `log_facts`
    (`infra.sql.database.open_database` gives the transparency log's; None writes no entries)."""

    def __init__(self, engine: Engine, *, log_facts: LogFacts | None) -> None:
        self.engine = engine
        self.postgres = is_postgres(engine)
        self._sqlite = engine.dialect.name == "sqlite"
        self._write_lock = write_lock(engine)
        self._batched_event_ids = bool(
            engine.dialect.insert_executemany_returning_sort_by_parameter_order
        )
        self._log_facts_hook = log_facts

    def writer_turn(self) -> AbstractContextManager[None]:
        """SQLite's write lock (`WriteLock`, reentrant in a thread: the writes made while it is
        held take it again at no cost); nothing on PostgreSQL, whose writers do not take turns."""
        return self._write_lock.held() if self._write_lock else nullcontext()

    @contextmanager
    def write(self) -> Iterator[tuple[Connection, PendingEvents]]:
        """A write transaction; events appended to the list are inserted, then logged on commit."""
        pending = PendingEvents()
        lock = self._write_lock.held() if self._write_lock else nullcontext()
        with translated(), lock, self.engine.begin() as conn:
            yield conn, pending
            if pending:
                if self.postgres:
                    conn.execute(text(SCHEMA_LOCK), {"kind": EVENT_LOCK})
                pending.written = [event_fields(event) for event in pending]
                self._insert_events(conn, pending.written)
                self._log_facts(conn, pending.written)
        for event in pending.written:
            log.info(event["type"], **_logged(event))

    def _insert_events(self, conn: Connection, written: list[dict[str, Any]]) -> None:
        """All of a transaction's events in as few statements as the database allows."""
        rows = [_event_row(event) for event in written]
        if len(rows) > 1 and self._sqlite:
            ids = insert_rows(conn, events, rows)
        elif len(rows) > 1 and self._batched_event_ids:
            ids = list(
                conn.execute(
                    insert(events).returning(events.c.id, sort_by_parameter_order=True), rows
                ).scalars()
            )
        else:
            ids = [
                conn.execute(insert(events).values(**row)).inserted_primary_key[0]  # type: ignore[index]
                for row in rows
            ]
        for event, event_id in zip(written, ids, strict=True):
            event["id"] = event_id

    def _log_facts(self, conn: Connection, written: list[dict[str, Any]]) -> None:
        """The transparency log's entries for a transaction's events as written, in that
        transaction (`infra.sql.transparency.log_facts`); a database without the hook writes
        none."""
        if self._log_facts_hook is not None:
            self._log_facts_hook(conn, written)

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A connection for reads. On PostgreSQL in autocommit: under its read committed each
        statement sees its own snapshot inside a transaction too, so a BEGIN and a ROLLBACK
        would only add two round trips to every read."""
        with translated(), read_connection(self.engine) as conn:
            yield conn

    def ping(self) -> None:
        with self.read() as conn:
            conn.execute(select(1))


class Transactions(Protocol):
    """What queries run in: the `Database`, or any part of the store built on it."""

    def write(self) -> AbstractContextManager[tuple[Connection, PendingEvents]]: ...
    def read(self) -> AbstractContextManager[Connection]: ...


class StoreBase:
    """What each part of the results store derives from (one class a port, and `SqlStore`, the
    union of them): the transactions of the `Database` it is built on, which it shares with
    every other part built on the same one."""

    def __init__(self, database: Database) -> None:
        self.database = database

    @property
    def engine(self) -> Engine:
        return self.database.engine

    @engine.setter
    def engine(self, engine: Engine) -> None:
        """The database's engine: swapped for every part built on it at once."""
        self.database.engine = engine

    @property
    def _postgres(self) -> bool:
        return self.database.postgres

    def write(self) -> AbstractContextManager[tuple[Connection, PendingEvents]]:
        """A write transaction (`Database.write`)."""
        return self.database.write()

    def read(self) -> AbstractContextManager[Connection]:
        """A connection for reads (`Database.read`)."""
        return self.database.read()


def read_connection(engine: Engine) -> Connection:
    """A pooled connection marked read-only (SQLite begins it without the write lock), in
    autocommit on PostgreSQL (`Database.read`)."""
    conn = engine.connect().execution_options(readonly=True)
    if is_postgres(engine):
        conn = conn.execution_options(isolation_level="AUTOCOMMIT")
    return conn


@contextmanager
def translated() -> Iterator[None]:
    """The driver's errors as the pipeline's: a refused key is Duplicate, a value the database
    cannot hold is Invalid, anything else from the database is an outage (StoreUnavailable)."""
    try:
        yield
    except IntegrityError as exc:
        if _foreign_key(exc):
            raise MissingReference(f"a row it refers to is not there: {exc.orig}") from exc
        raise Duplicate(f"the store refused the row: {exc.orig}") from exc
    except DataError as exc:
        raise Invalid("a value in this request cannot be stored (a NUL character?)") from exc
    except DBAPIError as exc:
        raise StoreUnavailable(f"the results store failed: {exc.orig}") from exc


def _foreign_key(exc: IntegrityError) -> bool:
    """Whether a foreign key refused the row: PostgreSQL's SQLSTATE 23503, SQLite's message."""
    found = exc.orig
    return getattr(found, "sqlstate", None) == "23503" or "FOREIGN KEY" in str(found)


def insert_all(conn: Connection, table: Table, rows: list[dict[str, Any]]) -> None:
    """Rows into a table: on SQLite in multi-row INSERTs (`insert_rows` says why), elsewhere
    in the driver's executemany."""
    if not rows:
        return
    if conn.dialect.name == "sqlite":
        insert_rows(conn, table, rows)
    else:
        conn.execute(insert(table), rows)


def insert_rows(conn: Connection, table: Table, rows: list[dict[str, Any]]) -> list[int]:
    """Rows into a SQLite table in multi-row INSERTs (500 rows a statement), and their rowids
    in order.

    SQLAlchemy inserts into SQLite one statement per row where the ids must come back in order,
    and one step per row otherwise; SQLite's driver lets go of the GIL around each, and the
    writer, holding the database's only write lock, must win it back from the API's busy
    threads every time. One statement for a group keeps the lock held for less. The rowids are
    those of one statement's rows, which SQLite numbers consecutively, in order, after the
    largest in the table: no one else writes while this transaction holds the write lock.
    """
    columns = list(rows[0])
    one = "(" + ", ".join("?" * len(columns)) + ")"
    ids: list[int] = []
    for start in range(0, len(rows), 500):
        chunk = rows[start : start + 500]
        statement = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES " + ", ".join(
            [one] * len(chunk)
        )
        params = tuple(row[column] for row in chunk for column in columns)
        last = conn.exec_driver_sql(statement, params).lastrowid
        ids.extend(range(last - len(chunk) + 1, last + 1))
    return ids


def unindexed(column: ColumnElement[str]) -> ColumnElement[str]:
    """`column`'s value in a form no index is searched for (`column || ''`, on both databases).
    Beside an IN list of a few ids, SQLite would otherwise search the index on `state` and walk
    every row in that state (thousands, in a backlog) instead of the few the ids name."""
    return column.concat("")


class RowsAmong:
    """The rows whose `columns` hold one of the wanted tuples: found by each column's own IN
    list (`clause`, built once; `values` binds the lists), then kept by `among` where the
    tuple is one of those wanted. The lists may also match a tuple no one wanted (a team's
    bytes sent by another team of the same group): `among` drops those rows.

    Not a row-value IN list: SQLite plans one of more than one row as a scan of the whole
    table (every intake group would read every submission) and takes no row-value parameter
    (SQLAlchemy would render its values into the SQL on every call), while it searches an
    index for lists of single values."""

    def __init__(self, name: str, columns: Sequence[ColumnElement[Any]]) -> None:
        self._names = [f"{name}_{n}" for n in range(len(columns))]
        self.clause = and_(
            *(
                column.in_(bindparam(bound, expanding=True))
                for bound, column in zip(self._names, columns, strict=True)
            )
        )

    def values(self, wanted: Sequence[tuple[Any, ...]]) -> dict[str, list[Any]]:
        return {bound: sorted({row[n] for row in wanted}) for n, bound in enumerate(self._names)}

    def among(self, rows: Iterable[Any], wanted: Sequence[tuple[Any, ...]]) -> Iterator[Any]:
        """The rows (their first columns being the tuple) that hold a wanted tuple."""
        keep, width = set(wanted), len(self._names)
        return (row for row in rows if tuple(row[:width]) in keep)


def _event_row(event: dict[str, Any]) -> dict[str, Any]:
    ts = event.setdefault("ts", clock.now())
    data = {k: v for k, v in event.items() if k not in ("type", "ts", "id")}
    return {
        "ts": ts,
        "type": str(event["type"]),
        "contest_id": event.get("contest"),
        "team_id": event.get("team"),
        "submission_id": event.get("submission"),
        "data": json.dumps(data, separators=(",", ":"), default=str),
    }


def _logged(event: dict[str, Any]) -> dict[str, Any]:
    """What a process's log line of an event carries: its ids and facts, never a verdict."""
    return {k: v for k, v in event.items() if k != "type" and k not in VERDICT_FIELDS}
