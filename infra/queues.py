"""The broker's queues as Redis holds them: depths for the dashboard, and the live queue's
backlog that intake and the sweeper read (`core.ports.QueueProbe`)."""

from __future__ import annotations

from typing import Any

import redis

from core.messages import BULK_QUEUE, LIVE_QUEUE, held_queue
from infra.bulk_hosts import HOSTS_KEY, decoded

QUEUES = (LIVE_QUEUE, BULK_QUEUE)
PRIORITY_SEP = "\x06\x16"  # kombu keeps priority N of queue Q in the list Q + SEP + N


def queue_depths(client: redis.Redis | None) -> dict[str, Any]:
    """LLEN of each queue and of its priority lists, and the unacked hash and index; the bulk
    queue's depth counts the worker hosts' own queues too (`infra.bulk_hosts`), each also
    given by host (`by_host`).

    Six commands a refresh, and one for each worker host: priority lists exist only while they
    hold messages (Redis drops empty lists), so one EXISTS over all of them says whether their
    LLENs are needed at all."""
    if client is None:
        return {"status": "unavailable", "detail": "no Redis configured", "total": None}
    keys = {name: [_priority_key(name, p) for p in range(1, 10)] for name in QUEUES}
    try:
        pipe = client.pipeline(transaction=False)
        for name in QUEUES:
            pipe.llen(name)
        pipe.hlen("unacked")
        pipe.zcard("unacked_index")
        pipe.exists(*[key for name in QUEUES for key in keys[name]])
        pipe.hkeys(HOSTS_KEY)
        *counts, hosts = pipe.execute()
        *plain, unacked, index, prioritised = (int(n) for n in counts)
        by_priority = {name: {"0": plain[i]} for i, name in enumerate(QUEUES)}
        by_host = _held_depths(client, sorted(decoded(host) for host in hosts))
        by_priority[BULK_QUEUE]["0"] += sum(by_host.values())
        if prioritised:
            pipe = client.pipeline(transaction=False)
            for name in QUEUES:
                for key in keys[name]:
                    pipe.llen(key)
            lengths = iter(int(n) for n in pipe.execute())
            for name in QUEUES:
                for priority in range(1, 10):
                    if n := next(lengths):
                        by_priority[name][str(priority)] = n
    except redis.RedisError as exc:
        return {"status": "unavailable", "detail": f"{type(exc).__name__}: {exc}", "total": None}
    found: dict[str, Any] = {"status": "ok", "detail": None}
    for name in QUEUES:
        found[name] = {"depth": sum(by_priority[name].values()), "by_priority": by_priority[name]}
    found[BULK_QUEUE]["by_host"] = by_host
    found["total"] = sum(found[name]["depth"] for name in QUEUES)
    found["unacked"], found["unacked_index"] = unacked, index
    return found


def _held_depths(client: redis.Redis, hosts: list[str]) -> dict[str, int]:
    """The depth of each worker host's own bulk queue."""
    if not hosts:
        return {}
    pipe = client.pipeline(transaction=False)
    for host in hosts:
        pipe.llen(held_queue(host))
    return dict(zip(hosts, (int(n) for n in pipe.execute()), strict=True))


def live_backlog(client: redis.Redis | None) -> int | None:
    """Messages waiting in the live queue (all priorities); None when Redis cannot say."""
    depths = queue_depths(client)
    return None if depths["status"] != "ok" else int(depths["live"]["depth"])


def light_backlog(client: redis.Redis | None) -> int | None:
    """Light uploads waiting (the live queue's priority-0 list; heavy ones wait at 3, 6 and 9,
    behind them); None when Redis cannot say. One LLEN."""
    if client is None:
        return None
    try:
        return int(client.llen(LIVE_QUEUE))
    except redis.RedisError:
        return None


def _priority_key(queue: str, priority: int) -> str:
    return f"{queue}{PRIORITY_SEP}{priority}"


def broker_epoch(client: redis.Redis) -> str | None:
    """The Redis server's run id: it changes when another server serves (a failover) or the
    same one starts again, either of which may have lost messages. None if it does not answer."""
    try:
        run_id = client.info("server").get("run_id")
    except redis.RedisError:
        return None
    return str(run_id) if run_id else None
