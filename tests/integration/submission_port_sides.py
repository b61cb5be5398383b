"""The implementations the submission port's suites (`test_submission_port.py`,
`test_submission_judging_port.py`) hold to one behaviour, each behind a `Side`: the submission
store (`core.ports.SubmissionStore`) and what a test needs around it that the port has not
(seeding contests and teams, reading the events written, a submission's live result and word
signature).

Every side is seeded alike through the port where it can be: the word lists LEX1 and LEX2
registered, a Wordytaire contest `c1` with the teams "alpha" and "beta", and a Crosstiles contest
`g1` whose teams "a" and "b" may upload game logs and whose team "c" may not; each contest judged
under LEX1 and LAYOUT. Every side reads the test's clock (`Clock`), which a test moves on.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from core import clock
from core.fakes import InMemorySubmissionStore
from core.ports import SubmissionStore
from core.records import Contest, Submission, Team
from infra.sql.engine import make_engine
from infra.sql.schema import word_hashes
from infra.sql.store import SqlStore
from tests.integration.conftest import POSTGRES_URL
from tests.integration.rejudge_port_sides import (
    CLOSES,
    LAYOUT,
    LEX1,
    LEX2,
    OPENS,
    START,
    Clock,
    judged,
    new_upload,
)

__all__ = ["CLOSES", "LAYOUT", "LEX1", "LEX2", "START", "Clock", "judged", "new_upload"]

CONTESTS = {"c1": "wordytaire", "g1": "crosstiles"}
# Each contest's teams: (name, whether it may upload game logs).
TEAMS = {"c1": (("alpha", False), ("beta", False)), "g1": (("a", True), ("b", True), ("c", False))}


def contest(contest_id: str) -> Contest:
    return Contest(
        id=contest_id, title=f"Contest {contest_id}", opens_at=OPENS, closes_at=CLOSES,
        lexicon_id=LEX1, layout_id=LAYOUT, created_at=OPENS, game=CONTESTS[contest_id],
    )  # fmt: skip


class Side(ABC):
    """One implementation, seeded; `events()` lists what was written since the seeding, as the
    event log stores it (JSON: enums as their values), without ids and times."""

    def __init__(self, store: SubmissionStore, now: Clock) -> None:
        self.store, self.clock = store, now
        self.teams: dict[str, Team] = {}
        for lexicon_id in (LEX1, LEX2):
            store.add_lexicon(
                id=lexicon_id, name=lexicon_id, words=3, size=12, created_by="admin",
                blob_key=f"lexicons/{lexicon_id}.txt", source="test",
            )  # fmt: skip
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
    @abstractmethod
    def live_result(self, submission_id: str) -> dict[str, Any] | None:
        """The submission's result under its contest's live ruleset, as stored."""

    @abstractmethod
    def words(self, submission_id: str) -> bytes | None:
        """The submission's word signature, as stored."""

    @abstractmethod
    def unanswering(self) -> AbstractContextManager[SubmissionStore]:
        """The store in an outage: the fake `down`; the SQL adapter over a database that cannot
        answer its queries (one never migrated)."""

    # -- the same on every side -------------------------------------------------------------

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
        """An upload of the team's, stored."""
        sub = new_upload(self.teams[team], size, received_at, game_key)
        assert self.store.store_submissions([sub]) == [sub]
        return sub

    def submission(self, submission_id: str) -> Submission:
        found = self.store.get_submission(submission_id)
        assert found is not None
        return found


class FakeSide(Side):
    """The in-memory fake."""

    def __init__(self, now: Clock) -> None:
        self.database = InMemorySubmissionStore(now=now)
        super().__init__(self.database, now)

    def add_contest(self, contest: Contest) -> None:
        self.database.add_contest(contest)

    def add_team(self, team: Team) -> Team:
        return self.database.add_team(team)

    def all_events(self) -> list[dict[str, Any]]:
        return list(self.database.events)

    def live_result(self, submission_id: str) -> dict[str, Any] | None:
        sub = self.submission(submission_id)
        live = self.database.contests[sub.contest_id]
        kept = self.database.results.get((submission_id, live.lexicon_id, live.layout_id))
        if kept is None:
            return None
        return {
            **{k: v for k, v in kept.result.__dict__.items() if k != "game"},
            "judged_at": kept.judged_at,
            "carried": int(kept.carried),
        }

    def words(self, submission_id: str) -> bytes | None:
        return self.database.words.get(submission_id)

    @contextmanager
    def unanswering(self) -> Iterator[SubmissionStore]:
        self.database.down = True
        try:
            yield self.database
        finally:
            self.database.down = False


class SqlSide(Side):
    """The SQL adapter over a migrated database (SQLite or PostgreSQL)."""

    def __init__(self, sql: SqlStore, now: Clock) -> None:
        self.sql = sql
        sql.add_layout(id=LAYOUT, name="default", content="{}", created_by="admin")
        super().__init__(sql, now)

    def add_contest(self, contest: Contest) -> None:
        self.sql.create_contest(contest)

    def add_team(self, team: Team) -> Team:
        created = self.sql.create_team(replace(team, uploads_logs=False))
        if team.uploads_logs:
            assert self.sql.allow_logs(created.id, True, by="admin") == team
        return team

    def all_events(self) -> list[dict[str, Any]]:
        return self.sql.events_after(0, 1_000_000)

    def live_result(self, submission_id: str) -> dict[str, Any] | None:
        stored = self.sql.current_result(submission_id)
        if stored is None:
            return None
        return {k: v for k, v in stored.__dict__.items() if k not in ("id", "submission_id")}

    def words(self, submission_id: str) -> bytes | None:
        with self.sql.read() as conn:
            query = select(word_hashes.c.hashes).where(word_hashes.c.submission_id == submission_id)
            found = conn.execute(query).scalar_one_or_none()
        return bytes(found) if found is not None else None

    @contextmanager
    def unanswering(self) -> Iterator[SubmissionStore]:
        url = self.sql.engine.url
        if url.drivername.startswith("sqlite"):
            assert url.database is not None
            empty = url.set(database=str(Path(url.database).with_name("never-migrated.sqlite3")))
        else:  # a schema no one created: PostgreSQL finds none of the tables
            empty = url.update_query_dict({"options": "-csearch_path=tj_never_created"})
        store = SqlStore(make_engine(empty.render_as_string(hide_password=False)))
        try:
            yield store
        finally:
            store.engine.dispose()


# Each side by name, with the database URL it needs (`sql_url`, tests/integration/conftest.py):
# the fake's is never opened. A suite's module parametrises over them and asks `open_side`.
SIDES = pytest.mark.parametrize(
    ("kind", "sql_url"),
    [
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
    ],
    indirect=["sql_url"],
)


def open_side(kind: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Side:
    """The side named `kind`, seeded, on a clock the test moves (every SQL write reads it)."""
    now = Clock()
    monkeypatch.setattr(clock, "now", now)
    if kind == "fake":
        return FakeSide(now)
    return SqlSide(request.getfixturevalue("store"), now)
