"""The sides of the contest, team, ruleset and dispute port suites (`test_contest_port.py`,
`test_team_port.py`, `test_ruleset_port.py`, `test_dispute_port.py`): the in-memory fakes
(`core.fake_contests`, `core.fake_ruleset_store`, `core.fake_disputes`, over the submission
store's database) and the SQL adapter (`infra.sql.store.SqlStore`) on SQLite and PostgreSQL.

Each side is a seeded side (`port_sides.py`) with the four ports beside it."""

from __future__ import annotations

from dataclasses import replace

from core.disputes import DisputeStore
from core.fakes import InMemoryContestStore, InMemoryRulesetStore, InMemoryTeamStore
from core.games.crosstiles import GameError, GameOutcome, GamePlayer
from core.ports import ContestStore, RulesetStore, TeamStore
from core.records import JudgedResult, Submission
from infra.sql.store import SqlStore
from tests.integration.port_sides import (
    HOUR,
    LAYOUT,
    LEX1,
    START,
    Clock,
    FakeSide,
    Side,
    SqlSide,
    new_upload,
)

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
    game_logs: dict[str, str]  # each game log's submission, by its identity (`game_key`)

    def game_log(
        self, team: str, key: str, match: str = MATCH, received_at: str = START
    ) -> tuple[str, Submission]:
        """A game log of `match` (its own identity `key`) sent by the team: the id of the
        submission it is (the team's own, or another's it is a copy of), and the upload."""
        log = replace(new_upload(self.teams[team], 100, received_at, key), match_key=match)
        [stored] = self.store.store_submissions([log])
        if stored is None:  # a copy: the game is the submission first sent with that key
            return self.game_logs[key], log
        assert stored == log
        self.game_logs[key] = log.id
        return log.id, log

    def judge_log(self, submission_id: str, outcome: GameOutcome) -> None:
        """The log judged under its contest's live ruleset to `outcome`."""
        [claim] = self.store.claim_many([submission_id], HOUR)
        result = JudgedResult(LEX1, LAYOUT, "x", 0, f"reports/{submission_id}", outcome)
        assert self.store.record_results([(claim, result, b"")]) == {submission_id}


class FakeStores(Stores, FakeSide):
    """The in-memory fakes over the side's one database."""

    def __init__(self, now: Clock) -> None:
        super().__init__(now)
        self.game_logs = {}
        self.contest_store = InMemoryContestStore(self.database)
        self.team_store = InMemoryTeamStore(self.database)
        self.ruleset_store = InMemoryRulesetStore(self.database)
        self.dispute_store = self.database


class SqlStores(Stores, SqlSide):
    """The SQL adapter: one `SqlStore` is every port."""

    def __init__(self, sql: SqlStore, now: Clock) -> None:
        super().__init__(sql, now)
        self.game_logs = {}
        self.contest_store = self.team_store = self.ruleset_store = self.dispute_store = sql
