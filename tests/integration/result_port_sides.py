"""The sides of the result reads port's suite (`test_result_port.py`): the in-memory fake
(`core.fake_results.InMemoryResultReads`, over the submission store's database) and the SQL
adapter (`infra.sql.store.SqlStore`) on SQLite and PostgreSQL.

Each side is a seeded side with its stores (`store_port_sides.py`) and the result reads beside
them, and writes results the way the pipeline does: live through a worker's claim, under
another ruleset through a rejudge run."""

from __future__ import annotations

from core.fakes import InMemoryResultReads
from core.games.crosstiles import GameOutcome
from core.ports import ResultReads
from core.records import JudgedResult, Run, Submission
from infra.sql.store import SqlStore
from tests.integration.port_sides import HOUR, LAYOUT, LEX1, Clock, judged
from tests.integration.store_port_sides import FakeStores, SqlStores, Stores


class Results(Stores):
    """A side with its result reads."""

    results: ResultReads

    def judge_game(self, submission_id: str, outcome: GameOutcome, score: int = 0) -> None:
        """A game log judged under its contest's live ruleset to `outcome`, won with `score`."""
        [claim] = self.store.claim_many([submission_id], HOUR)
        result = JudgedResult(
            LEX1, LAYOUT, "crosstiles-1", score, f"reports/{submission_id}", outcome
        )
        assert self.store.record_results([(claim, result, b"")]) == {submission_id}

    def rejudged(self, contest_id: str, lexicon_id: str, scores: dict[str, int]) -> Run:
        """A full rejudge of the contest under `lexicon_id` (and LAYOUT) that judged each
        submission given to its score (ready to apply once every one of the contest is)."""
        run, _ = self.rejudges.start(contest_id, lexicon_id, LAYOUT, "full", "admin")
        subs = [self.submission(sid) for sid in scores]
        batch = [(sub.id, judged(sub, lexicon_id, scores[sub.id])) for sub in subs]
        assert self.rejudges.record_batch(run, batch) == len(batch)
        found = self.rejudges.get(run.id)
        assert found is not None
        return found

    def judged_upload(self, team: str, score: int, received_at: str) -> Submission:
        """An upload of the team's, judged live to `score`."""
        sub = self.upload(team, received_at=received_at)
        self.judge_live(sub, score)
        return sub


class FakeResults(Results, FakeStores):
    """The in-memory fake over the side's one database."""

    def __init__(self, now: Clock) -> None:
        super().__init__(now)
        self.results = InMemoryResultReads(self.database)


class SqlResults(Results, SqlStores):
    """The SQL adapter: one `SqlStore` is every port."""

    def __init__(self, sql: SqlStore, now: Clock) -> None:
        super().__init__(sql, now)
        self.results = sql
