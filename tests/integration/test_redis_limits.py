"""The Redis-backed limits on failed dashboard sign-ins and report reads against a real Redis:
shared by every API process, looked at without counting, kept apart from the upload limit."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

import pytest
import redis

from core.errors import Throttled
from infra.compose import make_redis
from infra.ratelimit import RateLimiter
from infra.settings import Settings

pytestmark = pytest.mark.integration


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    with make_redis(Settings.from_env({"REDIS_URL": redis_url})) as connection:
        yield connection


@pytest.fixture
def now(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    clock = [1_000_000.0]
    monkeypatch.setattr("infra.ratelimit.time", SimpleNamespace(time=lambda: clock[0]))
    return clock


def test_failures_recorded_in_one_process_refuse_the_address_in_another(
    client: redis.Redis, redis_url: str, now: list[float]
) -> None:
    one = RateLimiter(client, 3, name="logins", what="failed sign-ins")
    with make_redis(Settings.from_env({"REDIS_URL": redis_url})) as other_connection:
        other = RateLimiter(other_connection, 3, name="logins", what="failed sign-ins")
        assert other.wait("addr") is None
        for _ in range(3):
            one.record("addr")
            now[0] += 5

        assert other.wait("addr") == 45  # the first failure leaves the window in 45 s
        assert one.wait("elsewhere") is None
        now[0] += 45
        assert other.wait("addr") is None
    assert client.zcard("tilejudge:logins:addr") <= 3


def test_looking_counts_nothing(client: redis.Redis, now: list[float]) -> None:
    limiter = RateLimiter(client, 1, name="logins", what="failed sign-ins")
    for _ in range(10):
        assert limiter.wait("addr") is None

    assert client.exists("tilejudge:logins:addr") == 0


def test_report_reads_and_uploads_are_counted_apart(client: redis.Redis, now: list[float]) -> None:
    uploads = RateLimiter(client, 1)
    reads = RateLimiter(client, 1, name="reports", what="report reads a minute")
    uploads.check("ravens")
    reads.check("ravens")

    with pytest.raises(Throttled, match="report reads a minute"):
        reads.check("ravens")
