"""The sides of the contest, team, ruleset and dispute port suites (`test_contest_port.py`,
`test_team_port.py`, `test_ruleset_port.py`, `test_dispute_port.py`): the in-memory fakes
(`core.fake_contests`, `core.fake_ruleset_store`, `core.fake_disputes`, over the submission
store's database) and the SQL adapter (`infra.sql.store.SqlStore`) on SQLite and PostgreSQL.

Each side is the rejudge suite's (`rejudge_port_sides.py`: the same seeded contests, teams,
word lists and layout, the same clock) with the four ports beside it."""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import replace

import pytest

from core import clock
from core.disputes import DisputeStore
from core.fakes import (
    InMemoryContestStore,
    InMemoryRejudgeStore,
    InMemoryRulesetStore,
    InMemorySubmissionStore,
    InMemoryTeamStore,
)
from core.games.crosstiles import GameError, GameOutcome, GamePlayer
from core.ports import ContestStore, RulesetStore, TeamStore
from core.records import JudgedResult, Submission
from infra.sql.store import SqlStore
from tests.integration.conftest import POSTGRES_URL
from tests.integration.rejudge_port_sides import (
    HOUR,
    LAYOUT,
    LEX1,
    LEX2,
    LEX3,
    START,
    Clock,
    FakeSide,
    Side,
    SqlSide,
    new_upload,
)

# Each side by name, with the database URL it needs (`sql_url`, tests/integration/conftest.py):
# the fake's is never opened. A suite parametrises (kind, sql_url) over these.
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

MATCH = "m" * 64  # one Crosstiles game: its seed and players
ANN_WINS = GameOutcome(
    (GamePlayer(1, "ann", 300, False, 12, 40), GamePlayer(2, "bob", 260, False, 0, -40)), None
)
BOB_WINS = GameOutcome(
    (GamePlayer(1, "ann", 250, False, 0, -30), GamePlayer(2, "bob", 280, False, 12, 30)), None
)
UNFINISHED = GameOutcome((), GameError(9, "unfinished", "the game has not ended"))


class Stores(Side):
    """A side with its contest, team, ruleset and dispute stores."""

    contest_store: ContestStore
    team_store: TeamStore
    ruleset_store: RulesetStore
    dispute_store: DisputeStore
    logs: dict[str, str]  # each game log's submission, by its identity (`game_key`)

    @abstractmethod
    def add_lexicon(self, lexicon_id: str, name: str) -> None:
        """A word list registered (or a name given to one), as `POST /v1/lexicons` does."""

    def game_log(
        self, team: str, key: str, match: str = MATCH, received_at: str = START
    ) -> tuple[str, Submission]:
        """A game log of `match` (its own identity `key`) sent by the team: the id of the
        submission it is (the team's own, or another's it is a copy of), and the upload."""
        log = replace(new_upload(self.teams[team], 100, received_at, key), match_key=match)
        [stored] = self.store.store_submissions([log])
        if stored is None:  # a copy: the game is the submission first sent with that key
            return self.logs[key], log
        assert stored == log
        self.logs[key] = log.id
        return log.id, log

    def judge_log(self, submission_id: str, outcome: GameOutcome) -> None:
        """The log judged under its contest's live ruleset to `outcome`."""
        [claim] = self.store.claim_many([submission_id], HOUR)
        result = JudgedResult(
            LEX1, LAYOUT, "x", 0, 1, int(not outcome.valid), 0, f"reports/{submission_id}", outcome
        )
        assert self.store.record_results([(claim, result, b"")]) == {submission_id}


class FakeStores(Stores, FakeSide):
    """The in-memory fakes over one database, its word lists and layout registered as SQL's."""

    def __init__(self, now: Clock) -> None:
        self.database = InMemorySubmissionStore(now=now)
        self.logs = {}
        self.contest_store = InMemoryContestStore(self.database)
        self.team_store = InMemoryTeamStore(self.database)
        self.ruleset_store = rulesets = InMemoryRulesetStore(self.database)
        self.dispute_store = self.database
        for lexicon_id in (LEX1, LEX2, LEX3):
            self.add_lexicon(lexicon_id, lexicon_id)
        rulesets.add_layout(
            id=LAYOUT, name="default", content="{}", created_by="admin", game="wordytaire"
        )
        Side.__init__(self, self.database, InMemoryRejudgeStore(self.database), now)

    def add_lexicon(self, lexicon_id: str, name: str) -> None:
        self.database.add_lexicon(
            id=lexicon_id, name=name, words=3, size=12, created_by="admin",
            blob_key=f"lexicons/{lexicon_id}.txt", source="test",
        )  # fmt: skip


class SqlStores(Stores, SqlSide):
    """The SQL adapter: one `SqlStore` is every port."""

    def __init__(self, sql: SqlStore, now: Clock) -> None:
        self.contest_store = self.team_store = self.ruleset_store = self.dispute_store = sql
        self.logs = {}
        SqlSide.__init__(self, sql, now)

    def add_lexicon(self, lexicon_id: str, name: str) -> None:
        self.sql.add_lexicon(
            id=lexicon_id, name=name, words=3, size=12, created_by="admin",
            blob_key=f"lexicons/{lexicon_id}.txt", source="test",
        )  # fmt: skip


def make_side(kind: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Stores:
    """The side named `kind`, seeded, on a clock the test moves (every SQL write reads it)."""
    now = Clock()
    monkeypatch.setattr(clock, "now", now)
    if kind == "fake":
        return FakeStores(now)
    return SqlStores(request.getfixturevalue("store"), now)
