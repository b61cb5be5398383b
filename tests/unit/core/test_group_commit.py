"""Intake's group commit against the fake store: uploads that arrive while a group commits go
into the next transaction together, each answered for itself, then to the broker."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future

import pytest

from core.errors import CoreError
from core.fakes import InMemoryBlobStore, InMemoryPublisher, InMemorySubmissionStore
from core.group_commit import GroupCommit
from core.records import Submission
from core.states import SubmissionState
from tests.unit.core.conftest import LATE, Clock, upload


class HeldStore(InMemorySubmissionStore):
    """Holds its first group of uploads until `go` is set: what is submitted meanwhile waits
    for the group commit's next transaction."""

    def __init__(self, now: Clock) -> None:
        super().__init__(now)
        self.holding = threading.Event()
        self.go = threading.Event()

    def store_submissions(
        self, batch: Sequence[Submission], queued: Sequence[Submission] = ()
    ) -> list[Submission | CoreError | None]:
        if batch and not self.holding.is_set():
            self.holding.set()
            assert self.go.wait(5)
        return super().store_submissions(batch, queued)


@pytest.fixture
def held(store: InMemorySubmissionStore, fake_clock: Clock) -> HeldStore:
    """A store holding its first group, with the fixture store's contest and team."""
    found = HeldStore(fake_clock)
    found.add_contest(store.contests["wt"])
    found.add_team(store.teams["ravens"])
    return found


@pytest.fixture
def commits(held: HeldStore, publisher: InMemoryPublisher) -> Iterator[GroupCommit]:
    group = GroupCommit(held, publisher=publisher)
    try:
        yield group
    finally:
        group.close()


def behind_a_held_group(
    held: HeldStore, commits: GroupCommit, blobs: InMemoryBlobStore, later: list[Submission]
) -> tuple[Submission, list[Future[bool]]]:
    """Submit one upload, and `later` while its group is held; then let them go."""
    first = upload(blobs, b"0 0 2 0 cab\n")
    answered = commits.submit(first)
    assert held.holding.wait(5)
    futures = [commits.submit(submission) for submission in later]
    held.go.set()
    assert answered.result(timeout=5)
    return first, futures


def answer(future: Future[Submission | None]) -> bool | str:
    """Stored (True: the row came back), a submission already (False), or the name of the
    refusal."""
    error = future.exception(timeout=5)
    return type(error).__name__ if error is not None else future.result() is not None


def settle(publisher: InMemoryPublisher, count: int, timeout: float = 2.0) -> None:
    deadline = time.monotonic() + timeout
    while len(publisher.published) < count and time.monotonic() < deadline:
        time.sleep(0.002)


def test_uploads_arriving_while_a_group_commits_share_the_next_transaction(
    held: HeldStore,
    commits: GroupCommit,
    blobs: InMemoryBlobStore,
    publisher: InMemoryPublisher,
) -> None:
    later = [upload(blobs, f"0 0 2 0 cat\n{n} 1 {n} 2 at\n".encode()) for n in range(5)]

    first, futures = behind_a_held_group(held, commits, blobs, later)

    assert [answer(future) for future in futures] == [True] * 5
    assert held.stored_batches == [[first.id], [s.id for s in later]]
    settle(publisher, 6)
    assert sorted(publisher.published) == sorted([first.id, *(s.id for s in later)])


def test_in_one_group_a_repeat_is_answered_as_known_and_a_late_upload_alone_is_refused(
    held: HeldStore, commits: GroupCommit, blobs: InMemoryBlobStore
) -> None:
    fresh = upload(blobs, b"0 0 2 0 tea\n")
    repeat = upload(blobs, b"0 0 2 0 tea\n")
    late = upload(blobs, b"0 0 2 0 eat\n", received_at=LATE)

    _, futures = behind_a_held_group(held, commits, blobs, [fresh, repeat, late])

    assert [answer(future) for future in futures] == [True, False, "Closed"]
    assert len(held.stored_batches[1]) == 3  # one transaction for the three
    assert fresh.id in held.submissions
    assert repeat.id not in held.submissions and late.id not in held.submissions


def test_an_upload_the_broker_refuses_stays_stored_for_the_sweeper(
    store: InMemorySubmissionStore, blobs: InMemoryBlobStore, publisher: InMemoryPublisher
) -> None:
    publisher.down = True
    commits = GroupCommit(store, publisher=publisher)
    try:
        submission = upload(blobs, b"0 0 2 0 bat\n")
        assert commits.submit(submission).result(timeout=5)
        deadline = time.monotonic() + 2
        while submission.id not in publisher.asked and time.monotonic() < deadline:
            time.sleep(0.002)
    finally:
        commits.close()

    assert publisher.asked == [submission.id]
    assert publisher.published == []
    assert store.submissions[submission.id].state == SubmissionState.STORED
