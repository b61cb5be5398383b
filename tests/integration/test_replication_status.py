"""The replication probes against real servers: PostgreSQL (the primary reached, a walsender as
a standby seen with and without pg_monitor, a server read-only by default that `/readyz` says
is not ready), a Redis primary with a replica whose lag grows while it is stopped, and three
sentinels whose failover the watch sees.
"""

from __future__ import annotations

import os
import secrets
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
import redis
from psycopg import sql
from sqlalchemy.engine import Engine, make_url

from devstack.process import Service as RedisServer
from devstack.redis_server import start_redis
from devstack.testing.pipeline import open_pipeline
from infra import replication
from infra.compose import make_redis, replication_probe
from infra.replication import (
    DatabaseProbe,
    NoRedisPrimary,
    ReadOnlyDatabase,
    RedisProbe,
    ReplicationProbe,
    Service,
)
from infra.sql.engine import make_engine
from tests.integration.conftest import POSTGRES_ONLY, POSTGRES_URL
from tests.integration.test_redis_sentinel import (  # noqa: F401  (`group` is a fixture)
    Group,
    failed_over,
    group,
    until,
)

pytestmark = pytest.mark.integration


def _with_options(url: str, options: str) -> str:
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}options={quote(options, safe='')}"


@pytest.fixture
def engine(sql_url: str) -> Iterator[Engine]:
    made = make_engine(sql_url)
    yield made
    made.dispose()


@pytest.fixture
def walsender() -> Iterator[str]:
    """A replication connection (as a standby's walreceiver opens), idle in its startup state:
    the primary lists it in pg_stat_replication under its application_name."""
    name = f"standby-{uuid.uuid4().hex[:8]}"
    url = make_url(POSTGRES_URL).set(query={"replication": "database", "application_name": name})
    try:
        conn = psycopg.connect(
            url.render_as_string(hide_password=False), autocommit=True, connect_timeout=10
        )
    except psycopg.OperationalError as exc:
        pytest.skip(f"the test role may not open a replication connection here: {exc}")
    with conn:
        yield name


@pytest.fixture
def unmonitored_url() -> Iterator[str]:
    """A login role that is not a member of pg_monitor, dropped afterwards."""
    role, password = f"tj_probe_{uuid.uuid4().hex[:8]}", secrets.token_urlsafe(12)
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        try:
            admin.execute(
                sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                    sql.Identifier(role), sql.Literal(password)
                )
            )
        except psycopg.errors.InsufficientPrivilege:
            pytest.skip("the test role may not create roles")
    try:
        yield (
            make_url(POSTGRES_URL)
            .set(username=role, password=password)
            .render_as_string(hide_password=False)
        )
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


# -- PostgreSQL -----------------------------------------------------------------------------


@POSTGRES_ONLY
def test_the_primary_reached_is_named_with_its_timeline_and_takes_writes(engine: Engine) -> None:
    probe = DatabaseProbe(engine)
    status = probe.status()

    where = make_url(POSTGRES_URL)
    assert status.problem is None and status.replicated and status.primary is not None
    if where.host == "127.0.0.1":
        assert status.primary == f"127.0.0.1:{where.port or 5432}"
    assert isinstance(status.timeline, int) and status.timeline >= 1
    assert status.system_identifier and status.system_identifier.isdigit()
    probe.check_writable()


@POSTGRES_ONLY
def test_a_standby_connected_to_the_primary_is_listed_with_its_state(
    engine: Engine, walsender: str
) -> None:
    [standby] = [s for s in DatabaseProbe(engine).status().standbys if s.name == walsender]
    assert (standby.state, standby.sync_state) == ("startup", "async")
    assert standby.address is not None
    # Nothing replayed yet: no lag to speak of, and no failure for it.
    assert standby.lag_seconds is None and standby.lag_bytes is None


@pytest.mark.postgres
@pytest.mark.skipif(not POSTGRES_URL, reason="no PostgreSQL to test against")
def test_a_role_outside_pg_monitor_sees_a_standbys_name_and_nothing_fails(
    unmonitored_url: str, walsender: str
) -> None:
    engine = make_engine(unmonitored_url)
    try:
        status = DatabaseProbe(engine).status()
    finally:
        engine.dispose()
    assert status.problem is None and status.primary is not None
    [standby] = [s for s in status.standbys if s.name == walsender]
    assert (standby.address, standby.state, standby.sync_state) == (None, None, None)


@pytest.mark.postgres
@pytest.mark.skipif(not POSTGRES_URL, reason="no PostgreSQL to test against")
def test_readyz_is_not_ready_while_the_database_reached_is_read_only(tmp_path: Path) -> None:
    read_only = make_engine(_with_options(POSTGRES_URL, "-c default_transaction_read_only=on"))
    writable = make_engine(POSTGRES_URL)
    try:
        status = DatabaseProbe(read_only).status()
        assert status.read_only and status.primary is None and status.address is not None
        with pytest.raises(ReadOnlyDatabase):
            DatabaseProbe(read_only).check_writable()

        with open_pipeline(tmp_path) as pipe:
            pipe.services.replication = ReplicationProbe(DatabaseProbe(read_only), None)
            answer = pipe.client.get("/readyz")
            assert answer.status_code == 503
            assert answer.json()["checks"]["sql"] == "unavailable: ReadOnlyDatabase"
            DatabaseProbe(writable).check_writable()  # the primary once it takes writes again
    finally:
        read_only.dispose()
        writable.dispose()


# -- Redis ----------------------------------------------------------------------------------


def test_a_lone_redis_is_its_own_primary_with_no_replicas(
    redis_url: str, redis_service: RedisServer
) -> None:
    probe = RedisProbe(redis.Redis.from_url(redis_url))
    status = probe.status()
    assert (status.address, status.role, status.replicas) == (
        f"127.0.0.1:{redis_service.port}", "master", ())  # fmt: skip
    assert status.primary == status.address and status.sentinels is None
    probe.check_primary()


@pytest.fixture
def replicated(tmp_path: Path) -> Iterator[tuple[RedisServer, RedisServer]]:
    """A primary and a replica of it, in sync."""
    password = secrets.token_urlsafe(16)
    primary = start_redis(tmp_path / "primary", password=password)
    replica = start_redis(tmp_path / "replica", password=password)
    try:
        client = redis.Redis.from_url(replica.url)
        client.config_set("masterauth", password)
        # A replica still writing the append-only file of its first sync refuses SIGTERM.
        client.config_set("appendonly", "no")
        client.replicaof("127.0.0.1", primary.port)
        probe = RedisProbe(redis.Redis.from_url(primary.url))
        until(
            lambda: [r.state for r in probe.status().replicas] == ["online"],
            "the replica online",
        )
        yield primary, replica
    finally:
        os.kill(replica.process.pid, signal.SIGCONT)
        replica.stop()
        primary.stop()


def test_a_replicas_lag_grows_while_it_is_stopped_and_closes_once_it_runs(
    replicated: tuple[RedisServer, RedisServer],
) -> None:
    primary, replica = replicated
    probe = RedisProbe(redis.Redis.from_url(primary.url))
    [seen] = probe.status().replicas
    assert seen.address == f"127.0.0.1:{replica.port}"

    os.kill(replica.process.pid, signal.SIGSTOP)
    redis.Redis.from_url(primary.url).set("payload", b"x" * 10_000)
    [behind] = probe.status().replicas
    assert behind.lag_bytes is not None and behind.lag_bytes >= 10_000
    until(lambda: (probe.status().replicas[0].lag_seconds or 0) >= 2, "seconds since its ack")

    os.kill(replica.process.pid, signal.SIGCONT)
    until(lambda: probe.status().replicas[0].lag_bytes == 0, "the replica caught up")


def test_a_replica_reached_is_not_ready_and_names_its_primary(
    replicated: tuple[RedisServer, RedisServer],
) -> None:
    primary, replica = replicated
    probe = RedisProbe(redis.Redis.from_url(replica.url))
    status = probe.status()
    assert (status.role, status.primary) == ("slave", None)
    assert status.replica_of == f"127.0.0.1:{primary.port}"
    with pytest.raises(NoRedisPrimary):
        probe.check_primary()


def test_the_sentinels_are_asked_and_a_failover_is_seen_once(
    group: Group,  # noqa: F811  (the fixture imported above)
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events: list[dict[str, object]] = []

    class Recorded:
        def warning(self, event: str, **fields: object) -> None:
            events.append({"event": event, **fields})

    monkeypatch.setattr(replication, "log", Recorded())
    settings = group.settings()
    engine = make_engine(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    probe = replication_probe(settings, engine, make_redis(settings))
    old = f"127.0.0.1:{group.primary_port()}"

    first = probe.status()
    assert first.redis is not None and first.redis.sentinels is not None
    assert (first.redis.sentinels.asked, first.redis.sentinels.answered) == (3, 3)
    assert first.redis.sentinels.primary == old == first.redis.primary
    assert len(first.redis.replicas) == 1 and first.failovers == ()

    failed_over(group, lambda: probe.status().failovers_seen[Service.REDIS] == 1, "it seen")
    new = f"127.0.0.1:{group.primary_port()}"
    last = probe.status()
    assert new != old
    assert [(f.service, f.old, f.new) for f in last.failovers] == [(Service.REDIS, old, new)]
    assert events == [{"event": "failover.seen", "service": "redis", "old": old, "new": new}]
    engine.dispose()
