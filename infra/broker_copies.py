"""Copies of uploads the broker keeps, and how they are dropped.

A judging message names its small uploads (`core.messages.group_args`), whose bytes wait beside
it in Redis under keys of their own (`keep`) until a worker has judged them (`drop`), or at
most KEPT_UPLOAD_TTL_S. Beside the message, not in it: in the message, Celery's JSON body and
kombu's envelope around it would escape every line break of a move list twice over, the
worker's parent would decode the envelope and encode it again into Redis's hash of messages
not yet acknowledged, and the process judging it would decode the body: about 0.7 ms of CPU
a 56 KB upload in all (timed in one process), where a key costs Redis a copy. End to end, the
ratio of `benchmarks.pipeline_bench` went from 0.61 and 0.58 to 0.63 and 0.65 in alternating
runs (measured 2026-12-05; the figures are in BENCHMARKS.md's git history).

A team's deletion drops the copies of its uploads (`forget`). Redis's append-only file, where
persistence is on, keeps the history of every write until the file is rewritten. So a deletion,
and a worker dropping a deleted team's message, ask for a rewrite (`forget_soon`); the elected
sweeper does it at its next pass once the request is due (`forget_if_due`): a few seconds after
the last message is acknowledged, so that the rewrite does not copy the message's
unacknowledged entry into the new file.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

import redis
import structlog

from core import tuning

log = structlog.get_logger("tilejudge.broker")

KEY = "tilejudge:forget-copies-at"  # when the append-only file is due for a rewrite
UPLOAD_KEY = "tilejudge:upload:"  # and a submission id: the bytes its message left beside it
ACK_MARGIN_S = 5.0  # a dropped message is acknowledged within this of the request
# Delete the request only if no newer one came meanwhile.
_DONE = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
)


def keep(
    client: redis.Redis, uploads: Iterable[tuple[str, bytes]], ttl: int = tuning.KEPT_UPLOAD_TTL_S
) -> None:
    """The uploads' bytes beside their messages, in one round trip, for `ttl` seconds at most;
    before the messages go out, so a worker never looks for bytes not yet there."""
    pipe = client.pipeline(transaction=False)
    for submission_id, data in uploads:
        pipe.set(UPLOAD_KEY + submission_id, data, ex=ttl)
    pipe.execute()


def kept(client: redis.Redis, submission_ids: Sequence[str]) -> dict[str, bytes]:
    """The bytes kept beside a message for these uploads, by submission id; those gone
    (expired, dropped, or Redis unreachable) are missing, and the worker reads them from S3."""
    if not submission_ids:
        return {}
    try:
        found = client.mget([UPLOAD_KEY + sid for sid in submission_ids])
    except redis.RedisError as exc:
        log.warning("broker.kept_uploads_unread", count=len(submission_ids), error=str(exc))
        return {}
    return {
        sid: data
        for sid, data in zip(submission_ids, found, strict=True)
        if isinstance(data, bytes)  # None where gone
    }


def drop(client: redis.Redis, submission_ids: Sequence[str]) -> None:
    """Drop the bytes kept for these uploads (judged, or their team deleted). Best effort: a
    copy left behind expires after KEPT_UPLOAD_TTL_S."""
    if not submission_ids:
        return
    try:
        client.unlink(*(UPLOAD_KEY + sid for sid in submission_ids))
    except redis.RedisError as exc:
        log.warning("broker.kept_uploads_left", count=len(submission_ids), error=str(exc))


def forget(client: redis.Redis | None, submission_ids: Sequence[str]) -> None:
    """A deleted team's uploads: their kept bytes dropped now, and the append-only file's
    history of them and of messages already taken rewritten soon (`forget_soon`)."""
    if client is None:
        return
    drop(client, submission_ids)
    forget_soon(client, delay=0)


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
