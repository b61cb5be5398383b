"""Highly available PostgreSQL and Redis for the cluster test, on hosts of `netns.Network`, run
by trusted managers only: Patroni with etcd for PostgreSQL, Redis Sentinel for Redis.

`PatroniGroup`: on each host an etcd member (one etcd cluster across the hosts) and a Patroni
managing a PostgreSQL. Synchronous mode, so a commit that returns is on two hosts while a
standby is in sync; pg_rewind, so a primary that comes back rejoins as a replica on its own; a
leader key short-lived enough that a primary killed or cut off is replaced in about ten seconds.

`SentinelGroup`: a Redis primary and a replica, and three Sentinels that promote the replica
within a few seconds of the primary going silent.

Either manager needs a majority to act (of the etcd members, of the Sentinels): with 2 of 3 gone
nothing is promoted, so a test that takes down a second host brings the first back before.

The caller creates and owns the hosts (and tears them down); the thread calling these methods
may sit in any namespace of the same bridge, as the client host's does. Every wait polls a
condition with `wait_for`, bounded, and fails with the tail of the managers' logs.
"""

from __future__ import annotations

import json
import secrets
import shutil
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
import psycopg
import redis
from psycopg import sql
from redis.backoff import NoBackoff
from redis.retry import Retry
from redis.sentinel import Sentinel

from devstack.redis_server import redis_server_binary
from tests.cluster import netns
from tests.cluster.netns import START_TIMEOUT_S, Host, NetnsError, wait_for

PATRONI = "/usr/bin/patroni"  # Debian's, on the system python3 (and its psycopg2)
ETCD = "/usr/bin/etcd"
SENTINEL = "/usr/bin/redis-sentinel"  # Debian's redis-sentinel
ETCD_CLIENT_PORT, ETCD_PEER_PORT = 2379, 2380
POSTGRES_PORT, PATRONI_PORT = 5432, 8008
REDIS_PORT, SENTINEL_PORT = 6379, 26379
REPLICATION_USER, REWIND_USER = "replicator", "rewinder"

# Patroni: the primary renews its leader key (TTL_S) each loop (LOOP_WAIT_S); once it expires the
# replicas, watching it, race at once. Patroni requires loop_wait + 2 * retry_timeout <= ttl;
# 3.0.2 enforces no minimum, later versions raise ttl to 20 and retry_timeout to 3 (failover
# would take 20 s and more). retry_timeout bounds each etcd or PostgreSQL call: an etcd election
# must fit in it, or the primary demotes itself when the etcd leader's host goes.
TTL_S, LOOP_WAIT_S, RETRY_TIMEOUT_S = 8, 1, 3
# etcd's defaults, written out: an election takes 1 to 2 s. (Over the v3 API a new etcd leader
# would also extend every lease by an election timeout; v2 TTLs run on.) Shorter timers bring
# spurious elections on a loaded two-core machine.
ETCD_HEARTBEAT_MS, ETCD_ELECTION_MS = 100, 1000
# Sentinel: a primary silent this long is down for one Sentinel, and with QUORUM agreeing it is
# failed over; a failover that stalls is retried after FAILOVER_TIMEOUT_MS, and one Sentinel
# does not fail the same master over again within twice that.
DOWN_AFTER_MS, FAILOVER_TIMEOUT_MS, QUORUM = 1000, 5000, 2
# One probe of one member: a host cut off does not refuse a connection, it stays silent.
PROBE_S = 1.0

_T = TypeVar("_T")


def _once() -> Retry:
    """No retries for a Redis client: redis-py's default retries 3 times with backoff from 1 s
    (a silent host costs 10 s or more a call); the callers' bounded loops do the retrying."""
    return Retry(NoBackoff(), 0)


class _Group(ABC):
    """What both groups share: their hosts, the labels of the processes they spawn, bounded
    waits that fail early when one of those processes exits, with the tail of the logs."""

    labels: tuple[str, ...] = ()

    def __init__(self, hosts: Sequence[Host]) -> None:
        self._hosts = list(dict.fromkeys(hosts))

    @abstractmethod
    def restart(self, host: Host) -> None: ...

    @abstractmethod
    def primary(self) -> str | None: ...

    @abstractmethod
    def wait_replica(self, host_name: str, timeout: float = START_TIMEOUT_S) -> float: ...

    def _serves(self, name: str) -> bool:
        """Whether the primary `primary()` names says so itself."""
        return True

    def wait_primary(self, other_than: str | None = None, timeout: float = 60) -> str:
        def elected() -> str | None:
            name = self.primary()
            return name if name not in (None, other_than) and self._serves(name) else None

        return self._wait_found(elected, timeout, f"a primary other than {other_than}")

    def logs(self, tail: int = 2500) -> str:
        return "\n".join(
            f"--- {host.name} {label}:\n{host.log(label, tail)}"
            for host in self._hosts
            for label in self.labels
            if (host.home / "logs" / f"{label}.log").exists()
        )

    def _wait(self, condition: Callable[[], bool], timeout: float, what: str) -> float:
        def check() -> bool:
            for host in self._hosts:  # a killed host's processes are no longer listed
                for label, proc in host.processes.items():
                    if label in self.labels and not proc.running:
                        raise NetnsError(f"{label} on {host.name} exited {proc.popen.returncode}")
            return condition()

        try:
            return wait_for(check, timeout, what)
        except NetnsError as exc:
            raise NetnsError(f"{exc}\n{self.logs()}") from None

    def _wait_found(self, find: Callable[[], str | None], timeout: float, what: str) -> str:
        """What `find` returns once it is not None."""
        found: list[str] = []

        def check() -> bool:
            found[:] = [value] if (value := find()) is not None else []
            return bool(found)

        self._wait(check, timeout, what)
        return found[0]

    @staticmethod
    def _ask_all(ask: Callable[[Host], _T], hosts: Sequence[Host]) -> list[_T]:
        """`ask` of every host at once: a silent host costs one probe timeout, not one each.
        (The pool's threads are born in the caller's network namespace.)"""
        with ThreadPoolExecutor(len(hosts)) as pool:
            return list(pool.map(ask, hosts))


class PatroniGroup(_Group):
    """An etcd member and a Patroni-managed PostgreSQL on each host (three hosts)."""

    labels = ("etcd", "patroni")

    def __init__(
        self, hosts: Sequence[Host], *, app_user: str, app_password: str, scope: str = "tilejudge"
    ) -> None:
        super().__init__(hosts)
        self.hosts = {host.name: host for host in hosts}
        self.app_user, self.app_password, self.scope = app_user, app_password, scope
        users = ("postgres", REPLICATION_USER, REWIND_USER)
        self._passwords = {user: secrets.token_urlsafe(18) for user in users}
        self._dirs: dict[str, Path] = {}
        self._answered: str | None = None  # the member that answered last, asked first

    # -- starting -----------------------------------------------------------------------------

    def start(self) -> None:
        """etcd, then Patroni everywhere; returns once a leader runs, the app role and database
        exist, and both replicas stream, one of them synchronous."""
        for host in self._hosts:
            self._prepare(host)
            self._spawn_etcd(host, "new")
        # Patroni that finds no etcd sleeps 5 s before asking again: start it on a quorum.
        self._wait(lambda: all(self._ask_all(self._etcd_healthy, self._hosts)),
                   START_TIMEOUT_S, "etcd healthy on every host")  # fmt: skip
        for host in self._hosts:
            self._spawn_patroni(host)
        leader = self.wait_primary(timeout=START_TIMEOUT_S)
        role = sql.Identifier(self.app_user)
        try:  # pg_monitor: the app reads pg_stat_replication
            with closing(self._superuser(leader)) as conn:
                conn.execute(sql.SQL("CREATE ROLE {} LOGIN CREATEDB IN ROLE pg_monitor PASSWORD {}")
                             .format(role, sql.Literal(self.app_password)))  # fmt: skip
                conn.execute(sql.SQL("CREATE DATABASE tilejudge OWNER {}").format(role))
        except psycopg.Error as exc:
            raise NetnsError(f"creating {self.app_user} on {leader}: {exc}\n{self.logs()}") from exc
        for name in set(self.hosts) - {leader}:
            self.wait_replica(name, START_TIMEOUT_S)

    def restart(self, host: Host) -> None:
        """etcd (on its data) and Patroni again on a host whose processes were all killed;
        Patroni rewinds the old data directory and rejoins as a replica (see `wait_replica`)."""
        self._spawn_etcd(host, "existing")
        self._spawn_patroni(host)

    def _prepare(self, host: Host) -> None:
        # Patroni and postgres run as the postgres user, who cannot enter the test's work dir.
        pg_dir = Path(tempfile.mkdtemp(prefix=f"{host.network.prefix}-{host.name}-pg-"))
        host.network.leave_behind(pg_dir)
        shutil.chown(pg_dir, "postgres", "postgres")
        config = pg_dir / "patroni.yml"
        config.write_text(json.dumps(self._config(host, pg_dir), indent=1))  # JSON is YAML
        config.chmod(0o600)
        shutil.chown(config, "postgres", "postgres")
        self._dirs[host.name] = pg_dir

    def _config(self, host: Host, pg_dir: Path) -> dict[str, Any]:
        parameters = {
            "max_connections": 300,
            "shared_buffers": "64MB",
            # A host cut off inside a transaction would hold its locks until TCP gives up.
            "idle_in_transaction_session_timeout": "5s",
            "fsync": "off",  # throwaway data; a killed host loses processes, not page cache
            "synchronous_commit": "on",  # a commit waits for the synchronous standby
            "wal_log_hints": "on",  # pg_rewind needs it (and full_page_writes, left on)
            # A standby whose new primary has no slot for it yet retries in 0.5 s, not 5 s:
            # until it streams there is no synchronous standby, and no failover either.
            "wal_retrieve_retry_interval": "500ms",
        }
        passwords, address, subnet = self._passwords, host.address, host.network.subnet
        return {
            "scope": self.scope,
            "name": host.name,
            "restapi": {"listen": f"{address}:{PATRONI_PORT}",
                        "connect_address": f"{address}:{PATRONI_PORT}"},
            # etcd's v2 API, not v3: Patroni 3.0.2's etcd3 code rewrites the leader key
            # without comparing it when its lease has expired (fixed in 3.0.3, patroni#2689),
            # so a primary frozen past its TTL takes the lock back from its successor on
            # waking, and the successor's acknowledged commits are rewound away. Over v2 it
            # renews by compare-and-swap on its own name, fails, and demotes.
            "etcd": {"hosts": [f"{h.address}:{ETCD_CLIENT_PORT}" for h in self._hosts]},
            "bootstrap": {
                "dcs": {"ttl": TTL_S, "loop_wait": LOOP_WAIT_S, "retry_timeout": RETRY_TIMEOUT_S,
                        "maximum_lag_on_failover": 1 << 20,
                        # Strict: a primary with no synchronous standby (just promoted, or
                        # both standbys down) holds its commits rather than acknowledge them
                        # on one host. Intake waits, or answers 503; never a lone 202.
                        "synchronous_mode": True, "synchronous_mode_strict": True,
                        "synchronous_node_count": 1,
                        "postgresql": {"use_pg_rewind": True, "use_slots": True,
                                       "parameters": parameters}},
                "initdb": [{"encoding": "UTF8"}, {"locale": "C"}],
            },
            "postgresql": {
                "listen": f"{address}:{POSTGRES_PORT}",
                "connect_address": f"{address}:{POSTGRES_PORT}",
                "data_dir": str(pg_dir / "data"),
                "bin_dir": str(Path(netns._postgres_bin("postgres")).parent),
                # Each its own: the default ~/.pgpass and /var/run/postgresql are one file and
                # one socket for every host of the machine (mount namespaces are not split).
                "pgpass": str(pg_dir / "pgpass"),
                "use_unix_socket": True,
                "parameters": {"unix_socket_directories": str(pg_dir)},
                "authentication": {
                    "superuser": {"username": "postgres", "password": passwords["postgres"]},
                    "replication": {"username": REPLICATION_USER,
                                    "password": passwords[REPLICATION_USER]},
                    "rewind": {"username": REWIND_USER, "password": passwords[REWIND_USER]},
                },
                "pg_hba": [
                    "local all all trust",  # the socket's directory is the postgres user's
                    f"host replication {REPLICATION_USER} {subnet} scram-sha-256",
                    f"host all all {subnet} scram-sha-256",
                ],
                # pg_basebackup waits for a spread checkpoint (minutes) unless told otherwise.
                "basebackup": [{"checkpoint": "fast"}],
                # A rewind that fails leaves a replica that never starts: copy afresh instead.
                "remove_data_directory_on_rewind_failure": True,
            },
            "watchdog": {"mode": "off"},  # no /dev/watchdog here: the leader key alone fences
        }  # fmt: skip

    def _spawn_etcd(self, host: Host, state: str) -> None:
        client = f"http://{host.address}:{ETCD_CLIENT_PORT}"
        peer = f"http://{host.address}:{ETCD_PEER_PORT}"
        cluster = ",".join(f"{h.name}=http://{h.address}:{ETCD_PEER_PORT}" for h in self._hosts)
        argv = [ETCD, "--name", host.name, "--data-dir", str(host.home / "etcd"),
                "--listen-client-urls", client, "--advertise-client-urls", client,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", cluster, "--initial-cluster-state", state,
                "--initial-cluster-token", f"{self.scope}-{host.network.run}",
                "--heartbeat-interval", str(ETCD_HEARTBEAT_MS),
                "--election-timeout", str(ETCD_ELECTION_MS),
                "--enable-v2=true", "--logger", "zap", "--log-outputs", "stderr"]  # fmt: skip
        env = {k: v for k, v in netns._role_env().items() if not k.startswith("ETCD_")}
        host.spawn("etcd", argv, env)

    def _spawn_patroni(self, host: Host) -> None:
        pg_dir = self._dirs[host.name]
        # None of the test's Python, PATRONI_ or libpq settings: they would override the file.
        dropped = ("PYTHON", "PATRONI_", "PG", "VIRTUAL_ENV")
        env = {k: v for k, v in netns._role_env().items() if not k.startswith(dropped)}
        env["HOME"] = str(pg_dir)
        host.spawn("patroni", [PATRONI, str(pg_dir / "patroni.yml")], env,
                   user="postgres", cwd=pg_dir)  # fmt: skip

    def _etcd_healthy(self, host: Host) -> bool:
        try:
            url = f"http://{host.address}:{ETCD_CLIENT_PORT}/health"
            return bool(httpx.get(url, timeout=PROBE_S).json().get("health") == "true")
        except (httpx.HTTPError, ValueError):
            return False

    # -- observing ----------------------------------------------------------------------------

    def url(self, database: str = "tilejudge") -> str:
        hosts = ",".join(f"{h.address}:{POSTGRES_PORT}" for h in self._hosts)
        user, password = quote(self.app_user, safe=""), quote(self.app_password, safe="")
        return f"postgresql://{user}:{password}@{hosts}/{database}?target_session_attrs=read-write"

    def _rest(self, name: str, path: str) -> tuple[int, Any] | None:
        try:
            url = f"http://{self.hosts[name].address}:{PATRONI_PORT}/{path}"
            answer = httpx.get(url, timeout=PROBE_S)
            return answer.status_code, answer.json()
        except (httpx.HTTPError, ValueError):
            return None

    def members(self) -> dict[str, dict[str, Any]]:
        """Host name -> Patroni's view of the member (role, state, lag, timeline...), from the
        first member that answers `GET /cluster`; {} if none does."""
        for name in sorted(self.hosts, key=lambda name: name != self._answered):
            answer = self._rest(name, "cluster")
            if answer is not None and answer[0] == 200 and isinstance(answer[1], dict):
                self._answered = name
                return {str(m["name"]): m for m in answer[1].get("members", [])}
        return {}

    def primary(self) -> str | None:
        """The leader per the cluster view, if it runs and says itself that it holds the lock
        (a killed leader stays in the view until its key expires)."""
        for name, member in self.members().items():
            if member.get("role") == "leader" and member.get("state") == "running":
                answer = self._rest(name, "primary")
                return name if answer is not None and answer[0] == 200 else None
        return None

    def wait_replica(self, host_name: str, timeout: float = START_TIMEOUT_S) -> float:
        """Seconds until the member runs as a replica, the primary sees it streaming, and a
        synchronous standby is recorded (see `wait_synchronous`: the group can fail over)."""

        def streaming() -> bool:
            member = self.members().get(host_name, {})
            if member.get("role") not in ("replica", "sync_standby"):
                return False
            if member.get("state") not in ("running", "streaming"):  # "streaming" from 3.0.4
                return False
            leader = self.primary()
            rows = self._replication(leader) if leader is not None else []
            if not any(name == host_name and state == "streaming" for name, state, _ in rows):
                return False
            return self._synchronous() is not None

        return self._wait(streaming, timeout, f"{host_name} streaming as a replica")

    def wait_synchronous(self, timeout: float = START_TIMEOUT_S) -> str:
        """The synchronous standby, once Patroni has recorded one that the primary has in sync.
        Until then the primary holds its commits (synchronous_mode_strict) and Patroni fails
        over to no one (none is sure to hold every commit): after a failover, wait for this
        before taking another host down."""
        return self._wait_found(self._synchronous, timeout, "a synchronous standby")

    def _synchronous(self) -> str | None:
        members, leader = self.members(), self.primary()
        rows = self._replication(leader) if leader is not None else []
        in_sync = [n for n, state, sync in rows if (state, sync) == ("streaming", "sync")]
        named = [n for n in in_sync if members.get(n, {}).get("role") == "sync_standby"]
        return named[0] if named else None

    def _replication(self, leader: str) -> list[tuple[str, str, str]]:
        """(application name = member, state, sync_state) of each standby the leader serves."""
        try:
            with closing(self._superuser(leader)) as conn:
                query = "SELECT application_name, state, sync_state FROM pg_stat_replication"
                return [(str(a), str(b), str(c)) for a, b, c in conn.execute(query).fetchall()]
        except psycopg.Error:
            return []

    def _superuser(self, name: str) -> psycopg.Connection[Any]:
        return psycopg.connect(
            host=self.hosts[name].address, port=POSTGRES_PORT, user="postgres",
            password=self._passwords["postgres"], dbname="postgres", autocommit=True,
            connect_timeout=2,
        )  # fmt: skip

    def connect(self, host_name: str, autocommit: bool = True) -> psycopg.Connection[Any]:
        """The app user on one member, whatever its role (for fencing checks)."""
        return psycopg.connect(
            host=self.hosts[host_name].address, port=POSTGRES_PORT, user=self.app_user,
            password=self.app_password, dbname="tilejudge", autocommit=autocommit,
            connect_timeout=3, target_session_attrs="any",
        )  # fmt: skip


class SentinelGroup(_Group):
    """A Redis primary and a replica, watched by three Sentinels."""

    labels = ("redis", "sentinel")

    def __init__(
        self,
        redis_hosts: Sequence[Host],
        sentinel_hosts: Sequence[Host],
        *,
        password: str,
        master_name: str = "tilejudge",
    ) -> None:
        if len(redis_hosts) != 2 or len(sentinel_hosts) != 3:
            raise ValueError("a SentinelGroup is 2 Redis hosts and 3 Sentinel hosts")
        super().__init__([*redis_hosts, *sentinel_hosts])
        self.redis_hosts = {host.name: host for host in redis_hosts}
        self.sentinel_hosts = list(sentinel_hosts)
        self.password, self.master_name = password, master_name
        self._by_address = {host.address: host.name for host in redis_hosts}

    def start(self) -> None:
        """The primary, its replica and the Sentinels; returns once the replica is in sync and
        every Sentinel names the primary, knows the replica and sees the two others."""
        first, second = self.redis_hosts.values()
        self._spawn_redis(first, None)
        self._spawn_redis(second, first.address)
        # Sentinels learn replicas from the master's INFO, asked every 10 s: started once the
        # replica is attached, they know it from their first.
        self._wait(lambda: self._replicates(second.name, first.name), START_TIMEOUT_S,
                   f"{second.name} replicating {first.name}")  # fmt: skip
        for host in self.sentinel_hosts:
            self._write_sentinel_config(host, first.address)
            self._spawn_sentinel(host)
        self.wait_replica(second.name, START_TIMEOUT_S)

        def agreed(host: Host) -> bool:
            try:
                with self._sentinel(host) as sentinel:
                    state = sentinel.sentinel_master(self.master_name)
            except redis.RedisError:
                return False
            return bool(state["ip"] == first.address and state["num-other-sentinels"] == 2)

        self._wait(lambda: all(self._ask_all(agreed, self.sentinel_hosts)), START_TIMEOUT_S,
                   "three Sentinels agreeing on the primary and seeing each other")  # fmt: skip

    def restart(self, host: Host) -> None:
        """Redis and its Sentinel again on a host whose processes were all killed. Redis comes
        back as a replica of the primary the Sentinels name: started as a primary on its old
        data it would take writes for the 8 s or so Sentinel waits before reconfiguring a
        returning master. It is a primary only if the Sentinels still name it."""
        if host.name in self.redis_hosts:
            primary = self.primary()
            master = None if primary in (None, host.name) else self.redis_hosts[primary].address
            self._spawn_redis(host, master)
        if host in self.sentinel_hosts:
            self._spawn_sentinel(host)  # on the configuration it rewrote, with its id and epoch

    def _spawn_redis(self, host: Host, master: str | None) -> None:
        data = host.home / "redis"
        data.mkdir(exist_ok=True)
        argv = [
            redis_server_binary(),
            *("--bind", host.address, "--port", str(REDIS_PORT), "--dir", str(data)),
            *("--requirepass", self.password, "--masterauth", self.password),
            *("--appendonly", "yes", "--appendfsync", "everysec", "--save", ""),
            *("--maxmemory-policy", "noeviction", "--daemonize", "no"),
            # Full syncs straight over the socket, without the default 5 s wait for company.
            *("--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"),
        ]
        if master is not None:
            argv += ["--replicaof", master, str(REDIS_PORT)]
        host.spawn("redis", argv, netns._role_env(), cwd=data)

    def _write_sentinel_config(self, host: Host, master: str) -> None:
        # Sentinel rewrites this file (its id, epochs, the peers and replicas it learns): it
        # lives in the host's work dir, writable, and a restart reads it back.
        home = host.home / "sentinel"
        home.mkdir(exist_ok=True)
        name, password = self.master_name, json.dumps(self.password)  # a quoted Redis string
        lines = [
            f"bind {host.address}",
            f"port {SENTINEL_PORT}",
            f"dir {home}",
            f"requirepass {password}",  # Sentinels also give it to each other
            # Addresses only, as given: no DNS in the namespaces. Both before `monitor`.
            "sentinel resolve-hostnames no",
            "sentinel announce-hostnames no",
            f"sentinel announce-ip {host.address}",
            f"sentinel announce-port {SENTINEL_PORT}",
            f"sentinel monitor {name} {master} {REDIS_PORT} {QUORUM}",
            # The master's settings name it, so they follow `monitor`.
            f"sentinel auth-pass {name} {password}",
            f"sentinel down-after-milliseconds {name} {DOWN_AFTER_MS}",
            f"sentinel failover-timeout {name} {FAILOVER_TIMEOUT_MS}",
            f"sentinel parallel-syncs {name} 1",
        ]
        (home / "sentinel.conf").write_text("\n".join(lines) + "\n")

    def _spawn_sentinel(self, host: Host) -> None:
        home = host.home / "sentinel"
        argv = [SENTINEL, str(home / "sentinel.conf")]
        host.spawn("sentinel", argv, netns._role_env(), cwd=home)

    # -- observing ----------------------------------------------------------------------------

    def url(self, db: int = 0) -> str:
        """kombu's form: one sentinel:// per Sentinel, `;`-separated, the database at the end."""
        password = quote(self.password, safe="")
        hosts = [f"sentinel://:{password}@{h.address}:{SENTINEL_PORT}" for h in self.sentinel_hosts]
        return ";".join(hosts) + f"/{db}"

    def _sentinel(self, host: Host) -> redis.Redis:
        return redis.Redis(
            host=host.address, port=SENTINEL_PORT, password=self.password, decode_responses=True,
            socket_timeout=PROBE_S, socket_connect_timeout=PROBE_S, retry=_once(),
        )  # fmt: skip

    def _named(self, host: Host) -> str | None:
        """The master's address as this Sentinel names it; None if it does not answer."""
        try:
            with self._sentinel(host) as sentinel:
                found = sentinel.sentinel_get_master_addr_by_name(self.master_name)
        except redis.RedisError:
            return None
        return str(found[0]) if found else None

    def primary(self) -> str | None:
        """The host named master by most of the Sentinels that answer; None if none does."""
        named = [a for a in self._ask_all(self._named, self.sentinel_hosts) if a is not None]
        return self._by_address.get(max(set(named), key=named.count)) if named else None

    def _serves(self, name: str) -> bool:
        try:
            with self.client(name, decode=True, timeout=PROBE_S) as node:
                return bool(node.role()[0] == "master")
        except redis.RedisError:
            return False

    def wait_replica(self, host_name: str, timeout: float = START_TIMEOUT_S) -> float:
        """Seconds until the node replicates the Sentinels' master, in sync, and every Sentinel
        that answers (at least a quorum) lists it as a replica that is up."""
        address = self.redis_hosts[host_name].address

        def known(host: Host) -> bool | None:
            try:
                with self._sentinel(host) as sentinel:
                    replicas = sentinel.sentinel_slaves(self.master_name)
            except redis.RedisError:
                return None
            return any(r["ip"] == address and not r["is_sdown"] and not r["is_disconnected"]
                       for r in replicas)  # fmt: skip

        def replicating() -> bool:
            primary = self.primary()
            if primary is None or primary == host_name or not self._replicates(host_name, primary):
                return False
            views = [v for v in self._ask_all(known, self.sentinel_hosts) if v is not None]
            return len(views) >= QUORUM and all(views)

        return self._wait(replicating, timeout, f"{host_name} replicating in sync")

    def _replicates(self, host_name: str, primary: str) -> bool:
        """The node is a replica of `primary`, linked and past its full sync."""
        try:
            with self.client(host_name, decode=True, timeout=PROBE_S) as node:
                info = node.info("replication")
        except redis.RedisError:
            return False
        wanted = {"role": "slave", "master_host": self.redis_hosts[primary].address,
                  "master_link_status": "up", "master_sync_in_progress": 0}  # fmt: skip
        return all(info.get(key) == value for key, value in wanted.items())

    def client(self, host_name: str, *, decode: bool = False, timeout: float = 2.0) -> redis.Redis:
        """Straight to one node, whatever its role."""
        return redis.Redis(
            host=self.redis_hosts[host_name].address, port=REDIS_PORT, password=self.password,
            decode_responses=decode, socket_timeout=timeout, socket_connect_timeout=timeout,
            retry=_once(),
        )  # fmt: skip

    def master_client(self, timeout: float = 2.0) -> redis.Redis:
        """Through the Sentinels, as the stack reaches Redis: each new connection asks them for
        the master (and one that finds a replica there is dropped)."""
        sentinels = [(h.address, SENTINEL_PORT) for h in self.sentinel_hosts]
        asking = {"password": self.password, "socket_timeout": PROBE_S,
                  "socket_connect_timeout": PROBE_S, "retry": _once()}  # fmt: skip
        found = Sentinel(sentinels, sentinel_kwargs=asking, socket_timeout=timeout)
        client: redis.Redis = found.master_for(
            self.master_name, password=self.password, socket_timeout=timeout,
            socket_connect_timeout=timeout, retry=_once(),
        )  # fmt: skip
        return client
