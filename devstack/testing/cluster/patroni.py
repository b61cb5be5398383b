"""Patroni with etcd for the cluster test's PostgreSQL (ha_services.py says how the two
managers are run and waited for)."""

from __future__ import annotations

import glob
import json
import secrets
import shutil
import tempfile
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import psycopg
from psycopg import sql

from devstack.testing.cluster.ha_services import (
    ETCD,
    ETCD_CLIENT_PORT,
    ETCD_ELECTION_MS,
    ETCD_HEARTBEAT_MS,
    ETCD_PEER_PORT,
    LOOP_WAIT_S,
    PATRONI,
    PATRONI_PORT,
    POSTGRES_PORT,
    PROBE_S,
    REPLICATION_USER,
    RETRY_TIMEOUT_S,
    REWIND_USER,
    TTL_S,
    Group,
)
from devstack.testing.cluster.namespaces import NetnsError
from devstack.testing.cluster.network import Host
from devstack.testing.cluster.processes import START_TIMEOUT_S, clean_env


def _postgres_bin(name: str) -> str:
    found = sorted(
        glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    if not found:
        raise NetnsError(
            f"PostgreSQL's {name} not found under /usr/lib/postgresql/*/bin: "
            "apt-get install postgresql"
        )
    return found[-1]


class PatroniGroup(Group):
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
                "bin_dir": str(Path(_postgres_bin("postgres")).parent),
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
        env = {k: v for k, v in clean_env().items() if not k.startswith("ETCD_")}
        host.spawn("etcd", argv, env)

    def _spawn_patroni(self, host: Host) -> None:
        pg_dir = self._dirs[host.name]
        # None of the test's Python, PATRONI_ or libpq settings: they would override the file.
        dropped = ("PYTHON", "PATRONI_", "PG", "VIRTUAL_ENV")
        env = {k: v for k, v in clean_env().items() if not k.startswith(dropped)}
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
