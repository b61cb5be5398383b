"""The scoreboard page's live stream (`text/event-stream`): each follower is sent the page's
live part (`api.pages.board`) when it changes, and a comment line when nothing has for a while.

What a follower costs is bounded. The contest's board is computed once per process per window
for every follower and reader of every page (`api.public.SharedReads`, on the public threads); a
follower holds no thread and no pacing turn while it follows, only its connection, a timer and
the digest of what it was last sent; it ends after FOLLOW_MOST_S (the browser reconnects). The
process serves at most FOLLOWERS_MOST followers, one client address at most
FOLLOWERS_PER_ADDRESS (the address uvicorn reports: a trusted proxy's client's, docs/deploy.md);
beyond, the stream is refused with 503 and Retry-After."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable

import structlog

from api.errors import ApiError
from api.pages.board import LivePart, shown
from core import clock
from core.errors import NotFound

log = structlog.get_logger("tilejudge.pages")
# Each holds one of the process's connections (uvicorn's limit, devstack.children.CONNECTIONS_MOST:
# 1,000): with the Contest API feed's 500 (core.tuning.CLICS_FOLLOWERS_MOST), 100 stay for
# requests. Two API processes serve 800 pages.
FOLLOWERS_MOST = 400
FOLLOWERS_PER_ADDRESS = 20  # a room of screens behind one address, not a crowd
TICK_S = 0.5  # how often a follower looks at the shared part: a change shows within ~1.5 s
KEEPALIVE_S = 15.0  # a comment line then, so proxies keep the connection
FOLLOW_MOST_S = 3600.0  # then the stream ends and the browser opens a new one
RETRY_MS = 2000  # what the browser waits before it reconnects
RETRY_AFTER_S = "5"


class Busy(ApiError):
    status, code = 503, "busy"


class Followers:
    """How many follow, in all and per client address."""

    def __init__(self, most: int = FOLLOWERS_MOST, per_address: int = FOLLOWERS_PER_ADDRESS):
        self.most, self.per_address = most, per_address
        self._by_address: Counter[str] = Counter()
        self._count = 0

    def count(self) -> int:
        return self._count

    def refusal(self, address: str) -> str | None:
        """Why a new follower from `address` is refused (answered 503), or None."""
        if self._count >= self.most:
            return f"this server has {self._count:,} scoreboard followers, its most"
        if self._by_address[address] >= self.per_address:
            return f"this address follows {self._by_address[address]} scoreboards here, its most"
        return None

    def hold(self, address: str) -> None:
        self._count += 1
        self._by_address[address] += 1

    def let_go(self, address: str) -> None:
        self._count -= 1
        self._by_address[address] -= 1
        if self._by_address[address] <= 0:
            del self._by_address[address]


def event(name: str, data: object) -> bytes:
    """One server-sent event; its data JSON on one line."""
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


async def follow(
    followers: Followers,
    address: str,
    read: Callable[[], Awaitable[LivePart]],
    *,
    tick_s: float = TICK_S,
    keepalive_s: float = KEEPALIVE_S,
    most_s: float = FOLLOW_MOST_S,
    monotonic: Callable[[], float] = time.monotonic,
) -> AsyncIterator[bytes]:
    """The stream of one follower: the live part `read` gives, each time it changes. Counted
    against `followers` from its first step on (the route has checked the room: a burst of
    opens may pass the check together, a few more than the bound for a moment)."""
    followers.hold(address)
    try:
        yield f"retry: {RETRY_MS}\n\n".encode()
        started = sent = monotonic()
        last = ""
        while monotonic() - started < most_s:
            try:
                part: LivePart | None = await read()
            except NotFound:
                yield event("gone", {"message": "this contest is no longer here"})
                return
            except Exception:  # an outage: the follower keeps what it has, and tries again
                log.warning("pages.stream_read_failed", exc_info=True)
                part = None
            if part is not None and part.digest != last:
                last = part.digest
                now = clock.now()
                yield event("board", {"html": shown(part, now), "now": now, "pages": part.pages})
                sent = monotonic()
            elif monotonic() - sent >= keepalive_s:
                yield b": keep-alive\n\n"
                sent = monotonic()
            await asyncio.sleep(tick_s)
    finally:
        followers.let_go(address)
