"""Which worker hosts take rejudge batches of their own: a batch goes to the queue of the host
whose upload cache holds its uploads (`core.rejudging.produce`), if that host is up.

Each worker parent that takes bulk work says every ANNOUNCE_S that its host is up (one HSET in
a Redis hash, host id -> the time), and consumes its host's queue after the shared `bulk`
queue, then every other host's that is up, after its own. kombu takes from a worker's queues
in the order it consumes them (`queue_order_strategy: priority`), so a host judges its own
batches and the shared ones first, and takes another host's only when it has none: a host
that is busy or slow has its batches taken by the others, and a host that died has them taken
by those that knew it. A host not heard of for UP_WITHIN_S gets no more batches; its queue's
leftovers, if nobody consumes it, stall the run, which the sweeper starts again
(`core.sweeping`), routing only to hosts that are up.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import redis
import structlog

from core.messages import BULK_QUEUE, held_queue

log = structlog.get_logger("tilejudge.worker")

HOSTS_KEY = "tilejudge:bulk-hosts"  # hash: host id -> the time it last said it was up
ANNOUNCE_S = 5.0
UP_WITHIN_S = 30.0  # a host heard of within this is up
FORGET_AFTER_S = 86400.0  # a host not heard of for this is dropped from the hash
READ_EVERY_S = 2.0  # a publisher reads the hash at most this often


class BulkHosts:
    """The hosts that are up, as a publisher asks for them: read at most every READ_EVERY_S.
    A Redis that does not answer means none (every batch to the shared queue)."""

    def __init__(self, client: redis.Redis) -> None:
        self._client = client
        self._lock = threading.Lock()
        self._read_at = float("-inf")
        self._up: frozenset[str] = frozenset()

    def queue_for(self, host: str | None) -> str:
        """The queue of a batch held on `host`: its own if it is up, else the shared one."""
        return held_queue(host) if host is not None and host in self.up() else BULK_QUEUE

    def up(self) -> frozenset[str]:
        with self._lock:
            if time.monotonic() - self._read_at >= READ_EVERY_S:
                self._read_at = time.monotonic()
                self._up = frozenset(up_hosts(self._client))
            return self._up


def up_hosts(client: redis.Redis, now: float | None = None) -> list[str]:
    """The hosts heard of within UP_WITHIN_S; none if Redis does not answer."""
    now = time.time() if now is None else now
    try:
        seen = client.hgetall(HOSTS_KEY)
    except redis.RedisError:
        return []
    return _up(seen, now)


def announce(client: redis.Redis, host: str, now: float | None = None) -> list[str]:
    """Say that `host` is up, and drop the hosts not heard of for FORGET_AFTER_S; the hosts
    up, read in the same round trip."""
    now = time.time() if now is None else now
    pipe = client.pipeline(transaction=False)
    pipe.hset(HOSTS_KEY, host, repr(now))
    pipe.hgetall(HOSTS_KEY)
    _, seen = pipe.execute()
    gone = [h for h, at in seen.items() if now - float(at) > FORGET_AFTER_S]
    if gone:
        client.hdel(HOSTS_KEY, *gone)
    return _up(seen, now)


def _up(seen: dict[bytes | str, bytes | str], now: float) -> list[str]:
    return sorted(decoded(host) for host, at in seen.items() if now - float(at) <= UP_WITHIN_S)


def keep_announcing(
    client: redis.Redis,
    host: str,
    consume: Callable[[str], None],
    consuming: Callable[[str], bool],
    every: float = ANNOUNCE_S,
    stop: threading.Event | None = None,
) -> threading.Thread:
    """A daemon thread of a worker parent: announce `host` every `every` seconds (until
    `stop` is set), and have the worker consume its own queue, then each other host's that
    is up: `consume(queue)` asks for one the worker is not `consuming` yet, and is asked
    again at the next turn if it was not heard (a control message sent before the worker
    listens for them is lost)."""
    stopping = stop or threading.Event()

    def once() -> None:
        up = announce(client, host)
        for other in [host] + [h for h in up if h != host]:
            if not consuming(queue := held_queue(other)):
                consume(queue)

    def announcing() -> None:
        while not stopping.is_set():
            try:
                once()
            except Exception as exc:  # Redis away, or a failover: the next turn tries again
                log.warning(
                    "worker.bulk_host_announce_failed", error=f"{type(exc).__name__}: {exc}"
                )
            stopping.wait(every)

    thread = threading.Thread(target=announcing, name="bulk-host-announce", daemon=True)
    thread.start()
    return thread


def decoded(value: bytes | str) -> str:
    """A host id as the Redis client gives it (bytes unless it decodes replies)."""
    return value.decode() if isinstance(value, bytes) else value
