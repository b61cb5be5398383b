"""Which database and Redis node this process reaches as primary, what replicates from it and
how far behind, and the failovers seen: a primary that changed between two looks.

Each probe is one short read-only exchange that reports an outage in its record instead of
raising it; the dashboard and `/metrics` show the records (`api.stats`, `api.metrics`), and
`/readyz` asks `DatabaseProbe.check_writable` and `RedisProbe.check_primary`.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Protocol

import redis
import structlog
from redis.exceptions import NoPermissionError
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

from core.errors import StoreUnavailable, Unavailable
from infra.sql.base import read_connection, translated
from infra.sql.engine import is_postgres

log = structlog.get_logger("tilejudge.replication")

# A probe that waits longer would hold up the dashboard's refresh, which runs it.
PROBE_TIMEOUT_MS = 2_000
FAILOVERS_KEPT = 20  # the failovers a process remembers, newest first, for the dashboard
INSUFFICIENT_PRIVILEGE = "42501"

# Every standby the primary streams to. Without pg_monitor the app's role sees each one's
# application_name and NULL for the rest; a server in recovery has no WAL position of its own
# to measure from (pg_current_wal_lsn() would fail there), hence the CASE.
_STANDBYS = """(SELECT coalesce(json_agg(json_build_object(
    'name', application_name, 'address', host(client_addr), 'state', state,
    'sync_state', sync_state, 'lag_seconds', extract(epoch FROM replay_lag),
    'lag_bytes', CASE WHEN pg_is_in_recovery() THEN NULL
                      ELSE pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn) END
  ) ORDER BY application_name, pid), '[]'::json) FROM pg_stat_replication)"""
_CONTROL = "(pg_control_checkpoint()).timeline_id, (pg_control_system()).system_identifier::text"
_NO_CONTROL = "NULL::integer, NULL::text"
_SERVER = """SELECT host(inet_server_addr()), inet_server_port(), pg_is_in_recovery(),
    current_setting('default_transaction_read_only') = 'on', {control}, {standbys}"""
# SET LOCAL statement_timeout and SET TRANSACTION READ ONLY, in one round trip.
_LIMITS = """SELECT set_config('statement_timeout', :ms, true),
    set_config('transaction_read_only', 'on', true)"""
_WRITABLE = "SELECT pg_is_in_recovery(), current_setting('default_transaction_read_only') = 'on'"


class Service(StrEnum):
    """A replicated service whose primary is watched."""

    DATABASE = "database"
    REDIS = "redis"


class ReadOnlyDatabase(StoreUnavailable):
    """The database server reached takes no writes (a standby, or read-only by default)."""


class NoRedisPrimary(Unavailable):
    """The Redis server reached is a replica."""


@dataclass(frozen=True)
class Standby:
    """A PostgreSQL standby as its primary's pg_stat_replication shows it; None where the
    app's role may not see a field (it is not a member of pg_monitor) or there is none yet."""

    name: str  # application_name: Patroni sets the member's name
    address: str | None
    state: str | None  # startup, catchup, streaming, backup, stopping
    sync_state: str | None  # async, potential, sync, quorum
    lag_seconds: float | None  # replay_lag: None once it has replayed everything a while
    lag_bytes: int | None  # WAL written on the primary and not yet replayed there


@dataclass(frozen=True)
class DatabaseStatus:
    """The database server this process's engine reaches, and its standbys."""

    dialect: str  # "postgresql" or "sqlite"
    address: str | None = None  # host:port of the server reached (None: none answered)
    in_recovery: bool = False
    read_only: bool = False  # default_transaction_read_only is on
    timeline: int | None = None  # of the server's last checkpoint
    system_identifier: str | None = None  # the same on every node of one cluster
    standbys: tuple[Standby, ...] = ()
    problem: str | None = None  # why nothing answered ("unavailable: OperationalError")

    @property
    def replicated(self) -> bool:
        return self.dialect == "postgresql"

    @property
    def primary(self) -> str | None:
        """The server reached, if it takes writes."""
        return None if self.in_recovery or self.read_only else self.address

    @property
    def sync_standbys(self) -> int:
        return sum(1 for s in self.standbys if s.sync_state in ("sync", "quorum"))


@dataclass(frozen=True)
class Replica:
    """A Redis replica as its primary's INFO replication lists it."""

    address: str  # ip:port, as the replica announced itself
    state: str | None  # online, wait_bgsave, send_bulk
    offset: int | None
    lag_bytes: int | None  # the primary's replication offset less the replica's
    lag_seconds: int | None  # since the replica's last acknowledgement


@dataclass(frozen=True)
class SentinelView:
    """What the sentinels REDIS_URL lists say of the master name."""

    asked: int
    answered: int
    primary: str | None  # the address most of those that answered name


@dataclass(frozen=True)
class RedisStatus:
    """The Redis server this process's client reaches, and its replicas."""

    address: str | None = None  # host:port reached (None: it did not answer)
    role: str | None = None  # "master" or "slave", as Redis says
    replica_of: str | None = None  # a replica's primary, as it knows it
    replicas: tuple[Replica, ...] = ()
    sentinels: SentinelView | None = None  # None: REDIS_URL names one server
    problem: str | None = None

    @property
    def primary(self) -> str | None:
        return self.address if self.role == "master" else None


@dataclass(frozen=True)
class Failover:
    service: Service
    old: str
    new: str
    at: datetime


@dataclass(frozen=True)
class ReplicationStatus:
    database: DatabaseStatus
    redis: RedisStatus | None  # None: no Redis configured
    failovers: tuple[Failover, ...]  # newest first, the last FAILOVERS_KEPT
    failovers_seen: Mapping[Service, int]  # since this process started


class DatabaseProbe:
    """Looks at the server the engine reaches: in a read-only transaction with a statement
    timeout, one query for the server and its standbys."""

    def __init__(self, engine: Engine, timeout_ms: int = PROBE_TIMEOUT_MS) -> None:
        self._engine, self._timeout_ms = engine, timeout_ms
        self._control = True  # whether pg_control_*() may be called; learnt on first refusal

    @property
    def replicated(self) -> bool:
        """Whether the database can have standbys (PostgreSQL) or not (SQLite)."""
        return is_postgres(self._engine)

    def status(self) -> DatabaseStatus:
        if not self.replicated:
            return DatabaseStatus(self._engine.dialect.name)
        try:
            return self._read()
        except DBAPIError as exc:
            if self._control and _sqlstate(exc) == INSUFFICIENT_PRIVILEGE:
                self._control = False  # revoked from PUBLIC here: the rest is still readable
                return self.status()
            return DatabaseStatus("postgresql", problem=_problem(exc.orig or exc))
        except Exception as exc:  # a probe reports an outage (a pool timeout too), never raises
            return DatabaseStatus("postgresql", problem=_problem(exc))

    def _read(self) -> DatabaseStatus:
        query = _SERVER.format(control=_CONTROL if self._control else _NO_CONTROL,
                               standbys=_STANDBYS)  # fmt: skip
        # The first statement begins a transaction; closing the connection rolls it back.
        with self._engine.connect() as conn:
            conn.execute(text(_LIMITS), {"ms": str(self._timeout_ms)})
            host, port, in_recovery, read_only, timeline, system, standbys = conn.execute(
                text(query)
            ).one()
        return DatabaseStatus(
            "postgresql",
            address=f"{host or 'local'}:{port}" if port is not None else "local socket",
            in_recovery=bool(in_recovery),
            read_only=bool(read_only),
            timeline=timeline,
            system_identifier=system,
            standbys=tuple(_standby(row) for row in standbys),
        )

    def check_writable(self) -> None:
        """Returns if the database answers and (PostgreSQL) the server reached takes writes;
        else raises StoreUnavailable, ReadOnlyDatabase for a standby or a read-only server."""
        with translated(), read_connection(self._engine) as conn:
            if not is_postgres(self._engine):
                conn.execute(text("SELECT 1"))
                return
            in_recovery, read_only = conn.execute(text(_WRITABLE)).one()
        if in_recovery or read_only:
            why = "in recovery (a standby)" if in_recovery else "read-only by default"
            raise ReadOnlyDatabase(f"the database server reached is {why}")


class RedisProbe:
    """Looks at the server the client reaches (INFO replication and CLIENT INFO, pipelined)
    and, where REDIS_URL lists sentinels, asks each which server is the primary."""

    def __init__(
        self, client: redis.Redis, sentinels: Sequence[redis.Redis] = (), master: str = ""
    ) -> None:
        self._client, self._sentinels, self._master = client, tuple(sentinels), master

    def status(self) -> RedisStatus:
        sentinels = self._sentinel_view() if self._sentinels else None
        try:
            pipe = self._client.pipeline(transaction=False)
            pipe.info("replication")
            pipe.client_info()
            info, me = pipe.execute(raise_on_error=False)
            if isinstance(info, Exception):
                raise info
        except Exception as exc:  # a probe reports an outage, never raises
            return RedisStatus(sentinels=sentinels, problem=_problem(exc))
        # CLIENT INFO (Redis 6.2 on) says which address the server answered on: the primary a
        # Sentinel-managed client reaches is otherwise known only to its connections.
        address = None if isinstance(me, Exception) else me.get("laddr")
        master_host = info.get("master_host")
        return RedisStatus(
            address=str(address) if address else self._configured_address(),
            role=info.get("role"),
            replica_of=f"{master_host}:{info.get('master_port')}" if master_host else None,
            replicas=_replicas(info),
            sentinels=sentinels,
        )

    def _configured_address(self) -> str | None:
        kwargs = self._client.connection_pool.connection_kwargs
        return f"{kwargs['host']}:{kwargs.get('port', 6379)}" if "host" in kwargs else None

    def _sentinel_view(self) -> SentinelView:
        named: list[str] = []
        answered = 0
        for sentinel in self._sentinels:
            try:
                found = sentinel.sentinel_get_master_addr_by_name(
                    self._master, return_responses=True
                )
            except redis.RedisError:
                continue
            answered += 1
            if isinstance(found, tuple):  # None: the sentinel knows no such master
                named.append(f"{_text(found[0])}:{found[1]}")
        most = Counter(named).most_common(1)
        return SentinelView(len(self._sentinels), answered, most[0][0] if most else None)

    def check_primary(self) -> None:
        """Returns if the server reached answers as a primary; else raises (NoRedisPrimary for
        a replica). ROLE needs @admin under ACLs: a user refused it is asked PING instead."""
        try:
            role = self._client.role()
        except NoPermissionError:
            self._client.ping()
            return
        if _text(role[0]) != "master":
            # Idle connections may all reach the demoted server: let the next ones find the
            # primary anew (a Sentinel-managed client asks the sentinels on each connection).
            self._client.connection_pool.disconnect(inuse_connections=False)
            raise NoRedisPrimary(f"the Redis server reached is a {_text(role[0])}")


class FailoverWatch:
    """Remembers the primary last seen of each service; a different one is a failover, logged
    (`failover.seen`), counted and kept (the last `keep`). A look that found no primary
    changes nothing: the failover shows once the new primary answers. Fed by one caller at a
    time (the dashboard's refresh)."""

    def __init__(
        self, keep: int = FAILOVERS_KEPT, now: Callable[[], datetime] | None = None
    ) -> None:
        self._now = now or (lambda: datetime.now(UTC))
        self._primaries: dict[Service, str] = {}
        self._recent: deque[Failover] = deque(maxlen=keep)
        self._counts: Counter[Service] = Counter()

    def saw(self, service: Service, primary: str | None) -> Failover | None:
        if primary is None:
            return None
        old = self._primaries.get(service)
        self._primaries[service] = primary
        if old is None or old == primary:
            return None
        failover = Failover(service, old, primary, self._now())
        self._recent.appendleft(failover)
        self._counts[service] += 1
        log.warning("failover.seen", service=service.value, old=old, new=primary)
        return failover

    def recent(self) -> tuple[Failover, ...]:
        return tuple(self._recent)

    def counts(self) -> dict[Service, int]:
        return {service: self._counts[service] for service in Service}


class WritableCheck(Protocol):
    """Whether the database reached takes writes (`DatabaseProbe`)."""

    @property
    def replicated(self) -> bool: ...  # whether the database can have standbys
    def check_writable(self) -> None: ...


class PrimaryCheck(Protocol):
    """Whether the Redis reached is the primary (`RedisProbe`)."""

    def check_primary(self) -> None: ...


class ReplicationReads(Protocol):
    """Which database and Redis node is primary (`ReplicationProbe`): what /readyz checks, and
    what the dashboard and /metrics show."""

    @property
    def database(self) -> WritableCheck: ...
    @property
    def redis(self) -> PrimaryCheck | None: ...
    def status(self) -> ReplicationStatus: ...


class ReplicationProbe:
    """The database's and Redis's probes, looked at together, feeding one FailoverWatch."""

    def __init__(
        self,
        database: DatabaseProbe,
        redis_probe: RedisProbe | None,
        watch: FailoverWatch | None = None,
    ) -> None:
        self.database, self.redis = database, redis_probe
        self.watch = watch or FailoverWatch()

    def status(self) -> ReplicationStatus:
        database = self.database.status()
        found = self.redis.status() if self.redis else None
        self.watch.saw(Service.DATABASE, database.primary)
        if found is not None:
            self.watch.saw(Service.REDIS, found.primary)
        return ReplicationStatus(database, found, self.watch.recent(), self.watch.counts())


def _standby(row: Mapping[str, Any]) -> Standby:
    seconds, lag = row.get("lag_seconds"), row.get("lag_bytes")
    return Standby(
        name=str(row.get("name") or ""),
        address=row.get("address"),
        state=row.get("state"),
        sync_state=row.get("sync_state"),
        lag_seconds=None if seconds is None else float(seconds),
        lag_bytes=None if lag is None else int(lag),
    )


def _replicas(info: Mapping[str, Any]) -> tuple[Replica, ...]:
    """INFO replication's `slave0`, `slave1`… (redis-py parses each into a dict)."""
    offset = info.get("master_repl_offset")
    found = []
    for n in range(int(info.get("connected_slaves", 0) or 0)):
        entry = info.get(f"slave{n}")
        if not isinstance(entry, dict):
            continue
        theirs = entry.get("offset")
        found.append(
            Replica(
                address=f"{entry.get('ip')}:{entry.get('port')}",
                state=entry.get("state"),
                offset=theirs,
                lag_bytes=max(0, offset - theirs) if offset is not None and theirs is not None
                else None,
                lag_seconds=entry.get("lag"),
            )
        )  # fmt: skip
    return tuple(found)


def _sqlstate(exc: DBAPIError) -> str | None:
    return getattr(exc.orig, "sqlstate", None)


def _problem(exc: BaseException) -> str:
    return f"unavailable: {type(exc).__name__}"


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
