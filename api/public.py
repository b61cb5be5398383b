"""Public reads (leaderboards, contest pages, `/readyz`, `/metrics`, the sign-in's checks) run
on a small thread budget of their own and are shared between callers, so that any number of
readers costs a bounded number of computations and never takes the threads uploads need.

While one computation of a key runs, every caller asking for that key waits for its answer
(on the event loop, holding no thread). A key asked for more than `fresh` times within one
`window` is answered from its last computation until the window ends: a board a few people
read is always current, and a board hundreds poll costs at most `fresh` computations a
window, its answer at most a window old. `fresh=0` caches every answer for the window.

Public requests are also paced (`pace`): at most `rate` a second per API process start, with a
second's worth at once, the rest waiting their turn on the event loop for up to `queue_s`, and
beyond that refused with 503. Shared answers cost little, but hundreds of readers asking as fast
as they are answered would still take the event loop and the cores from uploads."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import anyio
import anyio.to_thread

T = TypeVar("T")

PUBLIC_THREADS = 4  # beside the 40 of the default pool, which uploads and the organiser use
WINDOW_S = 1.0
FRESH_PER_WINDOW = 4
KEYS_MOST = 4096  # keys remembered (contest ids asked for); beyond, all are forgotten
PUBLIC_READS_PER_S = 100  # per API process; TILEJUDGE_PUBLIC_READS sets it
PACE_QUEUE_S = 2.0  # a public request that would wait longer for its turn is refused


@dataclass
class _Entry:
    window_start: float = -math.inf
    asked: int = 0
    at: float = -math.inf  # when the last computation ended
    value: Any = None
    error: BaseException | None = None
    computed: bool = False
    generation: int = 0  # computations ended; a waiter takes only one that ended after it came
    pending: asyncio.Future[None] | None = field(default=None)


class SharedReads:
    def __init__(
        self,
        *,
        threads: int = PUBLIC_THREADS,
        window: float = WINDOW_S,
        monotonic: Callable[[], float] = time.monotonic,
        keys_most: int = KEYS_MOST,
        rate: float = PUBLIC_READS_PER_S,
        queue_s: float = PACE_QUEUE_S,
    ) -> None:
        self._rate, self._queue_s = rate, queue_s
        self._next_turn = -math.inf
        self._threads = threads
        self._window = window
        self._now = monotonic
        self._keys_most = keys_most
        self._entries: dict[Hashable, _Entry] = {}
        self._limiter: anyio.CapacityLimiter | None = None
        self.computations = 0  # for tests and benchmarks

    @property
    def limiter(self) -> anyio.CapacityLimiter:
        """The public thread budget; made on first use, inside the event loop."""
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self._threads)
        return self._limiter

    async def pace(self) -> bool:
        """Wait for this request's turn; False (answer 503) if that would take over `queue_s`.
        A rate of 0 paces nothing."""
        if self._rate <= 0:
            return True
        now = self._now()
        turn = max(self._next_turn, now - 1.0)  # a second's worth may go at once
        if turn - now > self._queue_s:
            return False
        self._next_turn = turn + 1 / self._rate
        if turn > now:
            await asyncio.sleep(turn - now)
        return True

    async def run(self, work: Callable[[], T]) -> T:
        """`work()` on the public budget, unshared (a sign-in's checks)."""
        return await anyio.to_thread.run_sync(work, limiter=self.limiter)

    async def get(self, key: Hashable, compute: Callable[[], T], *, fresh: int = 0) -> T:
        entry = self._entry(key)
        now = self._now()
        if now - entry.window_start >= self._window:
            entry.window_start, entry.asked = now, 0
        entry.asked += 1
        while entry.pending is not None:
            came = entry.generation
            await asyncio.shield(entry.pending)
            if entry.generation != came:  # the computation it waited for ended with an answer
                return cast(T, _answer(entry))
        if entry.computed and now - entry.at < self._window and entry.asked > fresh:
            return cast(T, _answer(entry))
        entry.pending = asyncio.get_running_loop().create_future()
        try:
            self.computations += 1
            value = await self.run(compute)
        except Exception as exc:  # the same failure answers the window's callers, then is retried
            entry.value, entry.error, entry.computed, entry.at = None, exc, True, self._now()
            entry.generation += 1
        else:
            entry.value, entry.error, entry.computed, entry.at = value, None, True, self._now()
            entry.generation += 1
        finally:  # cancelled: the callers waiting find no new answer, and compute their own
            pending, entry.pending = entry.pending, None
            pending.set_result(None)
        return cast(T, _answer(entry))

    def forget(self, *keys: Hashable) -> None:
        """Compute these afresh at the next call (this process changed what they show). Safe
        from a route's thread: the entry is dropped whole, and a computation under way, which
        holds it, completes for its own callers."""
        for key in keys:
            self._entries.pop(key, None)

    def _entry(self, key: Hashable) -> _Entry:
        entry = self._entries.get(key)
        if entry is None:
            if len(self._entries) >= self._keys_most:
                self._entries = {k: e for k, e in self._entries.items() if e.pending is not None}
            entry = self._entries[key] = _Entry()
        return entry


def _answer(entry: _Entry) -> Any:
    if entry.error is not None:
        raise entry.error
    return entry.value
