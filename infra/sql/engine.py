"""Engines for the results store: SQLite in WAL mode (embedded default) or PostgreSQL."""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import DisconnectionError

# PostgreSQL's advisory locks are the server's, not a schema's: each of tilejudge's is named
# by its kind and the schema it guards (the URL's search_path), so deployments in two schemas
# of one database never wait for each other's locks.
EVENT_LOCK = 7_306_351  # orders event ids: every writing transaction that inserts events
SEQUENCER_LOCK = 7_306_352  # one transparency-log sequencer at a time
UPGRADE_LOCK = 0x74696C65  # one upgrade of a schema at a time ("tile" in ASCII)
SCHEMA_KEY = "hashtext(coalesce(current_schema(), ''))"  # a lock's second key: its schema
SCHEMA_LOCK = f"SELECT pg_advisory_xact_lock(:kind, {SCHEMA_KEY})"
SCHEMA_TRY_LOCK = f"SELECT pg_try_advisory_xact_lock(:kind, {SCHEMA_KEY})"

WRITE_LOCK_WAIT_S = 30.0  # as long as SQLite's own busy timeout; then SQLite decides
# A session idle this long inside a transaction is ended by the server (`make_engine`). Every
# transaction of the store runs its statements back to back, so only a client that vanished
# (its host cut off, stopped or frozen) idles that long; meanwhile the event log's lock it may
# hold keeps every writer of every host waiting: intake, claims, results, the sweeper.
IDLE_IN_TRANSACTION_MS = 5_000
# A pooled connection given back this recently is handed out again without a ping.
FRESH_S = 1.0
# libpq's own defaults, where the URL sets none: a host that does not answer a connection
# within CONNECT_TIMEOUT_S is passed over for the next one the URL names, and a connection
# whose sent bytes go unacknowledged for TCP_USER_TIMEOUT_MS (its server's host cut off, or
# frozen behind a pulled cable) fails, rather than waiting for TCP's retransmissions (about
# 15 minutes): the store turns that into an outage, and the next connection finds the primary.
CONNECT_TIMEOUT_S = 2
TCP_USER_TIMEOUT_MS = 5_000
LIBPQ_DEFAULTS = {
    "connect_timeout": str(CONNECT_TIMEOUT_S),
    "tcp_user_timeout": str(TCP_USER_TIMEOUT_MS),
    "keepalives_idle": "5",
    "keepalives_interval": "2",
    "keepalives_count": "3",
}


def make_engine(url: str, durable: bool = True) -> Engine:
    if url.startswith("sqlite"):
        return _sqlite(url, durable)
    url = postgres_url(url)
    # A session idle inside a transaction (its host cut off between a statement and COMMIT) is
    # ended after IDLE_IN_TRANSACTION_MS, so the locks it holds (the event log's advisory lock
    # among them) do not wait for TCP keepalive, which takes hours.
    # (Added to the URL's own `options`, which connect_args would otherwise replace.)
    given = make_url(url).query.get("options", "")
    given = given if isinstance(given, str) else " ".join(given)
    options = f"{given} -c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_MS}".strip()
    engine = create_engine(
        url,
        pool_size=10,
        max_overflow=20,
        connect_args={"options": options},
    )
    _ping_unless_fresh(engine)
    return engine


def postgres_url(url: str) -> str:
    """A PostgreSQL URL as SQLAlchemy's psycopg dialect takes it, with LIBPQ_DEFAULTS for the
    parameters it does not set.

    libpq's multi-host form, `postgresql://user:pw@db1:5432,db2:5432,db3:5432/tilejudge`, is
    written as SQLAlchemy's (`...@/tilejudge?host=db1:5432&host=db2:5432&...`), and a URL of
    several hosts that does not say which it wants gets `target_session_attrs=read-write`:
    each connection then goes to whichever host is the primary now, so every process follows a
    failover on its next connection."""
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    userinfo, at, hostlist = parts.netloc.rpartition("@")
    hosts = [h for h in hostlist.split(",") if h]
    netloc = parts.netloc
    if len(hosts) > 1:
        netloc = userinfo + at
        query = [("host", host) for host in hosts] + query
    given = {key for key, _ in query}
    if (
        len([key for key, value in query if key == "host"]) > 1
        and "target_session_attrs" not in given
    ):
        query.append(("target_session_attrs", "read-write"))
    query += [(key, value) for key, value in LIBPQ_DEFAULTS.items() if key not in given]
    return parts._replace(
        netloc=netloc, query=urlencode(query, quote_via=quote, safe=":/,")
    ).geturl()


def _ping_unless_fresh(engine: Engine) -> None:
    """SQLAlchemy's pre-ping, skipped for a connection made or given back within FRESH_S.

    A ping is a round trip on every checkout, and a worker checks out a connection several
    times a group, back to back. A connection idle longer (the server may have restarted
    meanwhile) is pinged as `pool_pre_ping` would, and replaced if the ping fails. One that
    dies within FRESH_S of its last use fails its next statement instead: the store turns
    that into `StoreUnavailable` (an outage, retried) and SQLAlchemy, seeing a disconnect,
    discards the whole pool."""

    def used(dbapi_connection: Any, record: Any) -> None:
        if dbapi_connection is not None:
            record.info["used"] = (id(dbapi_connection), time.monotonic())

    event.listen(engine, "connect", used)
    event.listen(engine, "checkin", used)

    @event.listens_for(engine, "checkout")
    def _ping(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        connection, used_at = record.info.get("used", (None, 0.0))
        if connection == id(dbapi_connection) and time.monotonic() - used_at < FRESH_S:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:  # the pool replaces it (and tries up to three times)
            raise DisconnectionError(f"ping failed: {exc}") from exc


def _sqlite(url: str, durable: bool) -> Engine:
    engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy issue BEGIN itself (below), and make every connection durable and WAL.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA busy_timeout=30000")
        _switch_to_wal(cursor)
        cursor.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        # IMMEDIATE takes the write lock up front: several processes write, and a deferred
        # transaction that upgrades to a writer can fail with "database is locked" at once.
        # Reads (marked readonly) need no lock in WAL mode.
        readonly = connection.get_execution_options().get("readonly", False)
        connection.exec_driver_sql("BEGIN" if readonly else "BEGIN IMMEDIATE")

    return engine


def _switch_to_wal(cursor: Any) -> None:
    """PRAGMA journal_mode=WAL, tried again while another connection holds the lock: SQLite can
    answer "database is locked" at once, without its busy handler, while a new database file is
    being switched to WAL or written by another process (two `tilejudge migrate` at once)."""
    deadline = time.monotonic() + WRITE_LOCK_WAIT_S
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def is_postgres(engine: Engine) -> bool:
    return engine.dialect.name == "postgresql"


class WriteLock:
    """Serialises SQLite's writers on an `flock` next to the database file, taken before
    BEGIN IMMEDIATE.

    SQLite alone makes a writer that finds the lock taken sleep 1, 2, 5, 10, 15, 20, 25 ms…
    between tries, so a short upload-path write behind a rejudge batch's commit could wait tens
    of milliseconds after the lock was free. Here a waiter retries every 0.1 to 1 ms and gets the
    lock as soon as it is free. It only changes how long writers wait, never what they see:
    SQLite's own locking still decides, and a writer that waited `WRITE_LOCK_WAIT_S` goes ahead
    to SQLite's busy handler. One thread's nested writes take the lock once.
    """

    def __init__(self, database_path: str) -> None:
        self._path = database_path + ".write-lock"
        self._held = threading.local()

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        if getattr(self._held, "depth", 0):
            self._held.depth += 1
            try:
                yield
            finally:
                self._held.depth -= 1
            return
        fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            _acquire(fd)
            self._held.depth = 1
            try:
                yield
            finally:
                self._held.depth = 0
        finally:
            os.close(fd)  # releases the lock


def _acquire(fd: int) -> bool:
    deadline = time.monotonic() + WRITE_LOCK_WAIT_S
    pause = 0.0001
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() > deadline:
                return False
            time.sleep(pause)
            pause = min(pause * 2, 0.001)


def write_lock(engine: Engine) -> WriteLock | None:
    """The engine's writer lock: SQLite on a file only (PostgreSQL's writers do not sleep)."""
    database = engine.url.database if engine.dialect.name == "sqlite" else None
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return WriteLock(os.path.abspath(database))
