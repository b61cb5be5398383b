"""What a token no team holds costs: next to nothing, whoever sends it and however fast.

A team token's look-up is a SQL query on a thread; one an upload makes is remembered
(`api.services.Uploaders`), but one that finds no team used to be asked again every time, so a
client sending made-up tokens as fast as it was answered took the event loop, the threads and
the database from teams. Two things stop that:

- `UnknownTokens` remembers a token no team holds, for a short while, so one retried costs no
  query (why a short while: `core.tuning.UNKNOWN_TOKEN_TTL_S`);
- `Strangers` paces a client address once one of its tokens was unknown: its requests that need
  a look-up (or are refused from the memory) wait their turn, at most AUTH_FAILURES_PER_S a
  second for the address and STRANGER_LOOKUPS_PER_S for all failing addresses together, and
  run their look-ups on the public threads (`api.public`), never the ones uploads use; a request
  that would wait over STRANGER_QUEUE_S is refused with 429. An address with no failure is
  never paced, nor a token remembered as a team's.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable

from api.errors import ApiError
from core import tuning


class TooManyFailures(ApiError):
    status, code = 429, "rate_limited"


class UnknownTokens:
    """Digests of tokens no team held when asked: at most `most`, each for `ttl` seconds."""

    def __init__(
        self,
        ttl: float = tuning.UNKNOWN_TOKEN_TTL_S,
        most: int = tuning.UNKNOWN_TOKENS_KEPT,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ttl, self._most, self._now = ttl, most, monotonic
        self._seen: dict[str, float] = {}

    def __contains__(self, token_hash: str) -> bool:
        seen = self._seen.get(token_hash)
        return seen is not None and self._now() - seen < self._ttl

    def add(self, token_hash: str) -> None:
        if len(self._seen) >= self._most:
            self._seen.clear()  # that many made-up tokens within `ttl`: start over
        self._seen[token_hash] = self._now()

    def forget(self) -> None:
        """Every token. Called by the full reset (`api.services.Uploaders.forget_all`) each time
        the process subscribes to the team news (`api.token_news`): at its start, and again
        after losing its subscription, when news may have been missed. Adding a team does not
        call it: the new token was never sent before (`core.tuning.UNKNOWN_TOKEN_TTL_S`)."""
        self._seen.clear()


class Strangers:
    """The client addresses whose authentication failed lately, and their turns."""

    def __init__(
        self,
        *,
        per_address: float = tuning.AUTH_FAILURES_PER_S,
        overall: float = tuning.STRANGER_LOOKUPS_PER_S,
        queue_s: float = tuning.STRANGER_QUEUE_S,
        most: int = tuning.STRANGER_ADDRESSES_KEPT,
        memory_s: float = 60.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._per_address, self._overall = per_address, overall
        self._queue_s, self._most, self._memory_s, self._now = queue_s, most, memory_s, monotonic
        self._next: dict[str, float] = {}  # an address's next turn
        self._overall_next = -math.inf
        self.refused = 0  # for tests and benchmarks

    def failing(self, address: str) -> bool:
        turn = self._next.get(address)
        return turn is not None and turn > self._now() - self._memory_s

    def failed(self, address: str) -> None:
        """A token from `address` matched no team: its requests are paced from now on."""
        if address in self._next:
            return
        if len(self._next) >= self._most:
            stale = self._now() - self._memory_s
            self._next = {a: t for a, t in self._next.items() if t > stale}
            if len(self._next) >= self._most:
                self._next.clear()  # that many failing addresses at once: start over
        self._next[address] = self._now() - 1.0  # a second's worth may go at once

    async def turn(self, address: str) -> None:
        """Wait for the turn of a request from a failing address (at once for any other);
        TooManyFailures if that would take over `queue_s`."""
        if not self.failing(address):
            return
        now = self._now()
        mine = max(self._next[address], now - 1.0)
        turn = max(mine, self._overall_next, now - 1.0)
        if turn - now > self._queue_s:
            self.refused += 1
            wait = max(1, math.ceil(turn - now - self._queue_s))
            raise TooManyFailures(
                "too many requests with unknown tokens from this address; retry later",
                headers={"Retry-After": str(wait)},
            )
        self._next[address] = turn + 1 / self._per_address
        self._overall_next = turn + 1 / self._overall
        if turn > now:
            await asyncio.sleep(turn - now)
