"""The implementations `test_session_port.py` and `test_transparency_port.py` hold to one
behaviour suite each: the in-memory fakes (`core.fake_logs`), SQLite and PostgreSQL (`SqlStore`).

A transparency side is a seeded side (`port_sides.py`: the contests, teams and test clock, the
submission store and the rejudge runs) with the logs port beside it and the calls that log facts
no port of its own has (the organiser closing a contest, deleting a team, settling a disputed
game). A session side is the session port alone: it keeps nothing else.
"""

from __future__ import annotations

from typing import Protocol

import pytest

from core.disputes import DisputeStore
from core.fakes import (
    InMemoryContestStore,
    InMemorySessionStore,
    InMemorySubmissionStore,
    InMemoryTeamStore,
    InMemoryTransparencyLogs,
)
from core.ports import SessionStore, TransparencyLogs
from core.records import Contest, DeletedTeam
from infra.sql.store import SqlStore
from tests.integration.port_sides import Clock, FakeSide, SqlSide


def session_side(kind: str, now: Clock, request: pytest.FixtureRequest) -> SessionStore:
    """The session port named `kind`, on the test's clock."""
    if kind == "fake":
        return InMemorySessionStore(now)
    sql: SqlStore = request.getfixturevalue("store")
    return sql


class Organiser(Protocol):
    """The organiser's calls whose facts the logs record (no port has both)."""

    def close_contest(self, contest_id: str, by: str) -> tuple[Contest, bool] | None: ...
    def delete_team(self, team_id: str, by: str) -> DeletedTeam: ...


class FakeLogSide(FakeSide):
    """The logs fake over the side's database, which every fake writes."""

    def __init__(self, now: Clock) -> None:
        super().__init__(now)  # seeded: contests and teams, no fact the logs record
        self.logs: TransparencyLogs = InMemoryTransparencyLogs(self.database)
        self.organiser: Organiser = _FakeOrganiser(self.database)
        self.disputes: DisputeStore = self.database


class _FakeOrganiser:
    def __init__(self, database: InMemorySubmissionStore) -> None:
        self.contests, self.teams = InMemoryContestStore(database), InMemoryTeamStore(database)

    def close_contest(self, contest_id: str, by: str) -> tuple[Contest, bool] | None:
        return self.contests.close_contest(contest_id, by)

    def delete_team(self, team_id: str, by: str) -> DeletedTeam:
        return self.teams.delete_team(team_id, by)


class SqlLogSide(SqlSide):
    """The SQL store, which is its own logs and organiser."""

    def __init__(self, sql: SqlStore, now: Clock) -> None:
        super().__init__(sql, now)
        self.logs: TransparencyLogs = sql
        self.organiser: Organiser = sql
        self.disputes: DisputeStore = sql


LogSide = FakeLogSide | SqlLogSide
