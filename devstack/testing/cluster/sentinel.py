"""Redis Sentinel for the cluster test's broker (ha_services.py says how the two
managers are run and waited for)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import redis
from redis.sentinel import Sentinel

from devstack.redis_server import redis_server_binary
from devstack.testing.cluster.ha_services import (
    DOWN_AFTER_MS,
    FAILOVER_TIMEOUT_MS,
    PROBE_S,
    QUORUM,
    REDIS_PORT,
    SENTINEL,
    SENTINEL_PORT,
    Group,
    no_retry,
)
from devstack.testing.cluster.network import Host
from devstack.testing.cluster.processes import START_TIMEOUT_S, clean_env


class SentinelGroup(Group):
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
        host.spawn("redis", argv, clean_env(), cwd=data)

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
        host.spawn("sentinel", argv, clean_env(), cwd=home)

    # -- observing ----------------------------------------------------------------------------

    def logs(self, tail: int = 2500) -> str:
        """The logs' tails, then what each Sentinel knows of the replicas (the fields it reads
        to choose one to promote) and each node's own replication state."""
        return f"{super().logs(tail)}\n{self._state()}"

    def _state(self) -> str:
        wanted = ("ip", "flags", "master-link-status", "master-link-down-time", "info-refresh",
                  "last-ok-ping-reply", "slave-priority", "slave-repl-offset")  # fmt: skip

        def replicas(host: Host) -> str:
            try:
                with self._sentinel(host) as sentinel:
                    found = sentinel.sentinel_slaves(self.master_name)
            except redis.RedisError as exc:
                return f"no answer ({exc})"
            return "; ".join(" ".join(f"{key}={one.get(key)}" for key in wanted) for one in found)

        def replication(name: str) -> str:
            try:
                with self.client(name, decode=True, timeout=PROBE_S) as node:
                    info = node.info("replication")
            except redis.RedisError as exc:
                return f"no answer ({exc})"
            return " ".join(f"{key}={value}" for key, value in info.items())

        views = self._ask_all(replicas, self.sentinel_hosts)
        lines = [f"--- Sentinel on {h.name}: {v}" for h, v in zip(self.sentinel_hosts, views)]
        lines += [f"--- {name} replication: {replication(name)}" for name in self.redis_hosts]
        return "\n".join(lines)

    def url(self, db: int = 0) -> str:
        """kombu's form: one sentinel:// per Sentinel, `;`-separated, the database at the end."""
        password = quote(self.password, safe="")
        hosts = [f"sentinel://:{password}@{h.address}:{SENTINEL_PORT}" for h in self.sentinel_hosts]
        return ";".join(hosts) + f"/{db}"

    def _sentinel(self, host: Host) -> redis.Redis:
        return redis.Redis(
            host=host.address, port=SENTINEL_PORT, password=self.password, decode_responses=True,
            socket_timeout=PROBE_S, socket_connect_timeout=PROBE_S, retry=no_retry(),
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
        return self._wait_known(host_name, timeout, linked=False)

    def wait_current(self, host_name: str, timeout: float = START_TIMEOUT_S) -> float:
        """`wait_replica`, and every Sentinel that answers has seen the node linked to the
        master in its last look (its INFO, asked every 10 s): what Sentinel asks of a replica
        before it promotes one."""
        return self._wait_known(host_name, timeout, linked=True)

    def _wait_known(self, host_name: str, timeout: float, linked: bool) -> float:
        address = self.redis_hosts[host_name].address

        def up(replica: dict[str, Any]) -> bool:
            if replica["ip"] != address or replica["is_sdown"] or replica["is_disconnected"]:
                return False
            return not linked or (
                replica.get("master-link-status") == "ok"
                and int(replica.get("master-link-down-time") or 0) == 0
            )

        def known(host: Host) -> bool | None:
            try:
                with self._sentinel(host) as sentinel:
                    replicas = sentinel.sentinel_slaves(self.master_name)
            except redis.RedisError:
                return None
            return any(up(replica) for replica in replicas)

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
            retry=no_retry(),
        )  # fmt: skip

    def master_client(self, timeout: float = 2.0) -> redis.Redis:
        """Through the Sentinels, as the stack reaches Redis: each new connection asks them for
        the master (and one that finds a replica there is dropped)."""
        sentinels = [(h.address, SENTINEL_PORT) for h in self.sentinel_hosts]
        asking = {"password": self.password, "socket_timeout": PROBE_S,
                  "socket_connect_timeout": PROBE_S, "retry": no_retry()}  # fmt: skip
        found = Sentinel(sentinels, sentinel_kwargs=asking, socket_timeout=timeout)
        client: redis.Redis = found.master_for(
            self.master_name, password=self.password, socket_timeout=timeout,
            socket_connect_timeout=timeout, retry=no_retry(),
        )  # fmt: skip
        return client
