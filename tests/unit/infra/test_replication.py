"""The replication probes read what Redis and SQLite say without failing, and the failover
watch turns a change of primary into one logged, counted and remembered failover."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.exceptions import NoPermissionError
from sqlalchemy.exc import ProgrammingError

from infra import replication
from infra.replication import (
    DatabaseProbe,
    DatabaseStatus,
    FailoverWatch,
    NoRedisPrimary,
    RedisProbe,
    ReplicationProbe,
    Service,
    Standby,
)
from infra.sql.engine import make_engine


class FakeClock:
    def __init__(self) -> None:
        self.at = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.at += timedelta(seconds=1)
        return self.at


class RecordedLog:
    """Stands in for the module's logger: every entry kept, whatever structlog has cached."""

    def __init__(self) -> None:
        self.entries: list[dict[str, object]] = []

    def __getattr__(self, level: str) -> object:
        return lambda event, **fields: self.entries.append({"level": level, "event": event,
                                                            **fields})  # fmt: skip


@pytest.fixture
def logged(monkeypatch: pytest.MonkeyPatch) -> RecordedLog:
    recorded = RecordedLog()
    monkeypatch.setattr(replication, "log", recorded)
    return recorded


# -- the failover watch ---------------------------------------------------------------------


def test_a_first_primary_is_no_failover_and_a_new_one_is_logged_counted_and_kept(
    logged: RecordedLog,
) -> None:
    clock = FakeClock()
    watch = FailoverWatch(now=clock)
    assert watch.saw(Service.DATABASE, "10.0.0.2:5432") is None
    assert watch.saw(Service.DATABASE, "10.0.0.2:5432") is None
    failover = watch.saw(Service.DATABASE, "10.0.0.3:5432")

    assert failover is not None
    assert (failover.old, failover.new, failover.at) == ("10.0.0.2:5432", "10.0.0.3:5432", clock.at)
    assert watch.recent() == (failover,)
    assert watch.counts() == {Service.DATABASE: 1, Service.REDIS: 0}
    assert logged.entries == [
        {"level": "warning", "event": "failover.seen", "service": "database",
         "old": "10.0.0.2:5432", "new": "10.0.0.3:5432"},
    ]  # fmt: skip


def test_an_outage_between_two_looks_is_no_failover_unless_the_primary_changed(
    logged: RecordedLog,
) -> None:
    watch = FailoverWatch(now=FakeClock())
    watch.saw(Service.REDIS, "10.0.0.5:6379")
    assert watch.saw(Service.REDIS, None) is None  # no primary answered this time
    assert watch.saw(Service.REDIS, "10.0.0.5:6379") is None  # the same one came back
    failover = watch.saw(Service.REDIS, "10.0.0.6:6379")
    assert watch.saw(Service.REDIS, None) is None

    assert failover is not None and failover.old == "10.0.0.5:6379"
    assert watch.counts()[Service.REDIS] == 1 and len(logged.entries) == 1


def test_the_watch_keeps_the_newest_failovers_first_and_counts_them_all(
    logged: RecordedLog,
) -> None:
    watch = FailoverWatch(keep=3, now=FakeClock())
    for n in range(6):
        watch.saw(Service.DATABASE, f"db{n % 2}:5432")

    assert watch.counts()[Service.DATABASE] == 5
    kept = watch.recent()
    assert len(kept) == 3
    assert [f.at for f in kept] == sorted((f.at for f in kept), reverse=True)
    assert (kept[0].old, kept[0].new) == ("db0:5432", "db1:5432")


def test_the_services_are_watched_apart(logged: RecordedLog) -> None:
    watch = FailoverWatch(now=FakeClock())
    watch.saw(Service.DATABASE, "a:1")
    watch.saw(Service.REDIS, "b:2")
    assert watch.saw(Service.REDIS, "a:1") is not None  # a new Redis primary, not the database's
    assert watch.counts() == {Service.DATABASE: 0, Service.REDIS: 1}


class StubDatabase(DatabaseProbe):
    def __init__(self, *statuses: DatabaseStatus) -> None:
        self.statuses = list(statuses)

    def status(self) -> DatabaseStatus:
        return self.statuses.pop(0)


def test_the_replication_probe_feeds_the_watch_what_each_look_found(logged: RecordedLog) -> None:
    first = DatabaseStatus("postgresql", address="db1:5432")
    demoted = DatabaseStatus("postgresql", address="db1:5432", in_recovery=True)
    promoted = DatabaseStatus("postgresql", address="db2:5432")
    probe = ReplicationProbe(StubDatabase(first, demoted, promoted), None, FailoverWatch())

    assert probe.status().failovers == ()
    assert probe.status().failovers == ()  # a standby reached: no primary, nothing to compare
    last = probe.status()

    assert [(f.service, f.old, f.new) for f in last.failovers] == [
        (Service.DATABASE, "db1:5432", "db2:5432")
    ]
    assert last.failovers_seen[Service.DATABASE] == 1 and last.redis is None


# -- the database probe ---------------------------------------------------------------------


def test_sqlite_is_reported_as_sqlite_with_no_replication(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    probe = DatabaseProbe(engine)
    status = probe.status()

    assert (status.dialect, status.replicated, status.primary, status.standbys) == (
        "sqlite", False, None, ())  # fmt: skip
    assert not probe.replicated
    probe.check_writable()  # answers: SQLite has no standby to be
    engine.dispose()


def test_a_standby_or_read_only_server_is_no_primary() -> None:
    assert DatabaseStatus("postgresql", address="db1:5432").primary == "db1:5432"
    assert DatabaseStatus("postgresql", address="db1:5432", in_recovery=True).primary is None
    assert DatabaseStatus("postgresql", address="db1:5432", read_only=True).primary is None
    assert DatabaseStatus("postgresql", problem="unavailable: OperationalError").primary is None


def test_sync_standbys_count_the_synchronous_and_quorum_ones() -> None:
    standbys = tuple(
        Standby(f"db{n}", None, "streaming", sync, None, None)
        for n, sync in enumerate(("sync", "quorum", "async", "potential", None))
    )
    assert DatabaseStatus("postgresql", standbys=standbys).sync_standbys == 2


class InsufficientPrivilege(Exception):
    sqlstate = "42501"


class RefusedControl(DatabaseProbe):
    """A PostgreSQL probe whose role may not call pg_control_*() (revoked from PUBLIC)."""

    replicated = True  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__(engine=None)  # type: ignore[arg-type]
        self.asked: list[bool] = []

    def _read(self) -> DatabaseStatus:
        self.asked.append(self._control)
        if self._control:
            raise ProgrammingError("SELECT ...", {}, InsufficientPrivilege())
        return DatabaseStatus("postgresql", address="db1:5432")


def test_a_role_refused_the_control_functions_gets_the_rest_without_asking_again() -> None:
    probe = RefusedControl()
    assert probe.status().primary == "db1:5432"
    assert probe.status().primary == "db1:5432"
    assert probe.asked == [True, False, False]


# -- the Redis probe ------------------------------------------------------------------------


class FakePool:
    def __init__(self, kwargs: dict[str, Any]) -> None:
        self.connection_kwargs = kwargs
        self.dropped = 0

    def disconnect(self, inuse_connections: bool = True) -> None:
        assert not inuse_connections
        self.dropped += 1


class FakeRedis:
    """The replies a Redis server gives the probe: INFO replication, CLIENT INFO and ROLE."""

    def __init__(
        self,
        info: dict[str, Any] | Exception,
        me: dict[str, Any] | Exception,
        role: str = "master",
        acl_refuses_role: bool = False,
    ) -> None:
        self.info, self.me, self._role = info, me, role
        self.acl_refuses_role = acl_refuses_role
        self.connection_pool = FakePool({"host": "redis.local", "port": 6380})
        self.pings = 0

    def pipeline(self, transaction: bool = True) -> FakeRedis.Pipe:
        return FakeRedis.Pipe(self)

    def role(self) -> list[Any]:
        if self.acl_refuses_role:
            raise NoPermissionError("this user has no permissions to run the 'role' command")
        return [self._role.encode()]

    def ping(self) -> bool:
        self.pings += 1
        return True

    class Pipe:
        def __init__(self, server: FakeRedis) -> None:
            self.server = server

        def info(self, section: str) -> None:
            assert section == "replication"

        def client_info(self) -> None:
            pass

        def execute(self, raise_on_error: bool = True) -> list[Any]:
            assert not raise_on_error
            return [self.server.info, self.server.me]


class FakeSentinel:
    def __init__(self, answer: tuple[str, int] | Exception | None) -> None:
        self.answer = answer

    def sentinel_get_master_addr_by_name(self, name: str, return_responses: bool = False) -> Any:
        assert name == "tilejudge" and return_responses
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


PRIMARY_INFO = {
    "role": "master",
    "connected_slaves": 2,
    "master_repl_offset": 5000,
    "slave0": {"ip": "10.0.0.6", "port": 6379, "state": "online", "offset": 5000, "lag": 0},
    "slave1": {"ip": "10.0.0.7", "port": 6379, "state": "wait_bgsave", "offset": 3500, "lag": 4},
}


def test_a_primarys_replicas_and_their_lag_in_bytes_and_seconds() -> None:
    probe = RedisProbe(FakeRedis(PRIMARY_INFO, {"laddr": "10.0.0.5:6379"}))  # type: ignore[arg-type]
    status = probe.status()

    assert (status.address, status.role, status.primary) == (
        "10.0.0.5:6379", "master", "10.0.0.5:6379")  # fmt: skip
    assert [(r.address, r.state, r.lag_bytes, r.lag_seconds) for r in status.replicas] == [
        ("10.0.0.6:6379", "online", 0, 0),
        ("10.0.0.7:6379", "wait_bgsave", 1500, 4),
    ]
    assert status.sentinels is None and status.problem is None


def test_a_replica_reached_is_no_primary_and_names_its_own() -> None:
    info = {"role": "slave", "master_host": "10.0.0.6", "master_port": 6379,
            "connected_slaves": 0, "master_repl_offset": 10}  # fmt: skip
    status = RedisProbe(FakeRedis(info, {"laddr": "10.0.0.5:6379"})).status()  # type: ignore[arg-type]
    assert (status.primary, status.replica_of, status.replicas) == (None, "10.0.0.6:6379", ())


def test_a_server_without_client_info_is_named_by_the_configured_address() -> None:
    refused = redis.ResponseError("unknown command 'CLIENT INFO'")
    status = RedisProbe(FakeRedis(PRIMARY_INFO, refused)).status()  # type: ignore[arg-type]
    assert status.address == "redis.local:6380" and status.primary == "redis.local:6380"


def test_redis_down_is_reported_not_raised() -> None:
    down = redis.ConnectionError("Connection refused")
    status = RedisProbe(FakeRedis(down, down)).status()  # type: ignore[arg-type]
    assert (status.primary, status.problem) == (None, "unavailable: ConnectionError")


def test_the_sentinels_primary_is_the_one_most_of_those_answering_name() -> None:
    sentinels = [
        FakeSentinel(("10.0.0.5", 6379)),
        FakeSentinel(redis.TimeoutError("Timeout reading from socket")),
        FakeSentinel(("10.0.0.5", 6379)),
        FakeSentinel(("10.0.0.6", 6379)),  # still on the old primary
        FakeSentinel(None),  # knows no such master
    ]
    server = FakeRedis(PRIMARY_INFO, {"laddr": "10.0.0.5:6379"})
    view = RedisProbe(server, sentinels, "tilejudge").status().sentinels  # type: ignore[arg-type]
    assert view is not None
    assert (view.asked, view.answered, view.primary) == (5, 4, "10.0.0.5:6379")


def test_a_replica_is_not_ready_and_idle_connections_are_dropped_to_find_the_primary() -> None:
    replica = FakeRedis(PRIMARY_INFO, {}, role="slave")
    with pytest.raises(NoRedisPrimary, match="slave"):
        RedisProbe(replica).check_primary()  # type: ignore[arg-type]
    assert replica.connection_pool.dropped == 1

    primary = FakeRedis(PRIMARY_INFO, {})
    RedisProbe(primary).check_primary()  # type: ignore[arg-type]
    assert primary.connection_pool.dropped == 0


def test_a_user_refused_role_is_asked_ping_instead() -> None:
    server = FakeRedis(PRIMARY_INFO, {}, acl_refuses_role=True)
    RedisProbe(server).check_primary()  # type: ignore[arg-type]
    assert server.pings == 1
