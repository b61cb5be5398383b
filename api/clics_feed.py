"""The Contest API's event feed in an API process: one poller (`FeedHub`) reads the event log
for every follower of every contest, renders each page once (`core.clics_feed`) and keeps the
lines for a while; each follower takes what it may see from them. Followers cost no query of
their own once they have caught up, so fifty of them cost what one does.

A follower starts from a snapshot (or from `since_token`) and catches up from the store itself,
a page at a time, until the poller holds what it needs; one that falls behind what the poller
keeps goes back to catching up. Memory is bounded: the poller keeps at most `kept` lines and a
follower one page. A follower whose client goes away is cancelled by the response, and the
poller stops when the last one has gone.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import time
from collections import Counter
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

import structlog

from core import clock, tuning
from core.clics import ContestData, Role, Viewer
from core.clics_feed import Line, Renderer, finish, snapshot, state_line, wanted
from core.ports import ClicsReads
from core.records import Contest

T = TypeVar("T")
Run = Callable[[Callable[[], T]], Awaitable[T]]
log = structlog.get_logger("tilejudge.clics")
SNAPSHOT_CHUNK = 500  # lines a yield of the snapshot carries


@dataclass(frozen=True)
class Page:
    """What a follower catching up on its own read: its lines and the id it has read up to."""

    cursor: int
    chunk: bytes
    caught_up: bool


class FeedHub:
    def __init__(
        self,
        reader: ClicsReads,
        run: Run[object],
        *,
        poll_s: float = tuning.CLICS_POLL_S,
        page: int = tuning.CLICS_PAGE,
        kept: int = tuning.CLICS_LINES_KEPT,
        keepalive_s: float = tuning.CLICS_KEEPALIVE_S,
        most: int = tuning.CLICS_FOLLOWERS_MOST,
    ) -> None:
        self._reader = reader
        self._run = run
        self.poll_s, self.page, self.kept, self.keepalive_s = poll_s, page, kept, keepalive_s
        self.most = most
        self._lines: list[Line] = []
        self._cursor: int | None = None  # the last event the lines are complete up to
        self._since: dict[str, int | None] = {}  # per contest: lines held from after this id
        self._followers: Counter[str] = Counter()
        # Followers per audience, and per address (the public) or team (a team's).
        self._audiences: Counter[Role] = Counter()
        self._holders: Counter[str] = Counter()
        self._contests: dict[str, Contest] = {}  # as last read, for the state object
        self._renderer = Renderer()
        self._tick = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.steps = 0  # for tests and the benchmark

    def followers(self) -> int:
        return sum(self._followers.values())

    def full(self) -> bool:
        """Whether the process follows as many feeds as it may: each holds a connection and,
        while it catches up, a page of lines."""
        return self.followers() >= self.most

    def refusal(self, viewer: Viewer, address: str) -> str | None:
        """Why a new follower is refused (answered 503), or None. Beside the process's `most`,
        anonymous followers take at most CLICS_PUBLIC_FOLLOWERS_SHARE of it and with the teams'
        at most CLICS_TEAM_FOLLOWERS_SHARE, so a flood of the first never refuses a team or the
        organiser's tools, and one address (or one team) at most a small share."""
        if self.followers() >= self.most:
            return f"this server has {self.followers()} event-feed followers, its most"
        public, teams = self._audiences[Role.PUBLIC], self._audiences[Role.TEAM]
        if viewer.role is Role.PUBLIC and public >= self.most * tuning.CLICS_PUBLIC_FOLLOWERS_SHARE:
            return f"this server has {public} anonymous event-feed followers, their most"
        if viewer.role is not Role.ADMIN and (
            public + teams >= self.most * tuning.CLICS_TEAM_FOLLOWERS_SHARE
        ):
            return f"this server has {public + teams} event-feed followers without the admin token"
        holder = _holder(viewer, address)
        if holder is not None and self._holders[holder] >= self.per_holder():
            who = "this address" if viewer.role is Role.PUBLIC else "this team"
            return f"{who} follows {self._holders[holder]} event feeds here, its most"
        return None

    def per_holder(self) -> int:
        return max(2, int(self.most * tuning.CLICS_FOLLOWERS_PER_ADDRESS_SHARE))

    def hold(self, viewer: Viewer, address: str) -> None:
        """Count a follower (the feed does, while it streams)."""
        self._audiences[viewer.role] += 1
        holder = _holder(viewer, address)
        if holder is not None:
            self._holders[holder] += 1

    def let_go(self, viewer: Viewer, address: str) -> None:
        self._audiences[viewer.role] -= 1
        holder = _holder(viewer, address)
        if holder is not None:
            self._holders[holder] -= 1
            if self._holders[holder] <= 0:
                del self._holders[holder]

    async def last_event(self) -> int:
        return await self._call(self._reader.last_event)

    async def _call(self, work: Callable[[], T]) -> T:
        return await self._run(work)  # type: ignore[return-value]

    # -- a follower ------------------------------------------------------------------------

    async def follow(
        self,
        contest: Contest,
        viewer: Viewer,
        start: int,
        data: ContestData | None,
        stream: bool,
        address: str = "",
    ) -> AsyncIterator[bytes]:
        """The feed from event `start` on: first the snapshot `data` (read after `start`),
        else the state; without `stream`, it ends once it has caught up with the log. A
        streaming follower counts against its audience's and its address's (`refusal`) from
        its first read on."""
        if stream:
            self.hold(viewer, address)
        try:
            async with contextlib.aclosing(
                self._follow(contest, viewer, start, data, stream)
            ) as feed:
                async for chunk in feed:
                    yield chunk
        finally:
            if stream:
                self.let_go(viewer, address)

    async def _follow(
        self,
        contest: Contest,
        viewer: Viewer,
        start: int,
        data: ContestData | None,
        stream: bool,
    ) -> AsyncGenerator[bytes, None]:
        now = clock.now()
        if data is not None:
            for chunk in _snapshot_chunks(data, viewer, now, start):
                yield chunk
        else:
            yield finish(state_line(contest, now), None)
        cursor, last_state = start, state_line(contest, now)
        renderer = Renderer()
        if not stream:
            end = await self.last_event()
            while cursor < end:
                page = await self._call(
                    partial(self._catch_up, contest.id, viewer, cursor, renderer)
                )
                cursor = page.cursor
                if page.chunk:
                    yield page.chunk
            return
        self._watch(contest.id)
        try:
            sent = time.monotonic()
            while True:
                held = self._since.get(contest.id)
                tick = self._tick
                if held is None or cursor < held:
                    page = await self._call(
                        partial(self._catch_up, contest.id, viewer, cursor, renderer)
                    )
                    cursor, chunk, waiting = page.cursor, page.chunk, page.caught_up
                else:
                    cursor, chunk, waiting = self._take(contest.id, viewer, cursor)
                latest = self._contests.get(contest.id, contest)
                state = state_line(latest, clock.now())
                if state != last_state:
                    chunk, last_state = chunk + finish(state, None), state
                if chunk:
                    yield chunk
                    sent = time.monotonic()
                elif time.monotonic() - sent >= self.keepalive_s:
                    yield b"\n"
                    sent = time.monotonic()
                if waiting:
                    await _wait(tick, min(self.poll_s * 4, self.keepalive_s))
        finally:
            self._unwatch(contest.id)

    def _catch_up(self, contest_id: str, viewer: Viewer, cursor: int, renderer: Renderer) -> Page:
        """A page of the contest's events after `cursor`, read and rendered by this follower."""
        top = self._reader.last_event()
        logged = self._reader.logged_after(cursor, self.page, contest_id)
        now = clock.now()
        lines = renderer.render(logged, self._reader.reads_for(wanted(logged), now), now)
        chunk = b"".join(_tokened(line for line in lines if line.seen_by(viewer)))
        if len(logged) == self.page:
            return Page(logged[-1].id, chunk, False)
        return Page(max([top, cursor, *(e.id for e in logged[-1:])]), chunk, True)

    def _take(self, contest_id: str, viewer: Viewer, cursor: int) -> tuple[int, bytes, bool]:
        """What the poller holds for this follower after `cursor`, at most about a page of
        lines (whole events), the id it is then at, and whether it has taken all there is."""
        lines = self._lines
        at = bisect.bisect_right(lines, cursor, key=lambda line: line.source)
        mine: list[Line] = []
        while at < len(lines):
            line = lines[at]
            if len(mine) >= self.page and line.source != lines[at - 1].source:
                return lines[at - 1].source, b"".join(_tokened(mine)), False
            if line.contest == contest_id and line.seen_by(viewer):
                mine.append(line)
            at += 1
        return max(cursor, self._cursor or 0), b"".join(_tokened(mine)), True

    def _watch(self, contest_id: str) -> None:
        if self._followers[contest_id] == 0:
            self._since[contest_id] = None  # held from the poller's next step on
        self._followers[contest_id] += 1
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._poll())

    def _unwatch(self, contest_id: str) -> None:
        self._followers[contest_id] -= 1
        if self._followers[contest_id] <= 0:
            del self._followers[contest_id]
            self._since.pop(contest_id, None)

    # -- the poller ------------------------------------------------------------------------

    async def _poll(self) -> None:
        try:
            while self._followers:
                try:
                    if self._cursor is None:
                        self._cursor = await self.last_event()
                    start, watched = self._cursor, set(self._since)
                    end, lines, contests = await self._call(partial(self._step, start, watched))
                except Exception:  # an outage: followers wait, the next step tries again
                    log.exception("clics.poll_failed")
                    await asyncio.sleep(self.poll_s)
                    continue
                self._keep(lines)
                self._cursor = end
                for contest_id in watched:
                    if contest_id in self._since and self._since[contest_id] is None:
                        self._since[contest_id] = start
                self._contests.update(contests)
                self.steps += 1
                self._tick.set()
                self._tick = asyncio.Event()
                if end - start < self.page:
                    await asyncio.sleep(self.poll_s)
        finally:  # nobody follows: start afresh from the log's end next time
            self._lines, self._cursor, self._contests = [], None, {}
            self._renderer = Renderer()

    def _step(self, start: int, watched: set[str]) -> tuple[int, list[Line], dict[str, Contest]]:
        top = self._reader.last_event()
        logged = self._reader.logged_after(start, self.page)
        now = clock.now()
        reads = self._reader.reads_for(wanted(logged, watched), now)
        lines = self._renderer.render(logged, reads, now)
        end = (
            logged[-1].id
            if len(logged) == self.page
            else max([top, start, *(e.id for e in logged)])
        )
        return end, lines, {cid: read.data.contest for cid, read in reads.items()}

    def _keep(self, lines: list[Line]) -> None:
        """Add a step's lines; past `kept`, drop the oldest half, whole events at a time, and
        send the followers that needed them back to catching up."""
        self._lines.extend(lines)
        if len(self._lines) <= self.kept:
            return
        cut_source = self._lines[len(self._lines) // 2].source
        cut = bisect.bisect_right(self._lines, cut_source, key=lambda line: line.source)
        del self._lines[:cut]
        for contest_id, held in self._since.items():
            if held is not None:
                self._since[contest_id] = max(held, cut_source)


def _holder(viewer: Viewer, address: str) -> str | None:
    """What a follower's share is counted by: its address, or its team (a team's followers
    behind one proxy are not one address's), none for the organiser's tools."""
    if viewer.role is Role.PUBLIC:
        return f"address {address}"
    if viewer.role is Role.TEAM:
        return f"team {viewer.team_id}"
    return None


def _tokened(lines: Iterable[Line]) -> Iterator[bytes]:
    """Finished lines, the last of each logged event's carrying its id as the token."""
    previous: Line | None = None
    for line in lines:
        if previous is not None:
            yield finish(previous.body, previous.source if line.source != previous.source else None)
        previous = line
    if previous is not None:
        yield finish(previous.body, previous.source)


def _snapshot_chunks(data: ContestData, viewer: Viewer, now: str, token: int) -> Iterator[bytes]:
    bodies = list(snapshot(data, viewer, now))
    for start in range(0, len(bodies), SNAPSHOT_CHUNK):
        part = bodies[start : start + SNAPSHOT_CHUNK]
        last = start + len(part) == len(bodies)
        yield b"".join(
            finish(b, token if last and i == len(part) - 1 else None) for i, b in enumerate(part)
        )


async def _wait(tick: asyncio.Event, timeout: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(tick.wait(), timeout)
