"""The last board computed for each contest in this API process, so that a reader arriving
while the next one is computed is answered at once from it instead of waiting.

The shared reads (`api.public`) compute a contest's board at most once a second, but everyone
asking while that computation runs waits for it: on a busy host that is most readers of a
popular board for as long as the computation takes. A page at most a few seconds old is as good
to a reader, so one computed less than STALE_MOST_S ago answers while the next is under way;
an older one is not used (the reader waits, as without this)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

T = TypeVar("T")
STALE_MOST_S = 5.0
KEPT_MOST = 256  # contests remembered; beyond, all are forgotten


class Latest(Generic[T]):
    def __init__(
        self,
        stale_most_s: float = STALE_MOST_S,
        most: int = KEPT_MOST,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stale_most_s, self._most, self._now = stale_most_s, most, monotonic
        self._kept: dict[str, tuple[float, T]] = {}

    async def get(self, key: str, compute: Callable[[], Awaitable[T]]) -> T:
        """`compute()`'s answer if it comes at once (it was shared already), else the last one
        kept for `key` if recent enough (the computation goes on, and its answer is kept), else
        `compute()`'s answer when it comes."""
        task = asyncio.ensure_future(compute())
        task.add_done_callback(lambda done: self._keep(key, done))
        await asyncio.sleep(0)  # an answer already shared is there after one step
        kept = self._kept.get(key)
        if task.done() or kept is None or self._now() - kept[0] > self._stale_most_s:
            return await task
        return kept[1]

    def _keep(self, key: str, done: asyncio.Future[T]) -> None:
        if done.cancelled() or done.exception() is not None:
            return  # a failure is the caller's to see (a waiting one raises it)
        value = done.result()
        kept = self._kept.get(key)
        if kept is not None and kept[1] is value:
            return  # the same answer shared again: it is as old as when it was first kept
        if key not in self._kept and len(self._kept) >= self._most:
            self._kept.clear()
        self._kept[key] = (self._now(), value)
