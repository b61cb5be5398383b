"""Highly available PostgreSQL and Redis for the cluster test, on hosts of `network.Network`, run
by trusted managers only: Patroni with etcd for PostgreSQL, Redis Sentinel for Redis.

`PatroniGroup` (patroni.py): on each host an etcd member (one etcd cluster across the hosts)
and a Patroni managing a PostgreSQL. Synchronous mode, so a commit that returns is on two hosts
while a standby is in sync; pg_rewind, so a primary that comes back rejoins as a replica on its
own; a leader key short-lived enough that a primary killed or cut off is replaced in about ten
seconds.

`SentinelGroup` (sentinel.py): a Redis primary and a replica, and three Sentinels that promote
the replica within a few seconds of the primary going silent.

Either manager needs a majority to act (of the etcd members, of the Sentinels): with 2 of 3 gone
nothing is promoted, so a test that takes down a second host brings the first back before.

The caller creates and owns the hosts (and tears them down); the thread calling these methods
may sit in any namespace of the same bridge, as the client host's does. Every wait polls a
condition with `wait_for`, bounded, and fails with the tail of the managers' logs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from redis.backoff import NoBackoff
from redis.retry import Retry

from devstack.testing.cluster.namespaces import NetnsError
from devstack.testing.cluster.network import Host
from devstack.testing.cluster.processes import START_TIMEOUT_S, wait_for

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


def no_retry() -> Retry:
    """No retries for a Redis client: redis-py's default retries 3 times with backoff from 1 s
    (a silent host costs 10 s or more a call); the callers' bounded loops do the retrying."""
    return Retry(NoBackoff(), 0)


class Group(ABC):
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

    def wait_current(self, host_name: str, timeout: float = START_TIMEOUT_S) -> float:
        """`wait_replica`, as strict as the manager is before it promotes a replica."""
        return self.wait_replica(host_name, timeout)

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
