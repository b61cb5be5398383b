"""The implementations `test_rejudge_port.py` holds to one behaviour suite, each behind a `Side`:
the rejudge runs port (`core.ports.RejudgeRuns`), the submission store it reads, and what a test
needs around them that no port has (seeding contests and teams, reading the events written).

Every side is seeded alike, each contest judged under LEX1 and LAYOUT: a Wordytaire contest `c1`
with teams "alpha" and "beta", a Crosstiles contest `g1` whose teams "a" and "b" may upload game
logs, and a Wordytaire contest `f1` whose public standings are frozen, with the team "gamma".
Every side reads the test's clock (`Clock`), which a test moves on: no test waits for time to pass.
"""

from __future__ import annotations

import json
import uuid
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any, Protocol

from core import clock
from core.errors import CoreError
from core.fakes import InMemoryRejudgeStore, InMemorySubmissionStore
from core.ports import RejudgeRuns
from core.records import Claim, Contest, JudgedResult, Submission, Team
from core.states import SubmissionState
from core.word_hashes import signature
from infra.sql.rejudges import RejudgeStore
from infra.sql.store import SqlStore

LEX1, LEX2, LEX3, LAYOUT = "lex-1", "lex-2", "lex-3", "layout-1"
OPENS = "2030-01-01T00:00:00.000000Z"
START = "2030-01-01T12:00:00.000000Z"  # every side's clock at first
CLOSES = "2030-01-02T00:00:00.000000Z"
HOUR = 3600.0
FROZEN = "2030-01-01T06:00:00.000000Z"  # when `f1`'s public standings froze
CONTESTS = {"c1": ("wordytaire", None), "g1": ("crosstiles", None), "f1": ("wordytaire", FROZEN)}
# Each contest's teams: (name, whether it may upload game logs).
TEAMS = {
    "c1": (("alpha", False), ("beta", False)),
    "g1": (("a", True), ("b", True)),
    "f1": (("gamma", False),),
}


class Clock:
    """Every side's clock: starts at START and moves a microsecond at each reading (as a real
    one would between two transactions), and as far as a test says."""

    def __init__(self) -> None:
        self.moment = clock.parse_time(START)

    def __call__(self) -> str:
        self.moment += timedelta(microseconds=1)
        return clock.format_time(self.moment)

    def advance(self, seconds: float) -> None:
        self.moment += timedelta(seconds=seconds)


def contest(contest_id: str) -> Contest:
    game, freeze_at = CONTESTS[contest_id]
    return Contest(
        id=contest_id, title=f"Contest {contest_id}", opens_at=OPENS, closes_at=CLOSES,
        lexicon_id=LEX1, layout_id=LAYOUT, created_at=OPENS, game=game, freeze_at=freeze_at,
    )  # fmt: skip


# What the suite asks of the submission store: intake's and a worker's calls. (Not the whole
# `SubmissionStore`: the fake's `add_lexicon` answers a dict where the port says `WordList`.)
class Submissions(Protocol):
    def get_contest(self, contest_id: str) -> Contest | None: ...
    def get_submission(self, submission_id: str) -> Submission | None: ...
    def store_submissions(
        self, batch: Sequence[Submission], queued: Sequence[Submission] = ()
    ) -> list[Submission | CoreError | None]: ...
    def claim_many(self, submission_ids: Sequence[str], stale_after: float) -> list[Claim]: ...
    def record_results(self, judged: Sequence[tuple[Claim, JudgedResult, bytes]]) -> set[str]: ...


class Side(ABC):
    """One implementation and its seeded contests; `events()` lists what was written since the
    seeding, as the event log stores it (JSON: enums as their values), without ids and times."""

    def __init__(self, store: Submissions, rejudges: RejudgeRuns, now: Clock) -> None:
        self.store, self.rejudges, self.clock = store, rejudges, now
        self.teams: dict[str, Team] = {}
        for contest_id in CONTESTS:
            self.add_contest(contest(contest_id))
            for name, logs in TEAMS[contest_id]:
                team = Team(f"team-{name}", contest_id, name, f"hash-{name}", OPENS, logs)
                self.teams[name] = self.add_team(team)
        self.seeded = len(self.all_events())

    # -- what differs between the implementations -------------------------------------------

    @abstractmethod
    def add_contest(self, contest: Contest) -> None: ...
    @abstractmethod
    def add_team(self, team: Team) -> Team: ...
    @abstractmethod
    def all_events(self) -> list[dict[str, Any]]: ...

    # -- the same on every side -------------------------------------------------------------

    def events(self, *kinds: str) -> list[dict[str, Any]]:
        """The events written since the seeding whose type starts with one of `kinds`, each as
        stored, without its id and time."""
        stored = json.loads(json.dumps(self.all_events()[self.seeded :], default=str))
        return [
            {k: v for k, v in event.items() if k not in ("id", "ts")}
            for event in stored
            if event["type"].startswith(kinds)
        ]

    def upload(self, team: str, size: int = 100, received_at: str = START) -> Submission:
        """An upload of the team's, stored (its bytes are no business of these tests)."""
        sub = new_upload(self.teams[team], size, received_at)
        assert self.store.store_submissions([sub]) == [sub]
        return sub

    def judge_live(self, sub: Submission, score: int, words: tuple[str, ...] = ("cat",)) -> None:
        """The submission judged under its contest's live ruleset, as a worker records it."""
        live = self.store.get_contest(sub.contest_id)
        assert live is not None
        [claim] = self.store.claim_many([sub.id], HOUR)
        result = judged(sub, live.lexicon_id, score)
        assert self.store.record_results([(claim, result, signature(list(words)))]) == {sub.id}

    def submission(self, submission_id: str) -> Submission:
        found = self.store.get_submission(submission_id)
        assert found is not None
        return found

    def contest(self, contest_id: str) -> Contest:
        found = self.store.get_contest(contest_id)
        assert found is not None
        return found


def new_upload(
    team: Team, size: int = 100, received_at: str = START, game_key: str | None = None
) -> Submission:
    """An upload's row as intake makes it, `stored`: of a game log with `game_key`."""
    sid = uuid.uuid4().hex
    return Submission(
        id=sid, contest_id=team.contest_id, team_id=team.id, sha256=uuid.uuid4().hex * 2,
        size=size, blob_key=f"uploads/{sid}", received_at=received_at, receipt="r" * 64,
        state=SubmissionState.STORED, state_at=received_at, attempts=0, judged_at=None,
        failure=None, game_key=game_key,
    )  # fmt: skip


def judged(sub: Submission, lexicon_id: str, score: int) -> JudgedResult:
    """A Wordytaire result of the submission's under `lexicon_id` (and LAYOUT)."""
    key = f"reports/{sub.id}/{lexicon_id}.json"
    return JudgedResult(lexicon_id, LAYOUT, "test", score, 1, 0, 3, key)


class FakeSide(Side):
    """The in-memory fakes: the rejudge store over the submission store's database."""

    def __init__(self, now: Clock) -> None:
        self.database = InMemorySubmissionStore(now=now)
        super().__init__(self.database, InMemoryRejudgeStore(self.database), now)

    def add_contest(self, contest: Contest) -> None:
        self.database.add_contest(contest)

    def add_team(self, team: Team) -> Team:
        return self.database.add_team(team)

    def all_events(self) -> list[dict[str, Any]]:
        return list(self.database.events)


class SqlSide(Side):
    """The SQL adapter over a migrated database (SQLite or PostgreSQL)."""

    def __init__(self, sql: SqlStore, now: Clock) -> None:
        self.sql = sql
        for lexicon_id in (LEX1, LEX2, LEX3):
            sql.add_lexicon(
                id=lexicon_id, name=lexicon_id, words=3, size=12, created_by="admin",
                blob_key=f"lexicons/{lexicon_id}.txt", source="test",
            )  # fmt: skip
        sql.add_layout(id=LAYOUT, name="default", content="{}", created_by="admin")
        super().__init__(sql, RejudgeStore(sql), now)

    def add_contest(self, contest: Contest) -> None:
        self.sql.create_contest(contest)

    def add_team(self, team: Team) -> Team:
        created = self.sql.create_team(replace(team, uploads_logs=False))
        if team.uploads_logs:
            assert self.sql.allow_logs(created.id, True, by="admin") == team
        return team

    def all_events(self) -> list[dict[str, Any]]:
        return self.sql.events_after(0, 1_000_000)
