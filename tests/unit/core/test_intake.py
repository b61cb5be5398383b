"""Intake against the fakes: the bytes to the blob store, the row to the store in a group
commit, then the broker; a retry, the deadline, and a game sent by several teams."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from core import receipts
from core.errors import BlobStoreUnavailable, Closed, NotAllowed, Throttled
from core.events import EventType
from core.fakes import InMemoryBlobStore, InMemoryPublisher, InMemorySubmissionStore
from core.group_commit import GroupCommit
from core.intake import Intake
from core.quota import InMemoryDailyBytes, StorageQuota
from core.records import Contest, Submission, Team
from core.states import SubmissionState
from judge import Lexicon
from judge.crosstiles import default_board, generate
from tests.unit.core.conftest import IN_TIME, LATE, make_contest, make_team

RECEIPT_KEY = "receipt-key"
BOARD = default_board()
XT_WORDS = Lexicon.from_words(
    ["cat", "at", "ate", "tea", "eat", "tab", "bat", "cab", "to", "in", "on", "no", "it", "is",
     "as", "an", "re", "er", "be", "he", "me", "ta", "ti", "te", "ai", "ea", "ne", "en", "na",
     "ion", "one", "tone", "note", "rate", "tear", "ear", "era", "art", "rat", "tar", "toe"]
)  # fmt: skip
GAME = generate(2, "club-night-1", XT_WORDS, BOARD, rng_seed=1)


@pytest.fixture
def intake(
    store: InMemorySubmissionStore, blobs: InMemoryBlobStore, publisher: InMemoryPublisher
) -> Iterator[Intake]:
    commits = GroupCommit(store, publisher=publisher)
    try:
        yield Intake(store, blobs, publisher, RECEIPT_KEY, commits)
    finally:
        commits.close()


@pytest.fixture
def counts() -> InMemoryDailyBytes:
    return InMemoryDailyBytes()


@pytest.fixture
def quota_of_30_bytes(
    store: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    publisher: InMemoryPublisher,
    counts: InMemoryDailyBytes,
) -> Iterator[Intake]:
    """Intake with a storage quota of 30 bytes per team per day."""
    commits = GroupCommit(store, publisher=publisher)
    try:
        yield Intake(store, blobs, publisher, RECEIPT_KEY, commits, quota=StorageQuota(counts, 30))
    finally:
        commits.close()


@pytest.fixture
def wordytaire(store: InMemorySubmissionStore) -> tuple[Contest, Team]:
    return store.contests["wt"], store.teams["ravens"]


@pytest.fixture
def crosstiles(store: InMemorySubmissionStore) -> Contest:
    """The Crosstiles contest "xt", with the clubs "north" and "south" allowed to send logs and
    "quiet" not."""
    contest = store.add_contest(make_contest("xt", "crosstiles", XT_WORDS.id, BOARD.id))
    for club in ("north", "south"):
        store.add_team(make_team(club, "xt", uploads_logs=True))
    store.add_team(make_team("quiet", "xt"))
    return contest


def accept(
    intake: Intake, team: Team, contest: Contest, data: bytes, received_at: str = IN_TIME
) -> tuple[Submission, bool]:
    return asyncio.run(intake.accept(team, contest, data, received_at))


def accept_late(intake: Intake, team: Team, contest: Contest, data: bytes) -> Submission:
    return asyncio.run(intake.accept_late(team, contest, data, LATE))


def queued(store: InMemorySubmissionStore, submission_id: str, timeout: float = 2.0) -> Submission:
    """The submission once intake's publishing thread has marked it queued."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = store.submissions[submission_id]
        if found.state == SubmissionState.QUEUED:
            return found
        time.sleep(0.002)
    raise AssertionError(f"{submission_id} was not marked queued within {timeout} s")


def uploads(blobs: InMemoryBlobStore) -> set[str]:
    return {key for key in blobs.objects if key.startswith("uploads/")}


def test_an_upload_is_stored_with_a_receipt_then_published_and_marked_queued(
    intake: Intake,
    store: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    publisher: InMemoryPublisher,
    wordytaire: tuple[Contest, Team],
) -> None:
    contest, team = wordytaire
    data = b"0 0 2 0 cat\n"

    submission, created = accept(intake, team, contest, data)

    assert created
    assert blobs.objects[submission.blob_key] == data
    assert blobs.content_types[submission.blob_key] == "application/vnd.tilejudge.upload"
    assert queued(store, submission.id).attempts == 0
    assert publisher.published == [submission.id]
    assert publisher.inline == {submission.id: data}  # small: carried in its message
    fields = {"submission": submission.id, "team": team.id, "contest": contest.id}
    signed = {**fields, "sha256": submission.sha256, "received_at": IN_TIME}
    assert receipts.verify(RECEIPT_KEY, submission.receipt, **signed)
    assert [e["type"] for e in store.events] == [
        EventType.SUBMISSION_STORED,
        EventType.SUBMISSION_QUEUED,
    ]


def test_the_same_bytes_sent_twice_are_one_submission_and_the_second_bytes_are_deleted(
    intake: Intake,
    store: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    publisher: InMemoryPublisher,
    wordytaire: tuple[Contest, Team],
) -> None:
    contest, team = wordytaire
    first, _ = accept(intake, team, contest, b"0 0 2 0 cat\n")

    again, created = accept(intake, team, contest, b"0 0 2 0 cat\n")

    assert not created
    assert again.id == first.id
    assert list(store.submissions) == [first.id]
    assert uploads(blobs) == {first.blob_key}
    queued(store, first.id)  # published by intake's thread, then marked queued
    assert publisher.asked == [first.id]


def test_after_the_close_bytes_sent_in_time_get_their_submission_back_and_new_ones_are_closed(
    intake: Intake,
    store: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    wordytaire: tuple[Contest, Team],
) -> None:
    contest, team = wordytaire
    in_time, _ = accept(intake, team, contest, b"0 0 2 0 cat\n")

    retried = accept_late(intake, team, contest, b"0 0 2 0 cat\n")
    with pytest.raises(Closed, match="closed at"):
        accept_late(intake, team, contest, b"0 0 2 0 tea\n")

    assert retried.id == in_time.id
    assert list(store.submissions) == [in_time.id]
    assert uploads(blobs) == {in_time.blob_key}


def test_an_upload_received_after_the_close_is_refused_in_the_commit_and_its_bytes_deleted(
    intake: Intake,
    store: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    publisher: InMemoryPublisher,
    wordytaire: tuple[Contest, Team],
) -> None:
    contest, team = wordytaire  # its closing time as the store holds it, not as `contest` says

    with pytest.raises(Closed, match=f"received at {LATE}"):
        accept(intake, team, contest, b"0 0 2 0 cat\n", received_at=LATE)

    assert store.submissions == {}
    assert uploads(blobs) == set()
    assert publisher.asked == []


def test_a_game_sent_by_two_clubs_in_two_spellings_is_one_submission_keeping_the_second_copy(
    intake: Intake,
    store: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    publisher: InMemoryPublisher,
    crosstiles: Contest,
) -> None:
    north, south = store.teams["north"], store.teams["south"]
    crlf = GAME.replace(b"\n", b"\r\n")
    first, created = accept(intake, north, crosstiles, GAME)

    again, created_again = accept(intake, south, crosstiles, crlf)

    assert created and not created_again
    assert again.id == first.id and again.team_id == north.id
    assert list(store.submissions) == [first.id]
    copy = store.copy_of(first.id, south.id)
    assert copy is not None and blobs.objects[copy] == crlf
    assert uploads(blobs) == {first.blob_key, copy}
    queued(store, first.id)  # published by intake's thread, then marked queued
    assert publisher.asked == [first.id]  # judged once
    assert EventType.SUBMISSION_COPIED in [e["type"] for e in store.events]


def test_after_the_close_a_game_another_club_sent_in_time_is_answered_and_this_copy_kept(
    intake: Intake, store: InMemorySubmissionStore, crosstiles: Contest
) -> None:
    north, south = store.teams["north"], store.teams["south"]
    first, _ = accept(intake, north, crosstiles, GAME)

    late = accept_late(intake, south, crosstiles, GAME.replace(b"\n", b"\r\n"))

    assert late.id == first.id
    assert store.copy_of(first.id, south.id) is not None


def prefix_of(log: bytes, lines: int = 8) -> bytes:
    """The first lines of a log: its header and a few turns, an unfinished game."""
    return b"".join(log.splitlines(keepends=True)[:lines])


def test_a_prefix_of_a_game_uploaded_first_does_not_block_the_real_log(
    intake: Intake,
    store: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    crosstiles: Contest,
) -> None:
    """The review's attack: seeds are public once a game ends, so a club that knows one and
    its nicks uploads an 8-line prefix first. The real log is still taken, as a game of its
    own; the standings tell which counts (`core.disputes`)."""
    north, south = store.teams["north"], store.teams["south"]
    prefix, _ = accept(intake, north, crosstiles, prefix_of(GAME))

    real, created = accept(intake, south, crosstiles, GAME)

    assert created and real.id != prefix.id
    assert real.match_key == prefix.match_key and real.game_key != prefix.game_key
    assert sorted(store.submissions) == sorted([prefix.id, real.id])
    assert uploads(blobs) == {prefix.blob_key, real.blob_key}


def test_after_the_close_the_real_log_is_refused_only_for_lateness(
    intake: Intake, store: InMemorySubmissionStore, crosstiles: Contest
) -> None:
    north, south = store.teams["north"], store.teams["south"]
    accept(intake, north, crosstiles, prefix_of(GAME))

    with pytest.raises(Closed, match=f"received at {LATE}"):
        accept_late(intake, south, crosstiles, GAME)
    with pytest.raises(Closed, match=f"received at {LATE}"):
        accept(intake, south, crosstiles, GAME, LATE)

    assert len(store.submissions) == 1


def test_a_club_not_allowed_to_send_game_logs_is_refused_and_nothing_is_kept(
    intake: Intake,
    store: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    crosstiles: Contest,
) -> None:
    with pytest.raises(NotAllowed, match="may not upload game logs"):
        accept(intake, store.teams["quiet"], crosstiles, GAME)

    assert store.submissions == {}
    assert uploads(blobs) == set()


def test_an_upload_over_the_teams_daily_storage_quota_is_refused_until_midnight_unstored(
    quota_of_30_bytes: Intake,
    store: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    counts: InMemoryDailyBytes,
    wordytaire: tuple[Contest, Team],
) -> None:
    contest, team = wordytaire
    for line in (b"0 0 2 0 cat\n", b"0 0 2 0 tea\n"):  # 12 bytes each
        accept(quota_of_30_bytes, team, contest, line)

    with pytest.raises(Throttled, match="at most 30 bytes of uploads per team per day") as refused:
        accept(quota_of_30_bytes, team, contest, b"0 0 2 0 eat\n")

    assert refused.value.retry_after == 12 * 3600  # IN_TIME is noon, UTC
    assert len(store.submissions) == 2
    assert len(uploads(blobs)) == 2
    assert counts.counts == {(team.id, IN_TIME[:10]): 24}


def test_the_same_bytes_sent_again_cost_the_quota_nothing(
    quota_of_30_bytes: Intake, counts: InMemoryDailyBytes, wordytaire: tuple[Contest, Team]
) -> None:
    contest, team = wordytaire
    for _ in range(5):
        accept(quota_of_30_bytes, team, contest, b"0 0 2 0 cat\n")

    accept(quota_of_30_bytes, team, contest, b"0 0 2 0 tea\n")  # fits: the retries were refunded

    assert counts.counts == {(team.id, IN_TIME[:10]): 24}


def test_an_upload_that_could_not_be_stored_gives_its_bytes_back_to_the_quota(
    quota_of_30_bytes: Intake,
    blobs: InMemoryBlobStore,
    counts: InMemoryDailyBytes,
    wordytaire: tuple[Contest, Team],
) -> None:
    contest, team = wordytaire
    blobs.down = True
    with pytest.raises(BlobStoreUnavailable):
        accept(quota_of_30_bytes, team, contest, b"0 0 2 0 cat\n")

    assert counts.counts == {(team.id, IN_TIME[:10]): 0}


def test_an_upload_refused_in_the_commit_gives_its_bytes_back_to_the_quota(
    quota_of_30_bytes: Intake, counts: InMemoryDailyBytes, wordytaire: tuple[Contest, Team]
) -> None:
    contest, team = wordytaire
    with pytest.raises(Closed):
        accept(quota_of_30_bytes, team, contest, b"0 0 2 0 cat\n", received_at=LATE)

    assert counts.counts == {(team.id, LATE[:10]): 0}
