"""Every use of Redis through Sentinel: a primary, a replica and three sentinels on loopback,
the stack's own clients built from a `sentinel://` REDIS_URL, and a failover between them
(SENTINEL FAILOVER, the orderly one; the cluster suite kills and cuts off primaries).
"""

from __future__ import annotations

import secrets
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from devstack.ports import free_port
from devstack.process import Service, spawn
from devstack.redis_server import redis_server_binary, start_redis
from infra.compose import make_celery, make_redis
from infra.settings import Settings, SettingsError, sentinel_address

MASTER = "tilejudge"
WAIT_S = 60.0


@dataclass
class Group:
    password: str
    servers: list[Service]
    sentinels: list[tuple[subprocess.Popen[bytes], int]]

    @property
    def url(self) -> str:
        return ";".join(
            f"sentinel://:{self.password}@127.0.0.1:{port}/0" for _, port in self.sentinels
        )

    def settings(self) -> Settings:
        return Settings.from_env({"REDIS_URL": self.url, "TILEJUDGE_REDIS_MASTER": MASTER})

    def sentinel(self, n: int = 0) -> redis.Redis:
        return redis.Redis(
            port=self.sentinels[n][1],
            password=self.password,
            socket_timeout=2,
            decode_responses=True,
        )

    def primary_port(self) -> int:
        _, port = self.sentinel().sentinel_get_master_addr_by_name(MASTER)
        return int(port)


def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {WAIT_S:.0f} s: {what}")
        time.sleep(0.05)


ASK_AGAIN_S = 20.0  # a forced failover seen done by then was not aborted


def failed_over(group: Group, done: Callable[[], bool], what: str) -> None:
    """Ask a sentinel to fail the primary over, and again every ASK_AGAIN_S while `done` does
    not hold: Sentinel does not retry a forced failover it aborted (a promotion slower than its
    failover timeout, on a loaded machine), and answers INPROG while one is under way."""
    asked = -ASK_AGAIN_S

    def check() -> bool:
        nonlocal asked
        if done():
            return True
        if time.monotonic() - asked >= ASK_AGAIN_S:
            try:
                group.sentinel().execute_command("SENTINEL", "FAILOVER", MASTER)
            except redis.ResponseError as exc:
                if "INPROG" not in str(exc):
                    raise
            asked = time.monotonic()
        return False

    until(check, what)


def _synced(group: Group) -> bool:
    """Every sentinel names the same primary, knows the replica and the two other sentinels."""
    try:
        for n in range(len(group.sentinels)):
            master = group.sentinel(n).sentinel_master(MASTER)
            if int(master["num-other-sentinels"]) < 2 or int(master["num-slaves"]) < 1:
                return False
        return True
    except (redis.RedisError, KeyError):
        return False


@pytest.fixture(scope="module")
def group(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Group]:
    home: Path = tmp_path_factory.mktemp("sentinel")
    password = secrets.token_urlsafe(16)
    servers = [start_redis(home / f"redis{n}", password=password) for n in (1, 2)]
    sentinels: list[tuple[subprocess.Popen[bytes], int]] = []
    try:
        for server in servers:
            redis.Redis.from_url(server.url).config_set("masterauth", password)
        redis.Redis.from_url(servers[1].url).replicaof("127.0.0.1", servers[0].port)
        for n in range(3):
            port = free_port()
            conf = home / f"sentinel{n}.conf"
            conf.write_text(
                f"port {port}\nbind 127.0.0.1\nrequirepass {password}\n"
                f"sentinel monitor {MASTER} 127.0.0.1 {servers[0].port} 2\n"
                f"sentinel auth-pass {MASTER} {password}\n"
                f"sentinel down-after-milliseconds {MASTER} 1000\n"
                f"sentinel failover-timeout {MASTER} 5000\n"
            )
            argv = [redis_server_binary(), str(conf), "--sentinel"]
            sentinels.append((spawn(argv, home / f"sentinel{n}.log", cwd=home), port))
        made = Group(password, servers, sentinels)
        until(lambda: _synced(made), "three sentinels agreeing on a primary and its replica")
        yield made
    finally:
        for process, _ in sentinels:
            process.terminate()
            process.wait(10)
        for server in servers:
            server.stop()


def test_a_sentinel_url_is_read_as_kombu_reads_it() -> None:
    found = sentinel_address("sentinel://:p%40ss@a:26379;sentinel://:p%40ss@b/3")
    assert found is not None
    assert found.sentinels == (("a", 26379), ("b", 26379))
    assert (found.password, found.db) == ("p@ss", 3)
    assert sentinel_address("redis://:pw@a:6379/0") is None
    with pytest.raises(SettingsError, match="different"):
        sentinel_address("sentinel://:one@a:26379;sentinel://:two@b:26379")
    with pytest.raises(SettingsError, match="REDIS_URL"):
        Settings.from_env({"REDIS_URL": "sentinel://:pw@a:26379;redis://:pw@b:6379"})


def test_the_stacks_redis_client_and_broker_follow_a_failover(group: Group) -> None:
    settings = group.settings()
    client = make_redis(settings)
    client.set("before", "1")
    app = make_celery(settings)
    with app.connection_for_write() as connection:
        queue = connection.SimpleQueue("sentinel-test")
        queue.put({"n": 1})
        assert queue.get(timeout=5).payload == {"n": 1}
        old = group.primary_port()
        until(
            lambda: (
                int(
                    redis.Redis.from_url(group.servers[0].url).info("replication")[
                        "connected_slaves"
                    ]
                )
                >= 1
            ),
            "the replica in sync",
        )
        failed_over(
            group, lambda: group.primary_port() != old, "the sentinels naming a new primary"
        )
        new = group.primary_port()
        until(
            lambda: redis.Redis(port=new, password=group.password).role()[0] == b"master",
            "the new primary taking writes",
        )
        # The same client and the same broker connection, no restart: each reaches the new one
        # once the sentinels it asks agree (for a moment after a failover they may not).
        until(
            lambda: client.connection_pool.get_master_address()[1] == new,
            "the stack's client naming the new primary",
        )
        until(lambda: _writes(client), "the stack's client writing again")
        direct = redis.Redis(port=new, password=group.password)
        assert direct.get("before") == b"1"  # replicated before the failover
        assert direct.get("after") == b"1"
        queue.put({"n": 2})
        assert queue.get(timeout=10).payload == {"n": 2}
        queue.close()
    # The old primary is made a replica of the new one: it takes no more writes.
    old_server = next(s for s in group.servers if s.port == old)
    until(lambda: _role(old_server.url) == b"slave", "the old primary turned replica")
    with pytest.raises(redis.ReadOnlyError):
        redis.Redis.from_url(old_server.url).set("fenced", "1")


def _role(url: str) -> bytes | None:
    """The server's role; None while it cannot answer: turning a primary into a replica, Redis
    closes its clients' connections, a reading caught in that gets its connection reset."""
    try:
        role: bytes = redis.Redis.from_url(url).role()[0]
        return role
    except redis.ConnectionError:
        return None


def _writes(client: redis.Redis) -> bool:
    try:
        client.set("after", "1")
        return True
    except redis.RedisError:
        return False


def test_a_connection_whose_server_is_a_replica_now_fails_its_health_check(group: Group) -> None:
    """A replica answers PING and takes PUBLISH (handing the message to its own subscribers
    alone): a client still connected to an old primary would lose broadcasts without an error.
    The stack's connections ask ROLE instead, and drop such a server."""
    client = make_redis(group.settings())
    pool = client.connection_pool
    primary = pool.get_master_address()
    replica = next(("127.0.0.1", s.port) for s in group.servers if s.port != primary[1])
    connection = pool.get_connection()
    try:
        connection.check_health()  # the primary: healthy
        connection.disconnect()
        connection.connect_to(replica)  # as if it had been made a replica meanwhile
        connection.next_health_check = 0.0
        with pytest.raises(redis.ConnectionError, match=r"is a (slave|replica) now"):
            connection.check_health()
    finally:
        pool.release(connection)
