"""The results store split by port: each class of `infra.sql` named after a port has that port's
methods and no other (but the plumbing every part shares, and the few named here); `SqlStore`,
the union port's adapter, is made of them all. Built on their own over one `Database`, the parts
write each fact's transparency log entries in the transaction that writes the fact, as
`SqlStore` does, while a database without the log's hook writes none. The composition root
hands a consumer of one port that port's class, on the database of the API's store."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.disputes import DisputeStore
from core.ports import (
    ApiStore,
    ContestStore,
    ResultReads,
    RulesetStore,
    SessionStore,
    SubmissionStore,
    TeamStore,
    TransparencyLogs,
)
from core.records import Submission, Team
from devstack.testing.pipeline import open_pipeline, worker_deps
from infra.sql.base import Database
from infra.sql.contests import SqlContests
from infra.sql.database import open_database
from infra.sql.disputes import SqlDisputes
from infra.sql.engine import make_engine
from infra.sql.rejudges import SqlRejudgeRuns
from infra.sql.result_reads import SqlResultReads
from infra.sql.rulesets import SqlRulesets
from infra.sql.sessions import SqlSessions
from infra.sql.store import SqlStore
from infra.sql.submission_store import SqlSubmissions
from infra.sql.teams import SqlTeams
from infra.sql.transparency import SqlTransparencyLogs
from tests.integration.port_sides import LAYOUT, LEX1, OPENS, contest, new_upload

pytestmark = pytest.mark.integration

PARTS = [
    (SqlSubmissions, SubmissionStore),
    (SqlContests, ContestStore),
    (SqlTeams, TeamStore),
    (SqlRulesets, RulesetStore),
    (SqlResultReads, ResultReads),
    (SqlTransparencyLogs, TransparencyLogs),
    (SqlSessions, SessionStore),
    (SqlDisputes, DisputeStore),
]
PLUMBING = {"database", "engine", "read", "write"}  # every part's (`infra.sql.base.StoreBase`)
# What a part has beyond its port: the suites' one-upload write and counts by state; the
# leaderboard a game's standings read (`infra.sql.games`), and the uploads since a freeze.
BEYOND = {
    SqlSubmissions: {"store_submission", "count_by_state"},
    SqlResultReads: {"leaderboard", "received_since"},
}


def public(kind: type) -> set[str]:
    return {name for name in dir(kind) if not name.startswith("_")}


@pytest.mark.parametrize(("part", "port"), PARTS, ids=[part.__name__ for part, _ in PARTS])
def test_each_part_has_its_ports_methods_and_no_other(part: type, port: type) -> None:
    assert public(part) - PLUMBING == public(port) | BEYOND.get(part, set())


def test_the_union_store_is_made_of_every_part_and_has_all_the_api_asks() -> None:
    assert all(issubclass(SqlStore, part) for part, _ in PARTS)
    assert public(ApiStore) <= public(SqlStore)


def seed_and_upload(database: Database) -> tuple[Submission, Submission]:
    """A contest, a team and an upload, each written by the part whose port writes it, all on
    `database`: the upload, and what storing it answered."""
    submissions = SqlSubmissions(database)
    submissions.add_lexicon(
        id=LEX1, name=LEX1, words=3, size=12, blob_key=f"lexicons/{LEX1}.txt",
        source="test", created_by="admin",
    )  # fmt: skip
    SqlRulesets(database).add_rules(
        id=LAYOUT, name="default", content="{}", created_by="admin", game="wordytaire"
    )
    SqlContests(database).create_contest(contest("c1"))
    team = SqlTeams(database).create_team(Team("team-a", "c1", "a", "hash-a", OPENS))
    upload = new_upload(team)
    [stored] = submissions.store_submissions([upload])
    assert isinstance(stored, Submission)
    return upload, stored


def test_parts_built_alone_on_one_database_log_their_facts_as_they_write_them(
    migrated_url: str,
) -> None:
    engine = make_engine(migrated_url)
    try:
        database = open_database(engine)
        upload, stored = seed_and_upload(database)
        leaves = SqlTransparencyLogs(database).log_leaves(upload.id)
    finally:
        engine.dispose()

    assert stored.log_leaf is not None
    assert [leaf for leaf, _, _ in leaves] == [stored.log_leaf]


def test_a_database_without_the_logs_hook_writes_no_entries(migrated_url: str) -> None:
    engine = make_engine(migrated_url)
    try:
        database = Database(engine, log_facts=None)
        upload, stored = seed_and_upload(database)
        leaves = SqlTransparencyLogs(database).log_leaves(upload.id)
    finally:
        engine.dispose()

    assert stored.log_leaf is None
    assert leaves == []


def test_the_api_and_worker_parts_of_one_port_are_its_class_on_the_stores_database(
    tmp_path: Path,
) -> None:
    with open_pipeline(tmp_path) as pipe:
        parts, database = pipe.services, pipe.store.database
        worker = worker_deps(parts)
        handed = {
            "sweeper": parts.submissions,
            "sequencer": parts.logs,
            "reports": parts.reports.store,
            "worker": worker.store,
        }
        rejudges = [parts.rejudges, worker.rejudges]

    assert {name: type(part) for name, part in handed.items()} == {
        "sweeper": SqlSubmissions,
        "sequencer": SqlTransparencyLogs,
        "reports": SqlSubmissions,
        "worker": SqlSubmissions,
    }
    assert all(part.database is database for part in handed.values())
    assert all(isinstance(runs, SqlRejudgeRuns) and runs.store is database for runs in rejudges)
