"""Sliding one-minute rate limits: per team on uploads, per caller on report reads, per client
on failed dashboard sign-ins. `RateLimiter` keeps its log in a Redis sorted set per key, checked
and updated by one Lua script (one round trip, atomic across API processes); `LocalLimiter` is
the same log in this process's memory, for an API without Redis. The composition root builds
each limit (`infra.compose.api_parts`); the API sees only the `Limiter` Protocol."""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from typing import Protocol

import redis
import structlog

from core.errors import Throttled

log = structlog.get_logger("tilejudge.ratelimit")

WINDOW_S = 60.0
# Any 60 s span, not a calendar minute: a fixed window admits twice the limit to a team that
# sends just before and just after a minute's boundary. The log holds at most `limit` accepted
# uploads per team (refused ones are not recorded) and expires a minute after the last one.
# KEYS[1] the team's log; ARGV: now (s), window (s), limit, a unique member for this upload,
# and whether to record it ("1") or only look ("0").
# Returns {1, 0} when admitted, {0, seconds until the oldest entry leaves the window} if not.
SLIDING_LOG = """
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) < limit then
  if ARGV[5] == '1' then
    redis.call('ZADD', KEYS[1], now, ARGV[4])
    redis.call('PEXPIRE', KEYS[1], math.ceil(window * 1000))
  end
  return {1, '0'}
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {0, tostring(tonumber(oldest[2]) + window - now)}
"""
# Outside its window a refused key is not looked at again, so a process remembers at most this
# many keys before it forgets them all (a flood of client addresses cannot grow it further).
LOCAL_KEYS_MOST = 10_000


class Limiter(Protocol):
    def check(self, key: str) -> None:
        """Admit and count one more for `key`, or raise Throttled."""

    def wait(self, key: str) -> int | None:
        """Seconds until `key` may go on if it is at its limit now, else None; counts nothing."""

    def record(self, key: str) -> None:
        """Count one for `key` (a failed sign-in) whether or not it is at its limit."""


class RateLimiter:
    """`per_minute` per key; `name` keeps each limit's keys apart, `what` says in a refusal
    what is limited ("uploads a minute per team")."""

    def __init__(
        self,
        client: redis.Redis | None,
        per_minute: int,
        *,
        name: str = "rate",
        what: str = "uploads a minute per team",
    ) -> None:
        self._client = client
        self._per_minute = per_minute
        self._name = name
        self._what = what
        self._script = client.register_script(SLIDING_LOG) if client is not None else None

    def check(self, key: str) -> None:
        wait = self._ask(key, record=True)
        if wait is not None:
            raise _throttled(self._per_minute, self._what, wait)

    def wait(self, key: str) -> int | None:
        return self._ask(key, record=False)

    def record(self, key: str) -> None:
        if self._client is None or self._per_minute <= 0:
            return
        redis_key = f"tilejudge:{self._name}:{key}"
        try:
            with self._client.pipeline() as pipe:
                pipe.zadd(redis_key, {uuid.uuid4().hex: time.time()})
                pipe.pexpire(redis_key, math.ceil(WINDOW_S * 1000))
                pipe.execute()
        except redis.RedisError as exc:
            log.warning("ratelimit.unavailable", error=str(exc))

    def _ask(self, key: str, *, record: bool) -> int | None:
        if self._script is None or self._per_minute <= 0:
            return None
        now = time.time()
        try:
            admitted, wait = self._script(
                keys=[f"tilejudge:{self._name}:{key}"],
                args=[
                    repr(now), repr(WINDOW_S), self._per_minute, uuid.uuid4().hex,
                    "1" if record else "0",
                ],
            )  # fmt: skip
        except redis.RedisError as exc:
            # Fail open: refusing uploads because the limiter's store is down would punish
            # contestants for an outage of the service; intake itself does not need Redis.
            log.warning("ratelimit.unavailable", error=str(exc))
            return None
        if int(admitted) == 1:
            return None
        return max(1, math.ceil(float(wait)))


class LocalLimiter:
    """`RateLimiter`'s sliding log in this process's memory: each API process counts apart."""

    def __init__(
        self,
        per_minute: int,
        *,
        what: str,
        now: Callable[[], float] = time.monotonic,
        keys_most: int = LOCAL_KEYS_MOST,
    ) -> None:
        self._per_minute = per_minute
        self._what = what
        self._now = now
        self._keys_most = keys_most
        self._logs: dict[str, deque[float]] = {}
        self._lock = threading.Lock()  # routes ask from the thread pool

    def check(self, key: str) -> None:
        with self._lock:
            wait = self._wait(key)
            if wait is None:
                self._record(key)
        if wait is not None:
            raise _throttled(self._per_minute, self._what, wait)

    def wait(self, key: str) -> int | None:
        with self._lock:
            return self._wait(key)

    def record(self, key: str) -> None:
        with self._lock:
            self._record(key)

    def _wait(self, key: str) -> int | None:
        if self._per_minute <= 0:
            return None
        entries = self._current(key)
        if len(entries) < self._per_minute:
            return None
        return max(1, math.ceil(entries[0] + WINDOW_S - self._now()))

    def _record(self, key: str) -> None:
        if self._per_minute <= 0:
            return
        if key not in self._logs and len(self._logs) >= self._keys_most:
            self._logs.clear()
        entries = self._logs.setdefault(key, deque(maxlen=self._per_minute))
        entries.append(self._now())

    def _current(self, key: str) -> deque[float]:
        entries = self._logs.get(key, deque())
        while entries and entries[0] <= self._now() - WINDOW_S:
            entries.popleft()
        return entries


def report_reads(client: redis.Redis | None, per_minute: int) -> Limiter:
    """Report reads per caller (the team, or "admin")."""
    return _shared_or_local(client, per_minute, name="reports", what="report reads a minute")


def sign_in_failures(client: redis.Redis | None, per_minute: int) -> Limiter:
    """Failed sign-ins (the dashboard's and the team page's) per client address."""
    what = "failed sign-ins a minute from one address"
    return _shared_or_local(client, per_minute, name="logins", what=what)


def _shared_or_local(
    client: redis.Redis | None, per_minute: int, *, name: str, what: str
) -> Limiter:
    """Counted across the API processes in Redis when there is one, else in this process."""
    if client is None:
        return LocalLimiter(per_minute, what=what)
    return RateLimiter(client, per_minute, name=name, what=what)


def _throttled(per_minute: int, what: str, wait: int) -> Throttled:
    return Throttled(f"at most {per_minute} {what}; retry in {wait} s", wait)
