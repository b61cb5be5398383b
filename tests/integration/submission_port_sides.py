"""The sides of the submission port's suites (`test_submission_port.py`,
`test_submission_judging_port.py`): the in-memory fake (`core.fake_store`) and the SQL adapter
(`infra.sql.store.SqlStore`) on SQLite and PostgreSQL, each a seeded side (`port_sides.py`) with
what a test reads that the port has not (a submission's live result and word signature) and the
store in an outage.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import select

from core.ports import SubmissionStore
from infra.sql.engine import make_engine
from infra.sql.schema import word_hashes
from infra.sql.store import SqlStore
from tests.integration.port_sides import FakeSide, Side, SqlSide


class Submissions(Side):
    """A side with the reads the port has not, and the store in an outage."""

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


class FakeSubmissions(Submissions, FakeSide):
    """The in-memory fake."""

    def live_result(self, submission_id: str) -> dict[str, Any] | None:
        sub = self.submission(submission_id)
        live = self.database.contests[sub.contest_id]
        kept = self.database.results.get((submission_id, live.lexicon_id, live.rules_id))
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


class SqlSubmissions(Submissions, SqlSide):
    """The SQL adapter over a migrated database (SQLite or PostgreSQL)."""

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
