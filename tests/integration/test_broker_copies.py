"""A deleted team's uploads leave no copy in Redis, nor in its append-only file: their kept
bytes are dropped, and the rewrite a deletion asks for drops the history of messages already
taken and of bytes dropped."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from devstack.process import Service
from infra import broker_copies

pytestmark = pytest.mark.integration


def _files_holding(directory: Path, marker: bytes) -> list[str]:
    """The append-only file (one file, or a directory of them from Redis 7 on) holding it."""
    return [p.name for p in directory.rglob("*aof*") if p.is_file() and marker in p.read_bytes()]


def _wait(condition: object) -> None:
    """Until `condition()`; a rewrite asked for waits for one still running (another test's).
    A hang is the test timeout's to catch."""
    while not condition():  # type: ignore[operator]
        time.sleep(0.1)


def _marker() -> bytes:
    """Bytes no other write to this Redis holds."""
    return f"deleted-team-upload-{uuid.uuid4().hex}".encode()


def _in_the_file_then_rewritten_away(
    client: redis.Redis, aof: Path, marker: bytes, forget: Callable[[], None]
) -> None:
    """`marker`, written already, reaches the append-only file; after `forget` (which asks for
    a rewrite) the sweeper's rewrite leaves it out."""
    _wait(lambda: _files_holding(aof, marker))  # the write reached the append-only file
    forget()
    _wait(lambda: broker_copies.forget_if_due(client))  # the due request is done
    _wait(lambda: not _files_holding(aof, marker))  # and rewritten away


def test_a_message_taken_before_the_rewrite_is_gone_from_the_append_only_file(
    redis_service: Service, redis_url: str, services_dir: Path
) -> None:
    client = redis.Redis.from_url(redis_url)
    marker = _marker()
    client.lpush("probe", b"a message carrying " + marker)
    assert client.rpop("probe") is not None  # a worker took it

    _in_the_file_then_rewritten_away(
        client, services_dir / "redis", marker, lambda: broker_copies.forget_soon(client, delay=0)
    )

    assert client.get(broker_copies.KEY) is None
    client.close()


def test_a_request_not_yet_due_waits(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)

    broker_copies.forget_soon(client, delay=60)

    assert broker_copies.forget_if_due(client) is False
    assert client.get(broker_copies.KEY) is not None
    _wait(lambda: broker_copies.forget_if_due(client, now=time.time() + 61))
    assert client.get(broker_copies.KEY) is None
    client.close()


def test_a_deleted_teams_kept_bytes_are_dropped_and_gone_from_the_append_only_file(
    redis_service: Service, redis_url: str, services_dir: Path
) -> None:
    client = redis.Redis.from_url(redis_url)
    marker = _marker()
    broker_copies.keep(client, [("doomed", b"0 0 2 0 " + marker), ("other", b"0 0 2 0 cat\n")])

    _in_the_file_then_rewritten_away(
        client, services_dir / "redis", marker, lambda: broker_copies.forget(client, ["doomed"])
    )

    assert broker_copies.kept(client, ["doomed", "other"]) == {"other": b"0 0 2 0 cat\n"}
    client.close()
