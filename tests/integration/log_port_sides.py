"""The implementations `test_session_port.py` and `test_transparency_port.py` hold to one
behaviour suite each: the in-memory fakes (`core.fake_logs`), SQLite and PostgreSQL (`SqlStore`).

A transparency side is a rejudge side (`rejudge_port_sides.py`: the same seeded contests, teams
and test clock, the submission store and the rejudge runs) with the logs port beside it and the
calls beside it that log facts (the organiser closing a contest, deleting a team, settling a
disputed game). A session side is the
session port alone: it keeps nothing else.
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
from tests.integration.conftest import POSTGRES_URL
from tests.integration.rejudge_port_sides import Clock, FakeSide, SqlSide

# Each side by name, with the database URL it needs (`sql_url`, tests/integration/conftest.py):
# the fake's is never opened.
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
ON_EVERY_SIDE = pytest.mark.parametrize(("kind", "sql_url"), SIDES, indirect=["sql_url"])


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
    """The logs fake over the submission store fake's database, which every fake writes."""

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


def log_side(kind: str, now: Clock, request: pytest.FixtureRequest) -> LogSide:
    """The transparency side named `kind`, seeded, on the test's clock."""
    if kind == "fake":
        return FakeLogSide(now)
    return SqlLogSide(request.getfixturevalue("store"), now)
