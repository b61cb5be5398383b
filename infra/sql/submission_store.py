"""The submission store (the `core.ports.SubmissionStore` port) in SQL: the one port intake,
judging and the sweeper write and read through, made of the parts that hold its queries."""

from __future__ import annotations

from contextlib import AbstractContextManager

from core.records import Contest, Team
from infra.sql.contests import contest_by_id
from infra.sql.rulesets import LexiconsMixin
from infra.sql.standings import SubmissionStates
from infra.sql.submissions import SubmissionsMixin
from infra.sql.teams import team_by_id


class SqlSubmissions(SubmissionsMixin, SubmissionStates, LexiconsMixin):
    """`core.ports.SubmissionStore` in SQL: storing and queueing uploads
    (`infra.sql.submissions`), judging's claims and results (`infra.sql.claims`), what the
    sweeper must see to (`infra.sql.standings`), registering a word list
    (`infra.sql.rulesets`), and a contest or a team by id, read as `SqlContests` and `SqlTeams`
    read them."""

    def get_contest(self, contest_id: str) -> Contest | None:
        with self.read() as conn:
            return contest_by_id(conn, contest_id)

    def get_team(self, team_id: str) -> Team | None:
        with self.read() as conn:
            return team_by_id(conn, team_id)

    def writer_turn(self) -> AbstractContextManager[None]:
        """The database's writer turn (`infra.sql.base.Database.writer_turn`): one lock for
        every part built on it, so the writes made while intake holds it take it again."""
        return self.database.writer_turn()
