"""Copies of uploads the broker keeps after their team is deleted, and how they are dropped.

A queued message carries the bytes of a small upload (`core.messages.group_args`). Redis holds
the message until a worker takes it; a worker that finds the submission gone drops it unread.
Redis's append-only file, where persistence is on, keeps the history of every message until
the file is rewritten. So a deletion, and a worker dropping a deleted team's message, ask for a
rewrite (`forget_soon`); the elected sweeper does it at its next pass once the request is due
(`forget_if_due`): a few seconds after the last message is acknowledged, so that the rewrite
does not copy the message's unacknowledged entry into the new file.
"""

from __future__ import annotations

import time

import redis
import structlog

log = structlog.get_logger("tilejudge.broker")

KEY = "tilejudge:forget-copies-at"  # when the append-only file is due for a rewrite
ACK_MARGIN_S = 5.0  # a dropped message is acknowledged within this of the request
# Delete the request only if no newer one came meanwhile.
_DONE = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
)


def forget_soon(client: redis.Redis | None, delay: float = ACK_MARGIN_S) -> None:
    """Ask for the append-only file to be rewritten `delay` seconds from now (a later request
    replaces an earlier one). Best effort: logged when Redis cannot take it."""
    if client is None:
        return
    try:
        client.set(KEY, repr(time.time() + delay))
    except redis.RedisError as exc:
        log.warning("broker.forget_request_failed", error=str(exc))


def forget_if_due(client: redis.Redis, now: float | None = None) -> bool:
    """Rewrite the append-only file if a request is due; True when a rewrite was started. A
    Redis without one (persistence off) has nothing to rewrite, and the request is dropped."""
    due = client.get(KEY)
    if due is None or float(due) > (time.time() if now is None else now):
        return False
    started = False
    if client.info("persistence").get("aof_enabled"):
        try:
            client.bgrewriteaof()
        except redis.ResponseError as exc:  # one is running already: try again next pass
            log.info("broker.rewrite_deferred", error=str(exc))
            return False
        started = True
        log.info("broker.append_only_file_rewritten")
    client.eval(_DONE, 1, KEY, due)
    return started
