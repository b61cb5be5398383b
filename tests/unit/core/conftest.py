"""The core use cases' fixtures: every port as an in-memory fake (no SQL, no network), a
Wordytaire contest with one team, and a clock the tests move."""

from __future__ import annotations

import hashlib
import uuid
from datetime import timedelta

import pytest

from core import clock
from core.fake_contests import InMemoryCaches, InMemoryContestStore, InMemoryTeamStore
from core.fakes import (
    InMemoryBlobStore,
    InMemoryPublisher,
    InMemoryRejudgeStore,
    InMemoryRulesets,
    InMemorySubmissionStore,
)
from core.judging import WorkerDeps
from core.records import Contest, Submission, Team
from core.states import SubmissionState
from judge import Lexicon
from judge.wordytaire import default_layout

OPENS = "2030-01-01T00:00:00.000000Z"
IN_TIME = "2030-01-01T12:00:00.000000Z"
CLOSES = "2030-01-02T00:00:00.000000Z"
LATE = "2030-01-02T00:00:01.000000Z"
TINY = Lexicon.from_words(["cat", "at", "ate", "tea", "eat", "tab", "bat", "cab", "by"])
LAYOUT = default_layout()
MAX_ATTEMPTS = 3


class Clock:
    """The fake database's clock: starts at IN_TIME, moves a microsecond at each reading (as
    a real one would between two transactions) and as far as a test says."""

    def __init__(self, start: str = IN_TIME) -> None:
        self.moment = clock.parse_time(start)

    def __call__(self) -> str:
        self.moment += timedelta(microseconds=1)
        return clock.format_time(self.moment)

    def advance(self, seconds: float) -> None:
        self.moment += timedelta(seconds=seconds)

    def ago(self, seconds: float) -> str:
        """The time that many seconds before now, without moving the clock."""
        return clock.format_time(self.moment - timedelta(seconds=seconds))


def make_contest(
    contest_id: str = "wt",
    game: str = "wordytaire",
    lexicon_id: str = TINY.id,
    rules_id: str = LAYOUT.id,
) -> Contest:
    return Contest(
        id=contest_id,
        title=f"Contest {contest_id}",
        opens_at=OPENS,
        closes_at=CLOSES,
        lexicon_id=lexicon_id,
        rules_id=rules_id,
        created_at=OPENS,
        game=game,
    )


def make_team(team_id: str, contest_id: str = "wt", uploads_logs: bool = False) -> Team:
    return Team(team_id, contest_id, team_id, f"hash-{team_id}", OPENS, uploads_logs)


def upload(
    blobs: InMemoryBlobStore,
    data: bytes,
    *,
    team: str = "ravens",
    contest: str = "wt",
    received_at: str = IN_TIME,
    state_at: str = IN_TIME,
    attempts: int = 0,
) -> Submission:
    """An upload as intake makes it: its bytes in the blob store, its row-to-be `stored`."""
    submission_id = uuid.uuid4().hex
    key = f"uploads/{contest}/{team}/{submission_id}"
    blobs.put(key, data)
    return Submission(
        id=submission_id,
        contest_id=contest,
        team_id=team,
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        blob_key=key,
        received_at=received_at,
        receipt="receipt",
        state=SubmissionState.STORED,
        state_at=state_at,
        attempts=attempts,
        judged_at=None,
        failure=None,
    )


def stored(
    store: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    data: bytes,
    *,
    state_at: str = IN_TIME,
    attempts: int = 0,
) -> Submission:
    """An upload to the team "ravens" of "wt", its row stored."""
    submission = upload(blobs, data, state_at=state_at, attempts=attempts)
    [row] = store.store_submissions([submission])
    assert row == submission
    return submission


@pytest.fixture
def fake_clock() -> Clock:
    return Clock()


@pytest.fixture
def store(fake_clock: Clock) -> InMemorySubmissionStore:
    """The store with the Wordytaire contest "wt" (word list TINY) and its team "ravens"."""
    found = InMemorySubmissionStore(now=fake_clock)
    found.add_contest(make_contest())
    found.add_team(make_team("ravens"))
    return found


@pytest.fixture
def rejudges(store: InMemorySubmissionStore) -> InMemoryRejudgeStore:
    return InMemoryRejudgeStore(store)


@pytest.fixture
def contests(store: InMemorySubmissionStore) -> InMemoryContestStore:
    return InMemoryContestStore(store)


@pytest.fixture
def teams(store: InMemorySubmissionStore) -> InMemoryTeamStore:
    return InMemoryTeamStore(store)


@pytest.fixture
def caches() -> InMemoryCaches:
    return InMemoryCaches()


@pytest.fixture
def blobs() -> InMemoryBlobStore:
    return InMemoryBlobStore()


@pytest.fixture
def publisher() -> InMemoryPublisher:
    return InMemoryPublisher()


@pytest.fixture
def rulesets() -> InMemoryRulesets:
    return InMemoryRulesets({TINY.id: TINY}, {"wordytaire": {LAYOUT.id: LAYOUT}})


@pytest.fixture
def deps(
    store: InMemorySubmissionStore,
    rejudges: InMemoryRejudgeStore,
    blobs: InMemoryBlobStore,
    rulesets: InMemoryRulesets,
    publisher: InMemoryPublisher,
) -> WorkerDeps:
    return WorkerDeps(
        store=store,
        rejudges=rejudges,
        blobs=blobs,
        rulesets=rulesets,
        max_attempts=MAX_ATTEMPTS,
        claim_stale_after=60.0,
        publish_batch=publisher.publish_batch,
    )
