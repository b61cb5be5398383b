"""What operators see of replication: the dashboard's services, `/metrics`' primaries, lag and
failovers (node addresses only for an authorised scraper), and a `/readyz` that says not ready
while the database reached takes no writes or Redis reached is a replica."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from prometheus_client.parser import text_string_to_metric_families

from api.routes.health import dependency_checks
from devstack.testing.pipeline import ADMIN, Pipeline
from infra.replication import (
    DatabaseProbe,
    DatabaseStatus,
    Failover,
    ReadOnlyDatabase,
    RedisProbe,
    RedisStatus,
    Replica,
    ReplicationProbe,
    ReplicationStatus,
    SentinelView,
    Service,
    Standby,
)

AT = datetime(2026, 3, 1, 12, 0, 5, tzinfo=UTC)
DATABASE = DatabaseStatus(
    "postgresql",
    address="10.0.0.3:5432",
    timeline=4,
    system_identifier="7716402259836709059",
    standbys=(
        Standby("db1", "10.0.0.2", "streaming", "sync", 0.25, 4096),
        Standby("db2", "10.0.0.4", "catchup", "async", 12.5, 1_000_000),
    ),
)
REDIS = RedisStatus(
    address="10.0.0.5:6379",
    role="master",
    replicas=(Replica("10.0.0.6:6379", "online", 900, 100, 1),),
    sentinels=SentinelView(3, 2, "10.0.0.5:6379"),
)
FAILOVER = Failover(Service.DATABASE, "10.0.0.2:5432", "10.0.0.3:5432", AT)
ADDRESSES = ("10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6")


class Seen(ReplicationProbe):
    """Answers what the test says the probes found."""

    def __init__(self, status: ReplicationStatus) -> None:
        self.found = status

    def status(self) -> ReplicationStatus:
        return self.found


def seen(
    database: DatabaseStatus = DATABASE, redis: RedisStatus | None = REDIS
) -> ReplicationStatus:
    counts = {Service.DATABASE: 1, Service.REDIS: 0}
    return ReplicationStatus(database, redis, (FAILOVER,), counts)


Samples = dict[str, list[tuple[dict[str, str], float]]]


def scrape(pipe: Pipeline, headers: dict[str, str] | None = None) -> tuple[str, Samples]:
    text = pipe.client.get("/metrics", headers=headers or {}).text
    families = text_string_to_metric_families(text)
    return text, {f.name: [(s.labels, s.value) for s in f.samples] for f in families}


def test_the_dashboard_lists_primaries_standbys_replicas_and_failovers(pipe: Pipeline) -> None:
    pipe.services.replication = Seen(seen())
    services = pipe.client.get("/v1/stats", headers=ADMIN).json()["services"]

    database = services["database"]
    assert (database["primary"], database["timeline"], database["sync_standbys"]) == (
        "10.0.0.3:5432", 4, 1)  # fmt: skip
    assert database["standbys"][1] == {
        "name": "db2", "address": "10.0.0.4", "state": "catchup", "sync_state": "async",
        "lag_seconds": 12.5, "lag_bytes": 1_000_000,
    }  # fmt: skip
    assert services["redis"]["primary"] == "10.0.0.5:6379"
    assert services["redis"]["replicas"][0]["lag_bytes"] == 100
    assert services["redis"]["sentinels"] == {"asked": 3, "answered": 2,
                                              "primary": "10.0.0.5:6379"}  # fmt: skip
    assert services["failovers"] == [{"at": "2026-03-01T12:00:05.000000Z", "service": "database",
                                      "old": "10.0.0.2:5432", "new": "10.0.0.3:5432"}]  # fmt: skip
    assert services["failovers_seen"] == {"database": 1, "redis": 0}


def test_the_in_process_pipeline_shows_sqlite_with_no_replication_and_no_redis(
    pipe: Pipeline,
) -> None:
    services = pipe.client.get("/v1/stats", headers=ADMIN).json()["services"]
    assert services["database"]["dialect"] == "sqlite"
    assert services["database"]["replicated"] is False and services["database"]["standbys"] == []
    assert services["redis"] is None and services["failovers"] == []


def test_metrics_name_the_primaries_and_each_replicas_lag_for_an_authorised_scraper(
    pipe: Pipeline,
) -> None:
    pipe.services.replication = Seen(seen())
    _, metrics = scrape(pipe, ADMIN)

    assert metrics["tilejudge_database_primary_info"] == [({"address": "10.0.0.3:5432"}, 1)]
    assert metrics["tilejudge_database_primary_up"] == [({}, 1)]
    assert metrics["tilejudge_database_replicas"] == [({}, 2)]
    assert metrics["tilejudge_database_sync_replicas"] == [({}, 1)]
    assert metrics["tilejudge_database_replica_lag_seconds"] == [
        ({"replica": "db1"}, 0.25), ({"replica": "db2"}, 12.5)]  # fmt: skip
    assert metrics["tilejudge_database_replica_lag_bytes"] == [
        ({"replica": "db1"}, 4096), ({"replica": "db2"}, 1_000_000)]  # fmt: skip
    assert metrics["tilejudge_redis_primary_info"] == [({"address": "10.0.0.5:6379"}, 1)]
    assert metrics["tilejudge_redis_primary_up"] == [({}, 1)]
    assert metrics["tilejudge_redis_replica_lag_bytes"] == [({"replica": "10.0.0.6:6379"}, 100)]
    assert metrics["tilejudge_redis_sentinels_answering"] == [({}, 2)]
    assert metrics["tilejudge_failovers_seen"] == [
        ({"service": "database"}, 1), ({"service": "redis"}, 0)]  # fmt: skip


def test_metrics_without_a_token_give_the_largest_lag_and_no_address(pipe: Pipeline) -> None:
    pipe.services.replication = Seen(seen())
    text, metrics = scrape(pipe)

    assert not [address for address in ADDRESSES if address in text]
    assert "tilejudge_database_primary_info" not in metrics
    assert metrics["tilejudge_database_primary_up"] == [({}, 1)]
    assert metrics["tilejudge_database_replica_lag_seconds"] == [({}, 12.5)]
    assert metrics["tilejudge_redis_replica_lag_bytes"] == [({}, 100)]
    assert "tilejudge_failovers_seen_total" in text


def test_standbys_sharing_a_name_are_separate_series(pipe: Pipeline) -> None:
    unnamed = tuple(
        Standby("walreceiver", None, None, None, None, lag) for lag in (10, 20)
    )  # PostgreSQL's default name; no pg_monitor, so no address, state or seconds
    status = seen(DatabaseStatus("postgresql", address="10.0.0.3:5432", standbys=unnamed))
    pipe.services.replication = Seen(status)
    _, metrics = scrape(pipe, ADMIN)

    assert metrics["tilejudge_database_replica_lag_bytes"] == [
        ({"replica": "walreceiver"}, 10), ({"replica": "walreceiver #2"}, 20)]  # fmt: skip
    assert metrics["tilejudge_database_replica_lag_seconds"] == []  # none visible


def test_no_primary_reached_is_a_zero_not_a_missing_family(pipe: Pipeline) -> None:
    standby = DatabaseStatus("postgresql", address="10.0.0.2:5432", in_recovery=True)
    down = RedisStatus(problem="unavailable: ConnectionError")
    pipe.services.replication = Seen(seen(standby, down))
    _, metrics = scrape(pipe, ADMIN)

    assert metrics["tilejudge_database_primary_up"] == [({}, 0)]
    assert metrics["tilejudge_redis_primary_up"] == [({}, 0)]
    assert "tilejudge_database_primary_info" not in metrics
    assert "tilejudge_redis_primary_info" not in metrics


# -- /readyz through a failover -------------------------------------------------------------


class Database(DatabaseProbe):
    """A PostgreSQL probe whose server reached takes writes or not, as the test says."""

    replicated = True  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__(engine=None)  # type: ignore[arg-type]
        self.read_only = True

    def check_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyDatabase("the database server reached is in recovery (a standby)")


class Redis(RedisProbe):
    def __init__(self) -> None:
        self.primary = True

    def check_primary(self) -> None:
        if not self.primary:
            raise ConnectionError("no primary")


def test_readyz_is_not_ready_while_the_database_reached_is_read_only_and_ready_after(
    pipe: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    database = Database()
    pipe.services.replication = ReplicationProbe(database, None)
    pings: list[int] = []
    monkeypatch.setattr(pipe.services.store, "ping", lambda: pings.append(1))

    answer = pipe.client.get("/readyz")
    assert answer.status_code == 503
    assert answer.json()["checks"]["sql"] == "unavailable: ReadOnlyDatabase"
    assert pings == []  # a standby would answer a ping: it is not what decides

    database.read_only = False  # the new primary reached
    assert dependency_checks(pipe.services)["sql"] == "ok"


def test_readyz_is_not_ready_while_redis_reached_is_no_primary(pipe: Pipeline) -> None:
    redis_probe = Redis()
    # A Redis configured: its probe decides.
    pipe.services.replication = ReplicationProbe(Database(), redis_probe)

    redis_probe.primary = False
    assert dependency_checks(pipe.services)["redis"] == "unavailable: ConnectionError"
    redis_probe.primary = True
    assert dependency_checks(pipe.services)["redis"] == "ok"


def test_on_sqlite_readyz_pings_the_store_as_before(
    pipe: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    pings: list[int] = []
    monkeypatch.setattr(pipe.services.store, "ping", lambda: pings.append(1))
    assert dependency_checks(pipe.services)["sql"] == "ok" and pings == [1]
