"""Intake's group commit: uploads that arrive together share one SQL transaction, and each
committed group goes to the broker from a thread of its own.

A burst of uploads then costs one commit (one fsync) and a few statements per group instead of
per upload, and each upload is still answered only once its row is durable.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Generic, TypeVar

import structlog

from core import tuning
from core.errors import CoreError, Duplicate, PublishFailed
from core.messages import HEAVY_PRIORITIES, LIGHT_PRIORITY, heavy_priority
from core.ports import Publisher, QueueProbe, SubmissionStore
from core.records import Submission

log = structlog.get_logger("tilejudge.intake")
T = TypeVar("T")


@dataclass
class PendingUpload:
    """An upload waiting for its group's commit."""

    submission: Submission
    data: bytes | None
    done: Future[Submission | None]


class _QueueThread(Generic[T]):
    """A daemon thread handling what is put on its queue, until `close` (a None on the queue)."""

    def __init__(self, name: str) -> None:
        self._pending: queue.SimpleQueue[T | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._pending.put(None)
        self._thread.join(timeout=10)

    def _run(self) -> None:
        running = True
        while running:
            first = self._pending.get()
            if first is None:
                return
            running = self._handle(first)

    def _handle(self, first: T) -> bool:
        """Handle `first` with whatever else waits; False once told to stop meanwhile."""
        raise NotImplementedError


class GroupPublish(_QueueThread[list[PendingUpload]]):
    """Publishes stored uploads for judging a group at a time, on its own thread, and has
    them marked queued: whatever was committed while the last group went out goes in the next,
    all of a group's messages in one round trip to the broker.

    With the workers idle a group goes out at once, spread over at least `spread` messages
    (the judging processes of a machine); while messages are waiting for the workers anyway,
    it waits up to `linger` for company and goes out a full GROUP_MOST uploads to a message:
    a backlog then drains with fewer messages, claims and recording transactions, and not
    one upload is judged later for it.

    On its own thread so that a slow broker delays judging, never a commit; the broker
    refusing leaves the uploads `stored`, and the sweeper publishes them later."""

    def __init__(
        self,
        publisher: Publisher,
        mark_queued: Callable[[Submission], None],
        spread: int = 1,
        backlog: QueueProbe = lambda: None,
        linger: float = tuning.PUBLISH_LINGER_S,
    ) -> None:
        self._publisher = publisher
        self._mark_queued = mark_queued
        self._spread = spread
        self._backlog = backlog
        self._linger = linger
        self._heavy = HeavyCounts()
        super().__init__("tilejudge-publish")

    def put(self, uploads: list[PendingUpload]) -> None:
        if uploads:
            self._pending.put(uploads)

    def _handle(self, first: list[PendingUpload]) -> bool:
        group = list(first)
        full = tuning.GROUP_MOST * self._spread
        running = self._gather(group, full, wait=0.0)
        spread = self._spread
        if running and len(group) < full and self._workers_busy():
            running = self._gather(group, full, wait=self._linger)
            spread = 1
        self._publish(group, spread)
        return running

    def _gather(self, group: list[PendingUpload], full: int, wait: float) -> bool:
        """Add what comes within `wait` seconds, up to `full`; False if told to stop."""
        deadline = time.monotonic() + wait
        while len(group) < full:
            left = deadline - time.monotonic()
            try:
                more = self._pending.get(timeout=left) if left > 0 else self._pending.get_nowait()
            except queue.Empty:
                return True
            if more is None:
                return False  # publish this group, then stop
            group += more
        return True

    def _workers_busy(self) -> bool:
        """At least as many messages wait as a machine has judging processes."""
        try:
            waiting = self._backlog()
        except Exception:
            return False
        return waiting is not None and waiting >= self._spread

    def _publish(self, group: list[PendingUpload], spread: int) -> None:
        light = [u for u in group if u.submission.size <= tuning.HEAVY_BYTES]
        parts = [(light, spread, LIGHT_PRIORITY)] if light else []
        for upload in group:
            if upload.submission.size > tuning.HEAVY_BYTES:
                parts.append(([upload], 1, self._heavy.priority(upload.submission.team_id)))
        for uploads, spreading, priority in parts:
            try:
                self._publisher.publish_group(
                    [(u.submission.id, u.data) for u in uploads],
                    spread=spreading,
                    priority=priority,
                )
            except PublishFailed as exc:
                log.warning("intake.broker_unavailable", count=len(uploads), error=str(exc))
                continue  # stored durably; the sweeper publishes them when the broker is back
            for upload in uploads:
                self._mark_queued(upload.submission)


class HeavyCounts:
    """How many heavy uploads each team sent within the last HEAVY_WINDOW_S, as this process saw
    them: the priority of its next one. Bounded: teams quiet for the window are forgotten, and at
    most HEAVY_TEAMS_KEPT are kept (the quietest dropped first)."""

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self._now = now
        self._sent: dict[str, deque[float]] = {}

    def teams(self) -> int:
        return len(self._sent)

    def priority(self, team_id: str) -> int:
        now = self._now()
        since = now - tuning.HEAVY_WINDOW_S
        sent = self._sent.pop(team_id, None) or deque()
        while sent and sent[0] <= since:
            sent.popleft()
        priority = heavy_priority(len(sent))
        sent.append(now)
        while len(sent) > len(HEAVY_PRIORITIES):
            sent.popleft()  # the lowest priority is reached; older sends add nothing
        self._sent[team_id] = sent  # last in the dict: the most recently active
        while len(self._sent) > tuning.HEAVY_TEAMS_KEPT:
            del self._sent[next(iter(self._sent))]
        return priority


class GroupCommit(_QueueThread[PendingUpload | Submission]):
    """Writes intake's rows in groups: uploads to store, and published uploads to mark `queued`.

    Whatever arrived while the previous transaction committed goes into the next one (no
    waiting to fill it), so a burst of uploads costs one commit (one fsync) and a few
    statements per group instead of per upload, and each upload is answered only once its
    group has committed: a 202 still means the row is durable. Marks ride along with the next
    group; alone, they wait `linger` for company. A mark lost in a crash costs nothing: the
    worker's claim takes `stored` as readily as `queued`.
    """

    def __init__(
        self,
        store: SubmissionStore,
        most: int = tuning.COMMIT_MOST,
        linger: float = tuning.MARK_LINGER_S,
        publisher: Publisher | None = None,
        spread: int = 1,
        backlog: QueueProbe = lambda: None,
    ) -> None:
        self._store = store
        self._most = most
        self._linger = linger
        self._publishing = (
            GroupPublish(publisher, self.mark_queued, spread, backlog)
            if publisher is not None
            else None
        )
        super().__init__("tilejudge-group-commit")

    @property
    def publishes(self) -> bool:
        """Whether the uploads it stores are published (and marked queued) by it."""
        return self._publishing is not None

    def submit(
        self, submission: Submission, data: bytes | None = None
    ) -> Future[Submission | None]:
        """Store one upload with whatever else is waiting. The future answers the upload as
        stored (with its transparency log leaf), None if its bytes were there already; it
        raises Closed if its contest closed before it was received (NotAllowed if its team may
        not upload the game logs it takes), or what the store raised (for this upload alone
        where that can be told). It is answered even if whoever waits for it is gone. If it
        publishes, the stored upload (`data`: its bytes, to carry in the message) goes to the
        broker with its group after the commit, not before the answer."""
        done: Future[Submission | None] = Future()
        done.set_running_or_notify_cancel()  # a cancelled waiter cannot cancel it
        self._pending.put(PendingUpload(submission, data, done))
        return done

    async def stored(self, submission: Submission, data: bytes | None = None) -> Submission | None:
        """`submit`, awaited on the event loop: no thread is held while the group commits."""
        return await asyncio.wrap_future(self.submit(submission, data))

    def mark_queued(self, submission: Submission) -> None:
        """stored -> queued with the next group (its message is out)."""
        self._pending.put(submission)

    def close(self) -> None:
        super().close()
        if self._publishing is not None:
            self._publishing.close()

    def _handle(self, first: PendingUpload | Submission) -> bool:
        uploads: list[PendingUpload] = []
        marks: list[Submission] = []
        _sort(first, uploads, marks)
        running = True
        if not uploads:  # marks alone: wait a little for company, an upload ends the wait
            running = self._linger_for_upload(uploads, marks)
        # The group is gathered once this process's turn to write has come: whatever arrived
        # while another process (or a worker) held it joins the group instead of waiting for
        # the next turn.
        with self._store.writer_turn():
            while running and len(uploads) < self._most and len(marks) < 4 * self._most:
                try:
                    item = self._pending.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    running = False  # finish this group, then stop
                    break
                _sort(item, uploads, marks)
            self._commit(uploads, marks)
        return running

    def _linger_for_upload(self, uploads: list[PendingUpload], marks: list[Submission]) -> bool:
        """Gather marks until an upload comes or `linger` is over; False if told to stop."""
        deadline = time.monotonic() + self._linger
        while not uploads:
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            try:
                item = self._pending.get(timeout=left)
            except queue.Empty:
                return True
            if item is None:
                return False
            _sort(item, uploads, marks)
        return True

    def _commit(self, uploads: list[PendingUpload], marks: list[Submission]) -> None:
        try:
            rows = self._store.store_submissions([u.submission for u in uploads], queued=marks)
            stored = [isinstance(row, Submission) for row in rows]
        except Duplicate:
            # Another process stored the same bytes meanwhile: one by one, so only they fail.
            stored = [_settle(upload.done, self._store, upload.submission) for upload in uploads]
            self._mark(marks)
        except Exception as exc:
            for upload in uploads:
                upload.done.set_exception(exc)
            if marks:
                log.warning("intake.mark_queued_failed", count=len(marks), error=str(exc))
            return
        else:
            for upload, row in zip(uploads, rows, strict=True):
                _answer(upload.done, row)
        if self._publishing is not None:
            self._publishing.put([u for u, new in zip(uploads, stored, strict=True) if new])

    def _mark(self, marks: list[Submission]) -> None:
        if not marks:
            return
        try:
            self._store.mark_queued_many([s.id for s in marks])
        except Exception as exc:
            log.warning("intake.mark_queued_failed", count=len(marks), error=str(exc))


def _sort(
    item: PendingUpload | Submission, uploads: list[PendingUpload], marks: list[Submission]
) -> None:
    if isinstance(item, Submission):
        marks.append(item)
    else:
        uploads.append(item)


def _answer(done: Future[Submission | None], row: Submission | CoreError | None) -> None:
    """Stored (the row), a submission already (None), or refused: its contest closed, its
    team may not upload game logs."""
    if isinstance(row, CoreError):
        done.set_exception(row)
    else:
        done.set_result(row)


def _settle(
    done: Future[Submission | None], store: SubmissionStore, submission: Submission
) -> bool:
    """Store one upload alone and answer it; whether it was stored."""
    try:
        row = store.store_submissions([submission])[0]
    except Exception as exc:
        done.set_exception(exc)
        return False
    _answer(done, row)
    return isinstance(row, Submission)
