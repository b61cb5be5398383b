"""What the port suites (`test_*_port.py`) share: the implementations each runs on (the in-memory
fakes, SQLite and PostgreSQL), the test's clock, and a `Side`, one implementation seeded alike.
A suite's own sides add its ports: `store_port_sides.py`, `submission_port_sides.py`,
`log_port_sides.py`.

Every side holds the submission store (`core.ports.SubmissionStore`) and the rejudge runs over
it (`core.ports.RejudgeRuns`), and what a test needs that no port has: seeding contests and
teams, reading the events written. It is seeded alike, through the port where it can be: the
word lists LEX1, LEX2 and LEX3 and the layout LAYOUT registered, each contest judged under LEX1
and LAYOUT; a Wordytaire contest `c1` with the teams "alpha" and "beta", a Crosstiles contest
`g1` whose teams "a" and "b" may upload game logs and whose team "c" may not, and a Wordytaire
contest `f1` whose public standings are frozen, with the team "gamma". Every side reads the
test's clock (`Clock`), which a test moves on: no test waits for time to pass.
"""

from __future__ import annotations

import json
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any, TypeVar

import pytest

from core import clock
from core.fakes import InMemoryRejudgeStore, InMemoryRulesetStore, InMemorySubmissionStore
from core.games.wordytaire import LineCounts
from core.ports import RejudgeRuns, SubmissionStore
from core.records import Contest, JudgedResult, Submission, Team
from core.states import SubmissionState
from core.word_hashes import signature
from infra.sql.rejudges import SqlRejudgeRuns
from infra.sql.store import SqlStore
from tests.integration.conftest import POSTGRES_URL

# Each side by name, with the database URL it needs (`sql_url`, tests/integration/conftest.py):
# the fake's is never opened. A suite's module marks itself with SUITE and makes its `side`
# fixture with `side_fixture`.
SIDES = [
    pytest.param("fake", "sqlite", id="fake"),
    pytest.param("sqlite", "sqlite", id="sqlite"),
    pytest.param(
        "postgres",
        "postgres",
        id="postgres",
        marks=[
            pytest.mark.postgres,
            pytest.mark.skipif(not POSTGRES_URL, reason="no PostgreSQL server to test against"),
        ],
    ),
]
SUITE = [
    pytest.mark.integration,
    pytest.mark.parametrize(("kind", "sql_url"), SIDES, indirect=["sql_url"]),
]

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
    "g1": (("a", True), ("b", True), ("c", False)),
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


def moving_clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """A new test clock, which every SQL write reads too (`core.clock.now`)."""
    now = Clock()
    monkeypatch.setattr(clock, "now", now)
    return now


def at(hour: int) -> str:
    """The seeded day's `hour` o'clock (0 to 9): before START."""
    return f"2030-01-01T0{hour}:00:00.000000Z"


def contest(contest_id: str) -> Contest:
    """A seeded contest, as created."""
    game, freeze_at = CONTESTS[contest_id]
    return Contest(
        id=contest_id, title=f"Contest {contest_id}", opens_at=OPENS, closes_at=CLOSES,
        lexicon_id=LEX1, rules_id=LAYOUT, created_at=OPENS, game=game, freeze_at=freeze_at,
    )  # fmt: skip


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
    return JudgedResult(lexicon_id, LAYOUT, "test", score, key, LineCounts(1, 0, 3))


class Side(ABC):
    """One implementation, seeded; `events()` lists what was written since the seeding, as the
    event log stores it (JSON: enums as their values), without ids and times."""

    def __init__(self, store: SubmissionStore, rejudges: RejudgeRuns, now: Clock) -> None:
        self.store, self.rejudges, self.clock = store, rejudges, now
        self.teams: dict[str, Team] = {}
        for lexicon_id in (LEX1, LEX2, LEX3):
            self.add_lexicon(lexicon_id, lexicon_id)
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

    def add_lexicon(self, lexicon_id: str, name: str) -> None:
        """A word list registered (or a name given to one), as `POST /v1/lexicons` does."""
        self.store.add_lexicon(
            id=lexicon_id, name=name, words=3, size=12, created_by="admin",
            blob_key=f"lexicons/{lexicon_id}.txt", source="test",
        )  # fmt: skip

    def events(self, *kinds: str) -> list[dict[str, Any]]:
        """The events written since the seeding whose type starts with one of `kinds` (every
        one without kinds), each as stored, without its id and time."""
        stored = json.loads(json.dumps(self.all_events()[self.seeded :], default=str))
        return [
            {k: v for k, v in event.items() if k not in ("id", "ts")}
            for event in stored
            if event["type"].startswith(kinds or ("",))
        ]

    def upload(
        self, team: str, size: int = 100, received_at: str = START, game_key: str | None = None
    ) -> Submission:
        """An upload of the team's, stored (its bytes are no business of these tests)."""
        sub = new_upload(self.teams[team], size, received_at, game_key)
        assert self.store.store_submissions([sub]) == [sub]
        return sub

    def judge_live(
        self,
        sub: Submission,
        score: int,
        words: tuple[str, ...] = ("cat",),
        held_on: str | None = None,
    ) -> None:
        """The submission judged under its contest's live ruleset, as a worker records it (on
        the worker host `held_on`, if given)."""
        live = self.contest(sub.contest_id)
        [claim] = self.store.claim_many([sub.id], HOUR)
        result = judged(sub, live.lexicon_id, score)
        recorded = self.store.record_results([(claim, result, signature(list(words)))], held_on)
        assert recorded == {sub.id}

    def submission(self, submission_id: str) -> Submission:
        found = self.store.get_submission(submission_id)
        assert found is not None
        return found

    def contest(self, contest_id: str) -> Contest:
        found = self.store.get_contest(contest_id)
        assert found is not None
        return found


class FakeSide(Side):
    """The in-memory fakes over one database, the submission store's, which every fake writes."""

    def __init__(self, now: Clock) -> None:
        self.database = InMemorySubmissionStore(now=now)
        InMemoryRulesetStore(self.database).add_rules(
            id=LAYOUT, name="default", content="{}", created_by="admin", game="wordytaire"
        )
        super().__init__(self.database, InMemoryRejudgeStore(self.database), now)

    def add_contest(self, contest: Contest) -> None:
        self.database.add_contest(contest)

    def add_team(self, team: Team) -> Team:
        return self.database.add_team(team)

    def all_events(self) -> list[dict[str, Any]]:
        return list(self.database.events)


class SqlSide(Side):
    """The SQL adapter over a migrated database (SQLite or PostgreSQL): one `SqlStore` is every
    port but the rejudge runs."""

    def __init__(self, sql: SqlStore, now: Clock) -> None:
        self.sql = sql
        sql.add_rules(
            id=LAYOUT, name="default", content="{}", created_by="admin", game="wordytaire"
        )
        super().__init__(sql, SqlRejudgeRuns(sql), now)

    def add_contest(self, contest: Contest) -> None:
        self.sql.create_contest(contest)

    def add_team(self, team: Team) -> Team:
        created = self.sql.create_team(replace(team, uploads_logs=False))
        if team.uploads_logs:
            assert self.sql.allow_logs(created.id, True, by="admin") == team
        return team

    def all_events(self) -> list[dict[str, Any]]:
        return self.sql.events_after(0, 1_000_000)


S = TypeVar("S", bound=Side)


def side_fixture(fake: Callable[[Clock], S], sql: Callable[[SqlStore, Clock], S]) -> object:
    """A suite's `side` fixture (`side = side_fixture(...)` in its module): the side its
    parameter `kind` names, made by `fake` or `sql`, seeded, on a new test clock."""

    @pytest.fixture(name="side")
    def side(
        kind: str, sql_url: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
    ) -> S:
        now = moving_clock(monkeypatch)
        if kind == "fake":
            return fake(now)
        return sql(request.getfixturevalue("store"), now)

    return side
