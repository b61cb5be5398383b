"""The in-process sliding log an API without Redis limits report reads and failed sign-ins
with: a minute's worth per key, looked at without counting, and a bounded number of keys."""

from __future__ import annotations

import pytest

from core.errors import Throttled
from infra.ratelimit import WINDOW_S, LocalLimiter, RateLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 500.0

    def __call__(self) -> float:
        return self.now


def test_a_key_at_its_limit_is_refused_until_its_oldest_entry_is_a_minute_old() -> None:
    clock = Clock()
    limiter = LocalLimiter(2, what="report reads a minute", now=clock)
    limiter.check("ravens")
    clock.now += 10
    limiter.check("ravens")

    with pytest.raises(Throttled, match="at most 2 report reads a minute") as refused:
        limiter.check("ravens")
    assert refused.value.retry_after == 50
    limiter.check("crows")  # per key
    clock.now += 50.5
    limiter.check("ravens")


def test_looking_counts_nothing_and_recording_counts_past_the_limit() -> None:
    clock = Clock()
    limiter = LocalLimiter(3, what="failed sign-ins", now=clock)

    assert all(limiter.wait("addr") is None for _ in range(10))
    for _ in range(3):
        limiter.record("addr")
    assert limiter.wait("addr") == WINDOW_S
    clock.now += WINDOW_S
    assert limiter.wait("addr") is None


def test_a_flood_of_keys_is_forgotten_rather_than_kept() -> None:
    limiter = LocalLimiter(1, what="failed sign-ins", keys_most=100)
    for n in range(1000):
        limiter.record(f"address {n}")

    assert len(limiter._logs) <= 100


def test_a_limit_of_zero_limits_nothing() -> None:
    local = LocalLimiter(0, what="report reads a minute")
    remote = RateLimiter(None, 5)
    for _ in range(100):
        local.check("ravens")
        remote.check("ravens")
        local.record("ravens")
        remote.record("ravens")
    assert local.wait("ravens") is None and remote.wait("ravens") is None
