"""SqlStore on real SQLite and PostgreSQL: migrations, uniqueness, exclusive claims, the event
log's commit order under concurrent writers, the leaderboard, the sweeper's moves, deletion."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection, Engine, func, inspect, select, text
from sqlalchemy import event as sql_event
from sqlalchemy.exc import IntegrityError

from core import clock, tuning
from core.errors import (
    Closed,
    Duplicate,
    FailureReason,
    NotAllowed,
    RejudgeRefused,
    failure_text,
)
from core.events import EventType
from core.fakes import InMemoryBlobStore
from core.games.crosstiles import GameError, GameOutcome, GamePlayer
from core.games.wordytaire import LineCounts
from core.judging import Outcome, WorkerDeps, judge_group
from core.records import Claim, Contest, DeletedTeam, JudgedResult, Run, Submission, Team
from core.states import SubmissionState
from core.word_hashes import hashes_in, signature
from infra.rulesets import RulesetCache
from infra.sql import base as sql_base
from infra.sql import rejudges as sql_rejudges
from infra.sql import results as sql_results
from infra.sql import submissions as sql_submissions
from infra.sql import transparency as sql_transparency
from infra.sql.engine import make_engine
from infra.sql.games import crosstiles as crosstiles_sql
from infra.sql.games import load_all
from infra.sql.migrate import alembic_config, upgrade
from infra.sql.rejudges import SqlRejudgeRuns
from infra.sql.results import count_progress
from infra.sql.schema import (
    events,
    log_heads,
    rejudge_failures,
    rejudge_summaries,
    results,
    word_hashes,
)
from infra.sql.store import SqlStore
from judge.crosstiles.ratings import Seat, contest_ratings, shown
from tests.integration.conftest import POSTGRES_ONLY

pytestmark = pytest.mark.integration
metadata = load_all()  # the shared tables and every game's own

T = TypeVar("T")
LEXICON, LAYOUT = "lex-1", "layout-1"
HOUR = 3600.0


def at(seconds_from_now: float) -> str:
    return clock.format_time(datetime.now(UTC) + timedelta(seconds=seconds_from_now))


def add_contest(store: SqlStore, contest_id: str = "c1") -> Contest:
    store.add_lexicon(
        id=LEXICON, name="tiny", words=3, size=12, blob_key=f"lexicons/{LEXICON}.txt",
        source="test", created_by="admin",
    )  # fmt: skip
    store.add_rules(id=LAYOUT, name="default", content="{}", created_by="admin")
    return store.create_contest(
        Contest(
            id=contest_id, title=f"Contest {contest_id}", opens_at=at(-HOUR), closes_at=at(HOUR),
            lexicon_id=LEXICON, rules_id=LAYOUT, created_at=clock.now(), game="wordytaire",)
    )  # fmt: skip


def add_team(store: SqlStore, name: str, contest_id: str = "c1") -> Team:
    return store.create_team(
        Team(
            id=f"team-{uuid.uuid4().hex[:12]}", contest_id=contest_id, name=name,
            token_hash=uuid.uuid4().hex, created_at=clock.now(),
        )
    )  # fmt: skip


def new_submission(
    team: Team,
    *,
    sha256: str | None = None,
    received_at: str | None = None,
    state_at: str | None = None,
) -> Submission:
    submission_id = uuid.uuid4().hex
    now = clock.now()
    return Submission(
        id=submission_id, contest_id=team.contest_id, team_id=team.id,
        sha256=sha256 or uuid.uuid4().hex + uuid.uuid4().hex, size=10,
        blob_key=f"uploads/{team.contest_id}/{team.id}/{submission_id}",
        received_at=received_at or now, receipt="r" * 64, state=SubmissionState.STORED,
        state_at=state_at or now, attempts=0, judged_at=None, failure=None,
    )  # fmt: skip


def store_submission(store: SqlStore, team: Team, **fields: str) -> Submission:
    return store.store_submission(new_submission(team, **fields))


def record(store: SqlStore, claim: Claim, score: int) -> bool:
    result = JudgedResult(
        lexicon_id=LEXICON, rules_id=LAYOUT, judge_version="test", score=score,
        report_key=f"reports/{claim.submission.id}/{LEXICON}.json", game=LineCounts(1, 0, 3),
    )  # fmt: skip
    return store.record_results([(claim, result, signature(["cat"]))]) == {claim.submission.id}


def claim_one(store: SqlStore, submission_id: str, stale_after: float) -> Claim | None:
    claims = store.claim_many([submission_id], stale_after=stale_after)
    return claims[0] if claims else None


def judged(store: SqlStore, team: Team, score: int, received_at: str) -> Submission:
    submission = store_submission(store, team, received_at=received_at)
    claim = claim_one(store, submission.id, stale_after=HOUR)
    assert claim is not None
    assert record(store, claim, score)
    return submission


def all_events(store: SqlStore) -> list[dict[str, Any]]:
    return store.events_after(0, 1_000_000)


def count_results(store: SqlStore) -> int:
    with store.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(results)).scalar_one())


def at_once(calls: list[Callable[[], T]]) -> list[T]:
    """Run the calls in parallel threads released together by a barrier."""
    barrier = threading.Barrier(len(calls))

    def run(call: Callable[[], T]) -> T:
        barrier.wait()
        return call()

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(run, calls))


@pytest.fixture
def team(store: SqlStore) -> Team:
    add_contest(store)
    return add_team(store, "alpha")


@pytest.fixture
def second_store(migrated_url: str) -> Iterator[SqlStore]:
    """Another process's view of the same database: its own engine and connection pool."""
    other = SqlStore(make_engine(migrated_url))
    yield other
    other.engine.dispose()


# -- migrations ---------------------------------------------------------------------------------


def test_migrations_build_the_declared_schema_from_empty_and_running_them_again_changes_nothing(
    sql_url: str,
) -> None:
    engine = make_engine(sql_url)
    try:
        assert inspect(engine).get_table_names() == []

        upgrade(engine)
        with engine.connect() as conn:
            assert compare_metadata(MigrationContext.configure(conn), metadata) == []
        store = SqlStore(engine)
        add_contest(store)
        before = all_events(store)

        upgrade(engine)

        assert set(inspect(engine).get_table_names()) == {*metadata.tables, "alembic_version"}
        assert store.get_contest("c1") is not None
        assert all_events(store) == before
    finally:
        engine.dispose()


def upgrade_to(engine: Engine, revision: str) -> None:
    """The schema as it stood at `revision` (an older release's database)."""
    config = alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def rows_at_0003(connection: Connection) -> str:
    """A word list, layout, contest, team and submission written as the schema stood from 0003
    to 0006 (plain SQL: a migration test must not lean on the store's current code); the
    submission's id."""
    now = clock.now()
    statements = (
        "INSERT INTO lexicons (id, name, words, size, blob_key, source, created_by, created_at)"
        " VALUES ('lex-1', 'tiny', 3, 12, 'lexicons/lex-1.txt', 'test', 'admin', :now)",
        "INSERT INTO layouts (id, name, content, created_by, created_at)"
        " VALUES ('layout-1', 'default', '{}', 'admin', :now)",
        "INSERT INTO contests (id, title, opens_at, closes_at, lexicon_id, layout_id, created_at)"
        " VALUES ('c1', 'Contest c1', :now, :now, 'lex-1', 'layout-1', :now)",
        "INSERT INTO teams (id, contest_id, name, token_hash, created_at)"
        " VALUES ('team-1', 'c1', 'alpha', 'hash-1', :now)",
        "INSERT INTO submissions (id, contest_id, team_id, sha256, size, blob_key, received_at,"
        " receipt, state, state_at, attempts) VALUES ('sub-1', 'c1', 'team-1', 'sha-1', 10,"
        " 'uploads/c1/team-1/sub-1', :now, 'r', 'stored', :now, 0)",
    )
    for statement in statements:
        connection.execute(text(statement), {"now": now})
    return "sub-1"


def test_the_words_recorded_as_text_before_0004_become_their_signature(sql_url: str) -> None:
    engine = make_engine(sql_url)
    try:
        upgrade_to(engine, "0003")
        with engine.begin() as connection:
            sub_id = rows_at_0003(connection)
            connection.execute(
                text("INSERT INTO submission_words (submission_id, words) VALUES (:s, :w)"),
                {"s": sub_id, "w": "cat tab zebra"},
            )

        upgrade(engine)

        with engine.connect() as connection:
            rows = connection.execute(select(word_hashes)).all()
        assert [(row.submission_id, hashes_in(row.hashes)) for row in rows] == [
            (sub_id, hashes_in(signature(["zebra", "cat", "tab"])))
        ]
        assert "submission_words" not in inspect(engine).get_table_names()
    finally:
        engine.dispose()


def test_rows_from_before_0007_are_wordytaire_contests_teams_without_the_log_right_and_own_uploads(
    sql_url: str,
) -> None:
    engine = make_engine(sql_url)
    try:
        upgrade_to(engine, "0006")
        with engine.begin() as connection:
            sub_id = rows_at_0003(connection)
            connection.execute(
                text(
                    "INSERT INTO results (submission_id, lexicon_id, layout_id, judge_version,"
                    " score, legal, illegal, tiles, report_key, judged_at) VALUES"
                    " (:s, 'lex-1', 'layout-1', '1', 9, 1, 0, 3, 'reports/x', :now)"
                ),
                {"s": sub_id, "now": clock.now()},
            )

        upgrade(engine)

        store = SqlStore(engine)
        contest, team = store.get_contest("c1"), store.get_team("team-1")
        assert contest is not None and contest.game == "wordytaire"
        assert team is not None and team.uploads_logs is False
        submission = store.get_submission(sub_id)
        assert submission is not None and submission.game_key is None
        assert [row.game for row in store.all_rules()] == ["wordytaire"]
        assert store.current_result(sub_id) is not None  # the result still points at its row
        # Two game logs of the same bytes in one contest cannot both be stored, whoever sent them.
        insert = text(
            "INSERT INTO submissions (id, contest_id, team_id, sha256, size, blob_key,"
            " received_at, receipt, state, state_at, attempts, game_key) VALUES (:id, 'c1',"
            " :team, 'same', 1, 'k', :now, 'r', 'stored', :now, 0, 'same')"
        )
        with engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO teams (id, contest_id, name, token_hash, created_at)"
                    " VALUES ('team-2', 'c1', 'beta', 'hash-2', :now)"
                ),
                {"now": clock.now()},
            )
            connection.execute(insert, {"id": "sub-2", "team": "team-1", "now": clock.now()})
        with pytest.raises(IntegrityError), engine.begin() as connection:
            connection.execute(insert, {"id": "sub-3", "team": "team-2", "now": clock.now()})
    finally:
        engine.dispose()


def test_a_run_applied_before_0010_has_no_summary_recorded_and_one_applied_after_has_its_own(
    sql_url: str,
) -> None:
    engine = make_engine(sql_url)
    try:
        upgrade_to(engine, "0009")
        with engine.begin() as connection:
            sub_id = rows_at_0003(connection)
            now = clock.now()
            for statement in (
                "INSERT INTO lexicons (id, name, words, size, blob_key, source, created_by,"
                " created_at) VALUES ('lex-2', 'fixed', 4, 16, 'lexicons/lex-2.txt', 'test',"
                " 'admin', :now)",
                "INSERT INTO results (submission_id, lexicon_id, layout_id, judge_version, score,"
                " legal, illegal, tiles, report_key, judged_at) VALUES"
                " (:s, 'lex-1', 'layout-1', '1', 9, 1, 0, 3, 'reports/1', :now),"
                " (:s, 'lex-2', 'layout-1', '1', 4, 1, 0, 3, 'reports/2', :now)",
                "INSERT INTO rejudge_runs (id, contest_id, lexicon_id, layout_id, from_lexicon_id,"
                " from_layout_id, mode, state, total, done, carried, cursor, created_by,"
                " created_at, updated_at, finished_at) VALUES ('run-1', 'c1', 'lex-2',"
                " 'layout-1', 'lex-1', 'layout-1', 'full', 'applied', 1, 1, 0, :s, 'admin',"
                " :now, :now, :now)",
                "UPDATE contests SET lexicon_id = 'lex-2'",
            ):
                connection.execute(text(statement), {"s": sub_id, "now": now})

        upgrade(engine)

        store = SqlStore(engine)
        rejudges = SqlRejudgeRuns(store)
        legacy = rejudges.get("run-1")
        assert legacy is not None and legacy.state == "applied"
        assert rejudges.summary(legacy) is None  # not recorded, and not made up from today's data
        assert rejudges.changes(legacy) != []  # though a live preview would list a change
        back, _ = rejudges.start("c1", LEXICON, "layout-1", "full", by="admin")
        assert back.state == "ready"  # the result under lex-1 counts
        applied = rejudges.apply(back.id, by="admin")
        summary = SqlRejudgeRuns(store).summary(applied)
        assert summary is not None and summary.frozen_at == applied.updated_at
        assert summary.changed == (
            {"submission": sub_id, "team": "alpha", "old_score": 4, "new_score": 9},
        )
    finally:
        engine.dispose()


def test_a_contest_made_before_0012_never_freezes_and_0012_goes_down_again(sql_url: str) -> None:
    engine = make_engine(sql_url)
    try:
        upgrade_to(engine, "0011")
        with engine.begin() as connection:
            rows_at_0003(connection)

        upgrade(engine)  # through 0012, to the schema the store reads

        store = SqlStore(engine)
        contest = store.get_contest("c1")
        assert contest is not None
        assert (contest.freeze_at, contest.thawed_at, contest.frozen_lexicon_id) == (None,) * 3
        assert store.thaw_contest("c1", by="admin") == (contest, False)
        config = alembic_config()
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "0011")
        assert "freeze_at" not in {c["name"] for c in inspect(engine).get_columns("contests")}
        with engine.connect() as connection:
            assert connection.execute(text("SELECT title FROM contests")).scalar() == "Contest c1"
    finally:
        engine.dispose()


# -- uniqueness ---------------------------------------------------------------------------------


def test_a_second_contest_with_the_same_id_is_a_duplicate_and_writes_no_event(
    store: SqlStore,
) -> None:
    contest = add_contest(store)
    before = all_events(store)

    with pytest.raises(Duplicate):
        store.create_contest(contest)

    assert all_events(store) == before


def test_a_team_name_or_token_used_twice_in_a_contest_is_a_duplicate(store: SqlStore) -> None:
    add_contest(store)
    alpha = add_team(store, "alpha")
    before = all_events(store)

    with pytest.raises(Duplicate):
        add_team(store, "alpha")
    with pytest.raises(Duplicate):
        store.create_team(replace(alpha, id="other", name="beta"))  # the same token

    assert all_events(store) == before
    assert store.team_names("c1") == {alpha.id: "alpha"}


def test_the_same_bytes_from_the_same_team_are_a_duplicate_but_another_team_may_send_them(
    store: SqlStore, team: Team
) -> None:
    first = store_submission(store, team)
    before = all_events(store)

    with pytest.raises(Duplicate):
        store_submission(store, team, sha256=first.sha256)
    with pytest.raises(Duplicate):
        store.store_submission(first)  # the same id

    assert all_events(store) == before
    other = store_submission(store, add_team(store, "beta"), sha256=first.sha256)
    assert store.find_same("c1", team.id, first.sha256) == first
    assert store.get_submission(other.id) == other


# -- claims -------------------------------------------------------------------------------------


def test_two_workers_claiming_the_same_submission_at_once_never_both_get_it(
    store: SqlStore, second_store: SqlStore, team: Team
) -> None:
    ids = [store_submission(store, team).id for _ in range(30)]

    for submission_id in ids:
        claims = at_once(
            [
                partial(claim_one, store, submission_id, stale_after=HOUR),
                partial(claim_one, second_store, submission_id, stale_after=HOUR),
            ]
        )
        won = [claim for claim in claims if claim is not None]
        attempts = [claim.attempt for claim in won]
        assert len(won) == 1, f"{submission_id} claimed {len(won)} times, attempts {attempts}"

    judging = [e for e in all_events(store) if e["type"] == EventType.SUBMISSION_JUDGING]
    assert sorted(e["submission"] for e in judging) == sorted(ids)


@POSTGRES_ONLY  # SQLite lets one writer at a time: intake cannot commit inside the claim
def test_a_claim_takes_a_submission_marked_queued_between_its_read_and_its_update(
    store: SqlStore, second_store: SqlStore, team: Team
) -> None:
    submission = store_submission(store, team)
    marked: list[bool] = []

    def mark_queued_after_the_read(conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if (
            not marked
            and statement.lstrip().upper().startswith("SELECT")
            and "FROM submissions" in statement
        ):
            # Intake commits stored -> queued from another connection, as it does once the
            # upload is published, while the worker's claim transaction is open.
            worker = threading.Thread(
                target=lambda: marked.append(second_store.mark_queued(submission.id))
            )
            worker.start()
            worker.join(10)

    sql_event.listen(store.engine, "after_cursor_execute", mark_queued_after_the_read)
    try:
        claims = store.claim_many([submission.id], stale_after=HOUR)
    finally:
        sql_event.remove(store.engine, "after_cursor_execute", mark_queued_after_the_read)

    assert marked == [True]
    assert [claim.submission.id for claim in claims] == [submission.id]
    assert store.get_submission(submission.id).state == SubmissionState.JUDGING  # type: ignore[union-attr]


@pytest.mark.parametrize("returning", [True, False], ids=["returning", "no-returning"])
def test_a_group_is_claimed_and_recorded_as_each_upload_alone_would_be(
    store: SqlStore, team: Team, returning: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One statement a group where the database returns what an UPDATE changed; a statement
    an upload where it does not (SQLite before 3.35): the same claims, results and events."""
    monkeypatch.setattr(store.engine.dialect, "update_returning", returning)
    if store.engine.dialect.name == "sqlite":  # PostgreSQL's events are inserted returning ids
        monkeypatch.setattr(store.engine.dialect, "insert_returning", returning)
    free, earlier, done, held = (store_submission(store, team) for _ in range(4))
    first = judged(store, team, score=1, received_at=at(-30))
    lost = claim_one(store, held.id, stale_after=HOUR)
    assert lost is not None
    stale = JudgedResult(
        lexicon_id=LEXICON, rules_id=LAYOUT, judge_version="old", score=-1,
        report_key="reports/old", game=LineCounts(0, 1, 0),
    )  # fmt: skip
    with store.engine.begin() as conn:  # a result already under the ruleset is replaced
        sql_results.put_result(conn, earlier.id, stale, clock.now())
    events_before = len(all_events(store))

    asked = [held.id, free.id, first.id, "no-such-submission", earlier.id, free.id]
    claims = store.claim_many(asked, stale_after=0)  # `held` is taken over as abandoned

    assert [(c.submission.id, c.attempt) for c in claims] == [
        (held.id, 2), (free.id, 1), (earlier.id, 1),
    ]  # fmt: skip
    judging = [e for e in all_events(store)[events_before:]]
    assert [(e["type"], e["submission"]) for e in judging] == [
        (EventType.SUBMISSION_JUDGING, sid) for sid in (held.id, free.id, earlier.id)
    ]

    def result(score: int) -> JudgedResult:
        return JudgedResult(
            lexicon_id=LEXICON, rules_id=LAYOUT, judge_version="test", score=score,
            report_key=f"reports/{score}", game=LineCounts(2, 0, 5),
        )  # fmt: skip

    group = [(claim, result(10 + n), signature(["cat", "tea"])) for n, claim in enumerate(claims)]
    assert store.record_results([(lost, result(99), signature(["cat"])), *group]) == {
        held.id, free.id, earlier.id,
    }  # fmt: skip
    for n, claim in enumerate(claims):
        now = store.get_submission(claim.submission.id)
        assert now is not None and now.state == SubmissionState.JUDGED
        current = store.current_result(claim.submission.id)
        assert current is not None and current.score == 10 + n
    assert count_results(store) == 4  # one a submission: `first`'s and the group's three
    judged_events = [e for e in all_events(store) if e["type"] == EventType.SUBMISSION_JUDGED]
    assert [e["submission"] for e in judged_events[-3:]] == [held.id, free.id, earlier.id]
    assert done.id not in {e["submission"] for e in judged_events}
    assert claim_one(store, done.id, stale_after=HOUR) is not None  # never asked: still free


@pytest.mark.parametrize("returning", [True, False], ids=["returning", "no-returning"])
def test_signatures_are_kept_new_in_one_statement_and_widened_where_they_add_words(
    store: SqlStore, team: Team, returning: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store.engine.dialect, "insert_returning", returning)
    kept, same, fresh = (store_submission(store, team) for _ in range(3))
    with store.engine.begin() as conn:
        sql_results.keep_words(conn, {kept.id: signature(["cat"]), same.id: signature(["dog"])})
    asked = {
        kept.id: signature(["tea"]),  # a word more: the union is kept
        same.id: signature(["dog"]),  # none more: left as it is
        fresh.id: signature(["ant", "bee"]),
    }
    statements: list[str] = []
    sql_event.listen(store.engine, "before_cursor_execute", lambda *a: statements.append(a[2]))

    with store.engine.begin() as conn:
        sql_results.keep_words(conn, dict(asked))

    with store.engine.connect() as conn:
        found = dict(conn.execute(select(word_hashes.c.submission_id, word_hashes.c.hashes)).all())
    assert {sid: hashes_in(hashes) for sid, hashes in found.items()} == {
        kept.id: hashes_in(signature(["cat", "tea"])),
        same.id: hashes_in(signature(["dog"])),
        fresh.id: hashes_in(signature(["ant", "bee"])),
    }
    assert found[same.id] == signature(["dog"])  # not written again
    writes = [s for s in statements if s.lstrip().upper().startswith(("INSERT", "UPDATE"))]
    assert len(writes) == 2  # the new one inserted, the widened one updated


@pytest.mark.parametrize("returning", [True, False], ids=["returning", "no-returning"])
def test_a_contests_log_hands_out_its_leaves_in_turn_and_is_marked_closed_once_closing(
    store: SqlStore, returning: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store.engine.dialect, "update_returning", returning)
    with store.engine.begin() as conn:
        firsts = [
            sql_transparency._advance(conn, "c1", 3, closing=False),
            sql_transparency._advance(conn, "c2", 1, closing=False),
            sql_transparency._advance(conn, "c1", 2, closing=True),
            sql_transparency._advance(conn, "c1", 1, closing=False),
        ]
        heads = conn.execute(
            select(log_heads.c.contest_id, log_heads.c.next_leaf, log_heads.c.closed).order_by(
                log_heads.c.contest_id
            )
        ).all()

    assert firsts == [0, 0, 3, 5]
    assert [tuple(h) for h in heads] == [("c1", 6, True), ("c2", 1, False)]


def test_a_judged_submission_cannot_be_claimed_again(store: SqlStore, team: Team) -> None:
    submission = judged(store, team, score=7, received_at=at(-60))

    assert claim_one(store, submission.id, stale_after=0) is None
    assert claim_one(store, "no-such-submission", stale_after=0) is None


def test_a_result_recorded_after_the_claim_was_lost_writes_nothing(
    store: SqlStore, team: Team
) -> None:
    submission = store_submission(store, team)
    first = claim_one(store, submission.id, stale_after=HOUR)
    assert first is not None
    second = claim_one(
        store, submission.id, stale_after=0
    )  # the first attempt is taken as abandoned
    assert second is not None and second.attempt == first.attempt + 1
    before = all_events(store)

    assert record(store, first, score=99) is False
    store.release(first, "too slow", give_up=True)

    assert all_events(store) == before
    assert count_results(store) == 0
    assert store.current_result(submission.id) is None
    now = store.get_submission(submission.id)
    assert now is not None
    assert (now.state, now.attempts, now.failure) == (SubmissionState.JUDGING, 2, None)

    assert record(store, second, score=5) is True
    result = store.current_result(submission.id)
    assert result is not None and result.score == 5


# -- query plans ----------------------------------------------------------------------------------

# The tables that grow with every upload: a statement on an upload's path that scanned one of them
# would cost more with each upload the contest has taken.
GROWING = ("submissions", "results", "submission_copies", "events", "log_entries")
PRIMARY_KEY = "USING INDEX sqlite_autoindex_submissions_1 (id=?)"  # SQLite's own, for a TEXT key


@pytest.mark.parametrize("sql_url", ["sqlite"], indirect=True)
def test_intakes_groups_and_the_workers_claims_search_indexes_and_never_scan_a_growing_table(
    store: SqlStore, team: Team
) -> None:
    """SQLite plans a row-value IN list of several rows as a scan of the whole table; every
    statement of a group's store, its marks, a claim and its results must search an index."""
    other = add_team(store, "beta")
    for n in range(40):  # rows enough for a scan to be a choice the planner could make
        judged(store, team if n % 2 else other, n, at(-60 + n))
    # A backlog: uploads stored and not yet published, queued, being judged.
    waiting = [store_submission(store, other) for _ in range(60)]
    store.mark_queued_many([s.id for s in waiting[20:]])
    assert len(store.claim_many([s.id for s in waiting[40:]], stale_after=HOUR)) == 20
    statements: list[tuple[str, Any]] = []

    def keep(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if statement.lstrip().upper().startswith(("SELECT", "UPDATE", "DELETE")):
            statements.append((statement, parameters))

    sql_event.listen(store.engine, "before_cursor_execute", keep)
    try:
        again = store.get_submission(judged(store, team, 1, at(-1)).id)
        assert again is not None
        # Groups of several ids, as a burst makes them: past two or three, SQLite's planner
        # would rather walk the index on the state than look the ids up.
        group = [new_submission(team if n % 2 else other) for n in range(12)]
        rows = store.store_submissions([*group, replace(again, id=uuid.uuid4().hex)])
        assert [isinstance(row, Submission) for row in rows] == [True] * 12 + [False]
        store.mark_queued_many([s.id for s in group[:6]])
        store.store_submissions([new_submission(other)], queued=group[6:])
        claims = store.claim_many([s.id for s in group], stale_after=HOUR)
        assert len(claims) == len(group)
        assert all(record(store, claim, 7) for claim in claims)
    finally:
        sql_event.remove(store.engine, "before_cursor_execute", keep)

    assert len(statements) >= 8
    with store.engine.connect() as conn:
        raw = conn.connection.dbapi_connection
        assert raw is not None
        for statement, parameters in statements:
            plan = raw.execute(f"EXPLAIN QUERY PLAN {statement}", parameters).fetchall()
            scans = [
                row[-1] for row in plan if row[-1].split()[:2] in (["SCAN", t] for t in GROWING)
            ]
            assert not scans, f"{statement}\n{scans}"
            if "submissions.id IN" in statement:  # a few ids: the primary key, not the state
                searched = " ".join(row[-1] for row in plan if "submissions" in row[-1])
                assert PRIMARY_KEY in searched, f"{statement}\n{plan}"


# -- the event log ------------------------------------------------------------------------------


def test_event_ids_follow_commit_order_so_a_reader_paging_during_concurrent_writes_misses_none(
    store: SqlStore, second_store: SqlStore, team: Team
) -> None:
    writers, per_writer = 4, 50
    done = threading.Event()
    tailed: list[dict[str, Any]] = []

    def tail() -> None:
        # A live reader: polls with small pages, always after the last id it has seen.
        after = 0
        while True:
            finished = done.is_set()
            page = second_store.events_after(after, 7)
            tailed.extend(page)
            if page:
                after = page[-1]["id"]
            elif finished:
                return
            else:
                time.sleep(0.001)  # leave the writers the GIL (and, on SQLite, the file)

    def write(n: int) -> None:
        # Each writer is a process of its own with its own engine, on alternate stores.
        writer_store = store if n % 2 else second_store
        for _ in range(per_writer):
            submission = store_submission(writer_store, team)
            writer_store.mark_queued(submission.id)
            claim = claim_one(writer_store, submission.id, stale_after=HOUR)
            assert claim is not None
            assert record(writer_store, claim, score=n)

    reader = threading.Thread(target=tail)
    reader.start()
    try:
        at_once([partial(write, n) for n in range(writers)])
    finally:
        done.set()
        reader.join()

    everything = all_events(store)
    paged: list[dict[str, Any]] = []
    after = 0
    while page := store.events_after(after, 3):
        paged.extend(page)
        after = page[-1]["id"]

    ids = [event["id"] for event in tailed]
    assert ids == sorted(set(ids)), "the live reader saw ids out of order or twice"
    assert tailed == everything, "the live reader missed an event committed behind its cursor"
    assert paged == everything
    by_submission: dict[str, list[str]] = defaultdict(list)
    for event in everything:
        if "submission" in event:
            by_submission[event["submission"]].append(event["type"])
    assert len(by_submission) == writers * per_writer
    expected = ["submission.stored", "submission.queued", "submission.judging", "submission.judged"]
    assert all(types == expected for types in by_submission.values())


def test_events_carry_their_fields_and_a_judged_one_its_score(store: SqlStore, team: Team) -> None:
    submission = judged(store, team, score=42, received_at=at(-5))

    last = all_events(store)[-1]

    assert last["type"] == "submission.judged"
    assert (last["submission"], last["team"], last["contest"]) == (submission.id, team.id, "c1")
    assert last["score"] == 42
    assert last["received_at"] == submission.received_at
    with store.engine.connect() as conn:
        row = conn.execute(select(events).where(events.c.id == last["id"])).mappings().one()
    assert (row["submission_id"], row["team_id"], row["contest_id"]) == (
        submission.id,
        team.id,
        "c1",
    )


def test_a_transactions_events_get_ids_in_order_and_the_log_lines_carry_the_stored_ids(
    store: SqlStore, team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    logged: list[dict[str, Any]] = []

    class Recorder:
        def info(self, event: str, **fields: Any) -> None:
            logged.append({"event": event, **fields})

    monkeypatch.setattr(sql_base, "log", Recorder())
    batch = [new_submission(team) for _ in range(7)]
    store.store_submissions(batch)
    store.mark_queued_many([s.id for s in reversed(batch[:4])])  # the sweeper's way
    later = [new_submission(team) for _ in range(5)]
    store.store_submissions(later, queued=batch[4:])  # intake's: stored and marked in one

    kinds = ("submission.stored", "submission.queued")
    written = [e for e in all_events(store) if e["type"] in kinds]  # in id order
    assert [(e["type"], e["submission"]) for e in written] == (
        [("submission.stored", s.id) for s in batch]
        + [("submission.queued", s.id) for s in reversed(batch[:4])]
        + [("submission.stored", s.id) for s in later]
        + [("submission.queued", s.id) for s in batch[4:]]
    )
    assert len({e["id"] for e in written}) == len(written)
    in_table = {(e["type"], e["submission"]): e["id"] for e in written}
    in_log = {
        (line["event"], line["submission"]): line["id"] for line in logged if line["event"] in kinds
    }
    assert in_log == in_table


@pytest.mark.parametrize("returning", [True, False], ids=["one-update", "row-by-row"])
def test_marking_a_burst_queued_skips_what_moved_on_and_writes_one_event_each(
    store: SqlStore, team: Team, monkeypatch: pytest.MonkeyPatch, returning: bool
) -> None:
    # Without UPDATE ... RETURNING (SQLite before 3.35) the store marks them one by one.
    monkeypatch.setattr(store.engine.dialect, "update_returning", returning)
    batch = [store_submission(store, team) for _ in range(4)]
    assert store.mark_queued(batch[1].id)  # already queued: not marked twice

    marked = store.mark_queued_many([s.id for s in batch] + ["no-such-submission"])

    assert marked == [batch[0].id, batch[2].id, batch[3].id]
    queued = [e["submission"] for e in all_events(store) if e["type"] == "submission.queued"]
    assert queued == [batch[1].id, batch[0].id, batch[2].id, batch[3].id]
    assert {store.get_submission(s.id).state for s in batch} == {SubmissionState.QUEUED}  # type: ignore[union-attr]


def test_a_token_finds_its_team_and_contest_in_one_query(store: SqlStore, team: Team) -> None:
    add_contest(store, "c2")
    other = add_team(store, "beta", "c2")

    assert store.team_with_contest(team.token_hash) == (team, store.get_contest("c1"))
    assert store.team_with_contest(other.token_hash) == (other, store.get_contest("c2"))
    assert store.team_with_contest("0" * 64) is None


# -- the leaderboard ----------------------------------------------------------------------------


def test_the_leaderboard_shows_each_teams_best_and_breaks_ties_by_the_earlier_receipt(
    store: SqlStore, team: Team
) -> None:
    late, early, low = team, add_team(store, "beta"), add_team(store, "gamma")
    judged(store, late, score=10, received_at=at(-100))
    late_best = judged(store, late, score=30, received_at=at(-10))
    early_first = judged(store, early, score=30, received_at=at(-50))
    judged(store, early, score=30, received_at=at(-20))  # the same score again: no better
    judged(store, early, score=5, received_at=at(-5))
    low_only = judged(store, low, score=1, received_at=at(-200))
    stale = judged(store, low, score=1000, received_at=at(-1))
    # A result under another word list (say, before a rejudge) does not count.
    with store.engine.begin() as conn:
        conn.execute(
            results.update()
            .where(results.c.submission_id == stale.id)
            .values(lexicon_id="old-lexicon")
        )

    board = store.leaderboard("c1")

    assert [(e["rank"], e["team"], e["score"], e["submission"]) for e in board] == [
        (1, "beta", 30, early_first.id),
        (2, "alpha", 30, late_best.id),
        (3, "gamma", 1, low_only.id),
    ]
    assert board[0]["received_at"] == early_first.received_at


def test_a_contest_with_nothing_judged_has_an_empty_leaderboard(
    store: SqlStore, team: Team
) -> None:
    store_submission(store, team)

    assert store.leaderboard("c1") == []


# -- the sweeper's moves ------------------------------------------------------------------------


def test_only_submissions_stuck_longer_than_their_state_allows_need_attention(
    store: SqlStore, team: Team
) -> None:
    stuck_stored = store_submission(store, team, state_at=at(-120))
    store_submission(store, team)  # stored just now
    stuck_queued = store_submission(store, team, state_at=at(-120))
    assert store.mark_queued(stuck_queued.id)
    fresh_judging = store_submission(store, team)
    assert claim_one(store, fresh_judging.id, stale_after=HOUR) is not None
    judged(store, team, score=3, received_at=at(-300))

    stuck = store.needing_attention(stored_for=60, queued_for=HOUR, judging_for=HOUR)
    assert [s.id for s in stuck] == [stuck_stored.id]

    stuck = store.needing_attention(stored_for=60, queued_for=0, judging_for=0)
    assert {s.id for s in stuck} == {stuck_stored.id, stuck_queued.id, fresh_judging.id}


def test_a_requeue_moves_a_stuck_submission_once_and_a_stale_view_does_nothing(
    store: SqlStore, team: Team
) -> None:
    submission = store_submission(store, team, state_at=at(-120))
    [seen] = store.needing_attention(stored_for=60, queued_for=HOUR, judging_for=HOUR)

    assert store.requeue(seen) is True
    after_first = all_events(store)
    assert store.requeue(seen) is False  # a second sweeper with the same view

    assert all_events(store) == after_first
    assert after_first[-1]["type"] == "submission.queued"
    assert after_first[-1]["was"] == "stored"
    now = store.get_submission(submission.id)
    assert now is not None and now.state == SubmissionState.QUEUED


def test_a_requeue_after_a_worker_claimed_the_submission_leaves_the_claim_alone(
    store: SqlStore, team: Team
) -> None:
    submission = store_submission(store, team)
    assert store.mark_queued(submission.id)
    [seen] = store.needing_attention(stored_for=HOUR, queued_for=0, judging_for=HOUR)
    claim = claim_one(store, submission.id, stale_after=HOUR)
    assert claim is not None

    assert store.requeue(seen) is False

    now = store.get_submission(submission.id)
    assert now is not None and now.state == SubmissionState.JUDGING
    assert record(store, claim, score=4) is True


def test_requeueing_a_submission_stuck_in_judging_says_so_in_its_event(
    store: SqlStore, team: Team
) -> None:
    submission = store_submission(store, team)
    assert claim_one(store, submission.id, stale_after=HOUR) is not None
    [seen] = store.needing_attention(stored_for=HOUR, queued_for=HOUR, judging_for=0)

    assert store.requeue(seen) is True

    last = all_events(store)[-1]
    assert (last["type"], last["was"], last["submission"]) == (
        "submission.requeued",
        "judging",
        submission.id,
    )


def test_a_submission_out_of_attempts_is_failed_by_the_next_claim_and_not_judged_again(
    store: SqlStore, team: Team, tmp_path: Path
) -> None:
    """Every attempt dies without releasing its claim (a killed worker): the sweeper hands the
    submission on each time, and the claim past the cap ends it instead of judging it."""
    blobs = InMemoryBlobStore()
    deps = WorkerDeps(
        store=store, rejudges=SqlRejudgeRuns(store), blobs=blobs,
        rulesets=RulesetCache(store, blobs, tmp_path / "rulesets"), max_attempts=2,
        claim_stale_after=HOUR, publish_batch=lambda run, ids: None,
    )  # fmt: skip
    submission = store_submission(store, team)
    for _ in range(deps.max_attempts):
        assert claim_one(store, submission.id, stale_after=HOUR) is not None
        [seen] = store.needing_attention(stored_for=HOUR, queued_for=HOUR, judging_for=0)
        assert store.requeue(seen)

    assert judge_group(deps, [submission.id]) == {submission.id: Outcome.FAILED}

    failed = store.get_submission(submission.id)
    assert failed is not None and failed.state == SubmissionState.FAILED
    assert failed.failure == failure_text(FailureReason.OUT_OF_ATTEMPTS)
    assert count_results(store) == 0
    assert all_events(store)[-1]["type"] == EventType.SUBMISSION_FAILED
    assert store.needing_attention(stored_for=0, queued_for=0, judging_for=0) == []
    assert judge_group(deps, [submission.id]) == {submission.id: Outcome.SKIPPED}


# -- deleting a team ----------------------------------------------------------------------------


def test_deleting_a_team_removes_its_rows_and_returns_every_blob_key_it_owned(
    store: SqlStore, team: Team
) -> None:
    kept_team = add_team(store, "beta")
    pending = store_submission(store, team)
    done = judged(store, team, score=8, received_at=at(-30))
    kept = judged(store, kept_team, score=2, received_at=at(-30))

    deleted = store.delete_team(team.id, by="admin")

    result_keys = [f"reports/{done.id}/{LEXICON}.json"]
    assert sorted(deleted.keys) == sorted([pending.blob_key, done.blob_key, *result_keys])
    assert sorted(deleted.submissions) == sorted([pending.id, done.id])  # their kept bytes
    assert store.get_team(team.id) is None
    assert store.get_submission(pending.id) is None and store.get_submission(done.id) is None
    assert store.current_result(done.id) is None
    assert count_results(store) == 1
    assert store.get_submission(kept.id) is not None
    assert [e["team"] for e in store.leaderboard("c1")] == ["beta"]
    last = all_events(store)[-1]
    assert (last["type"], last["team"], last["submissions_deleted"], last["by"]) == (
        "team.deleted",
        team.id,
        2,
        "admin",
    )
    assert store.delete_team(team.id, by="admin") == DeletedTeam([], [])


# -- rejudge carry ------------------------------------------------------------------------------


def add_fixed_lexicon(store: SqlStore) -> None:
    store.add_lexicon(
        id="lex-2", name="fixed", words=4, size=16, blob_key="lexicons/lex-2.txt",
        source="test", created_by="admin",
    )  # fmt: skip


def results_under(store: SqlStore, lexicon_id: str) -> list[tuple[str, int, int]]:
    """(submission, score, carried) of every result under a lexicon."""
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(results.c.submission_id, results.c.score, results.c.carried).where(
                results.c.lexicon_id == lexicon_id
            )
        ).all()
    return [(row[0], row[1], row[2]) for row in rows]


def test_an_affected_only_carry_copies_results_once_and_counts_them_in_the_progress(
    store: SqlStore, team: Team
) -> None:
    from infra.sql.rejudges import SqlRejudgeRuns

    add_fixed_lexicon(store)
    subs = [judged(store, team, score=10 * n, received_at=at(-n - 1)) for n in range(1, 5)]
    rejudges = SqlRejudgeRuns(store)
    run, created = rejudges.start("c1", "lex-2", LAYOUT, "affected", by="admin")
    assert created and (run.total, run.done) == (4, 0)

    ids = [s.id for s in subs[:3]]
    assert rejudges.carry(run, ids) == 3
    assert rejudges.carry(run, ids) == 0  # a page carried again (a restarted producer) counts once

    shown = rejudges.get(run.id)
    assert shown is not None and (shown.state, shown.done, shown.carried) == ("running", 3, 3)
    assert sorted(results_under(store, "lex-2")) == sorted(
        (s.id, 10 * n, 1) for n, s in enumerate(subs[:3], start=1)
    )
    assert rejudges.carry(run, [subs[3].id]) == 1
    shown = rejudges.get(run.id)
    assert shown is not None and (shown.state, shown.done, shown.carried) == ("ready", 4, 4)


def test_a_rejudge_batch_records_only_what_is_new_and_counts_a_redelivered_batch_once(
    store: SqlStore, team: Team
) -> None:
    from infra.sql.rejudges import SqlRejudgeRuns

    add_fixed_lexicon(store)
    subs = [judged(store, team, score=n, received_at=at(-n - 1)) for n in range(1, 6)]
    rejudges = SqlRejudgeRuns(store)
    run, _ = rejudges.start("c1", "lex-2", LAYOUT, "full", by="admin")

    def rejudged(sub: Submission, score: int) -> tuple[str, JudgedResult]:
        key = f"reports/{sub.id}/lex-2.json"
        return sub.id, JudgedResult("lex-2", LAYOUT, "v1", score, key, LineCounts(1, 0, 2))

    first = [rejudged(s, 100 + n) for n, s in enumerate(subs[:3])]
    assert rejudges.record_batch(run, first) == 3
    # Redelivered with one more: only the new one counts, and the first scores stay.
    again = [rejudged(s, 999) for s in subs[:3]] + [rejudged(subs[3], 103)]
    assert rejudges.record_batch(run, again) == 1
    shown = rejudges.get(run.id)
    assert shown is not None and (shown.state, shown.done) == ("running", 4)
    assert rejudges.record_batch(run, [rejudged(subs[4], 104)]) == 1
    shown = rejudges.get(run.id)
    assert shown is not None and (shown.state, shown.done, shown.carried) == ("ready", 5, 0)
    assert sorted(results_under(store, "lex-2")) == sorted(
        (s.id, 100 + n, 0) for n, s in enumerate(subs)
    )


# -- rejudge summaries --------------------------------------------------------------------------


def judged_under(store: SqlStore, team: Team, lexicon_id: str, score: int) -> Submission:
    """A new submission of the team's, judged live under `lexicon_id` (the contest's list)."""
    submission = store_submission(store, team)
    claim = claim_one(store, submission.id, stale_after=HOUR)
    assert claim is not None
    result = JudgedResult(
        lexicon_id=lexicon_id, rules_id=LAYOUT, judge_version="test", score=score,
        report_key=f"reports/{submission.id}/{lexicon_id}.json", game=LineCounts(1, 0, 3),
    )  # fmt: skip
    assert store.record_results([(claim, result, signature(["cat"]))]) == {submission.id}
    return submission


def rejudged_as(sub: Submission, lexicon_id: str, score: int) -> tuple[str, JudgedResult]:
    key = f"reports/{sub.id}/{lexicon_id}.json"
    return sub.id, JudgedResult(lexicon_id, LAYOUT, "v1", score, key, LineCounts(1, 0, 2))


def test_an_applied_runs_summary_stays_as_apply_recorded_it_whatever_is_judged_later(
    store: SqlStore, team: Team
) -> None:
    beta = add_team(store, "beta")
    alpha_sub = judged(store, team, score=10, received_at=at(-60))
    beta_sub = judged(store, beta, score=20, received_at=at(-50))
    add_fixed_lexicon(store)
    rejudges = SqlRejudgeRuns(store)
    run, _ = rejudges.start("c1", "lex-2", LAYOUT, "full", by="admin")
    rejudges.record_batch(
        run, [rejudged_as(alpha_sub, "lex-2", 30), rejudged_as(beta_sub, "lex-2", 20)]
    )
    ready = rejudges.get(run.id)
    assert ready is not None and ready.state == "ready"
    previewed = rejudges.summary(ready)
    assert previewed is not None and previewed.frozen_at is None
    assert previewed.changed == (
        {"submission": alpha_sub.id, "team": "alpha", "old_score": 10, "new_score": 30},
    )
    assert previewed.rank_changes == (
        {"team": "alpha", "old_rank": 2, "new_rank": 1},
        {"team": "beta", "old_rank": 1, "new_rank": 2},
    )

    applied = rejudges.apply(run.id, by="admin")

    def assert_as_recorded() -> None:
        for reader in (rejudges, SqlRejudgeRuns(store)):  # this process, and one never asked
            summary = reader.summary(applied)
            assert summary is not None and summary.frozen_at == applied.updated_at
            assert (summary.changed, summary.rank_changes) == (
                previewed.changed,
                previewed.rank_changes,
            )
            assert summary.counts == {"scores": 1, "ranks": 2}

    # A new team's upload, judged under the live list only: a preview computed now has it
    # come from nowhere.
    gamma = add_team(store, "load-3a1fcc-0")
    late = judged_under(store, gamma, "lex-2", score=50)
    moved = {"team": "load-3a1fcc-0", "old_rank": None, "new_rank": 1}
    assert moved in rejudges.rank_changes(applied)
    assert_as_recorded()
    # A later run back to the first list judges it under that one too: a preview computed
    # now counts its score as changed by the first run.
    back, _ = rejudges.start("c1", LEXICON, LAYOUT, "full", by="admin")
    assert rejudges.record_batch(back, [rejudged_as(late, LEXICON, 45)]) == 1
    rejudges.apply(back.id, by="admin")
    assert late.id in {row["submission"] for row in rejudges.changes(applied)}
    assert_as_recorded()
    with store.engine.connect() as conn:
        counted = conn.execute(
            select(rejudge_summaries.c.scores, rejudge_summaries.c.ranks).where(
                rejudge_summaries.c.run_id == run.id
            )
        ).one()
    assert tuple(counted) == (1, 2)


def test_an_applied_crosstiles_runs_summary_stays_as_recorded_when_a_new_game_is_judged(
    store: SqlStore,
) -> None:
    first, second, _ = add_game_contest(store)
    add_fixed_lexicon(store)
    ann_wins = GameOutcome(
        (GamePlayer(1, "ann", 300, False, 12, 40), GamePlayer(2, "bob", 260, False, 0, -40)), None
    )
    broken = GameOutcome((), GameError(7, "not_in_dictionary", "'colour' is not in the list"))
    subs = [store.store_submission(game_log(first, str(n) * 64)) for n in range(2)]
    for sub, game in zip(subs, (ann_wins, broken), strict=True):
        (claim,) = store.claim_many([sub.id], stale_after=HOUR)
        result = JudgedResult(LEXICON, LAYOUT, "x", 0, f"k-{sub.id}", game)
        assert store.record_results([(claim, result, signature(["colour"]))]) == {sub.id}
    rejudges = SqlRejudgeRuns(store)
    run, _ = rejudges.start("g1", "lex-2", LAYOUT, "affected", by="admin")
    assert rejudges.carry(run, [subs[0].id]) == 1
    cy_wins = GameOutcome(
        (GamePlayer(1, "cy", 90, False, 12, 10), GamePlayer(2, "dee", 80, True, 0, -10)), None
    )
    fixed = JudgedResult("lex-2", LAYOUT, "x", 90, "k2", cy_wins)
    assert rejudges.record_batch(run, [(subs[1].id, fixed)]) == 1
    ready = rejudges.get(run.id)
    assert ready is not None and ready.state == "ready"
    previewed = rejudges.summary(ready)
    assert previewed is not None
    assert [(row["submission"], row["new_winners"]) for row in previewed.changed] == [
        (subs[1].id, ["cy"])
    ]
    assert [row["player"] for row in previewed.rank_changes] == ["cy", "dee", "bob"]

    applied = rejudges.apply(run.id, by="admin")
    late = store.store_submission(game_log(second, "9" * 64))
    (claim,) = store.claim_many([late.id], stale_after=HOUR)
    eve_wins = GameOutcome(
        (GamePlayer(1, "eve", 500, False, 12, 300), GamePlayer(2, "ann", 200, False, 0, -300)),
        None,
    )
    live = JudgedResult("lex-2", LAYOUT, "x", 500, "k3", eve_wins)
    assert store.record_results([(claim, live, signature(["zebra"]))]) == {late.id}

    assert "eve" in {row["player"] for row in rejudges.rank_changes(applied)}  # as if it moved
    summary = SqlRejudgeRuns(store).summary(applied)
    assert summary is not None and summary.frozen_at == applied.updated_at
    assert (summary.changed, summary.rank_changes) == (previewed.changed, previewed.rank_changes)


def test_a_ready_runs_preview_follows_a_result_judged_after_the_run_was_judged_through(
    store: SqlStore, team: Team
) -> None:
    beta = add_team(store, "beta")
    alpha_sub = judged(store, team, score=10, received_at=at(-60))
    waiting = store_submission(store, beta)  # received, not yet judged live
    add_fixed_lexicon(store)
    rejudges = SqlRejudgeRuns(store)
    run, _ = rejudges.start("c1", "lex-2", LAYOUT, "full", by="admin")
    rejudges.record_batch(
        run, [rejudged_as(alpha_sub, "lex-2", 30), rejudged_as(waiting, "lex-2", 5)]
    )
    ready = rejudges.get(run.id)
    assert ready is not None and ready.state == "ready"
    before = rejudges.summary(ready)
    assert before is not None and before.counts == {"scores": 1, "ranks": 1}  # beta: None -> 2

    (claim,) = store.claim_many([waiting.id], stale_after=HOUR)
    record(store, claim, score=50)  # judged live, under the list the run replaces

    assert rejudges.get(run.id) == ready  # the run's own row does not move
    after = rejudges.summary(ready)
    assert after is not None and after.counts == {"scores": 2, "ranks": 2}
    assert after.rank_changes == (
        {"team": "alpha", "old_rank": 2, "new_rank": 1},
        {"team": "beta", "old_rank": 1, "new_rank": 2},
    )


# -- intake's group commit ----------------------------------------------------------------------


def test_a_group_of_uploads_is_stored_in_one_transaction_skipping_bytes_seen_before(
    store: SqlStore, team: Team
) -> None:
    other = add_team(store, "beta")
    earlier = store_submission(store, team, sha256="a" * 64)
    group = [
        new_submission(team, sha256="a" * 64),  # the same bytes as `earlier`
        new_submission(team, sha256="b" * 64),
        new_submission(team, sha256="b" * 64),  # the same bytes twice in one group
        new_submission(other, sha256="b" * 64),  # the same bytes from another team: its own
    ]

    stored = store.store_submissions(group)

    assert stored == [None, group[1], None, group[3]]
    assert store.find_same("c1", team.id, "a" * 64) == earlier
    stored_events = [e for e in all_events(store) if e["type"] == "submission.stored"]
    assert [e["submission"] for e in stored_events] == [earlier.id, group[1].id, group[3].id]
    assert store.store_submissions(group[1:2]) == [None]  # asked again: nothing new


def wait_until_queued(store: SqlStore, submission_ids: list[str]) -> None:
    """Marks are committed by the group commit's thread: wait to see them (a hang is the test
    timeout's to catch)."""
    while True:
        states = {sid: getattr(store.get_submission(sid), "state", None) for sid in submission_ids}
        if all(state == SubmissionState.QUEUED for state in states.values()):
            return
        time.sleep(0.01)


def test_intakes_group_commit_stores_concurrent_uploads_each_once_and_in_order(
    store: SqlStore, team: Team
) -> None:
    from core.group_commit import GroupCommit

    commits = GroupCommit(store)
    try:
        uploads = [new_submission(team, sha256=f"{n % 150:064x}") for n in range(200)]
        with ThreadPoolExecutor(32) as pool:
            stored = list(pool.map(lambda s: commits.submit(s).result(), uploads))
    finally:
        commits.close()

    # 50 of them repeat the bytes of another: each bytes stored once
    assert sum(row is not None for row in stored) == 150
    rows = {s.sha256: s for s in (store.get_submission(u.id) for u in uploads) if s is not None}
    assert len(rows) == 150
    ids = [e["id"] for e in all_events(store) if e["type"] == "submission.stored"]
    assert ids == sorted(ids) and len(ids) == 150


@pytest.mark.parametrize("sql_url", ["sqlite"], indirect=True)  # PostgreSQL's writers take no turns
def test_uploads_arriving_while_another_writer_holds_sqlite_join_the_waiting_group(
    store: SqlStore, second_store: SqlStore, team: Team
) -> None:
    from core.group_commit import GroupCommit

    groups: list[int] = []
    store_submissions = store.store_submissions

    def counted(batch: Any, queued: Any = ()) -> Any:
        groups.append(len(batch))
        return store_submissions(batch, queued)

    store.store_submissions = counted  # type: ignore[method-assign]
    commits = GroupCommit(store)
    uploads = [new_submission(team) for _ in range(3)]
    try:
        with second_store.writer_turn():  # another process writing, a worker's results say
            first = commits.submit(uploads[0])
            time.sleep(0.2)  # the group commit takes it and waits for its turn
            rest = [commits.submit(upload) for upload in uploads[1:]]
            time.sleep(0.2)
            assert not first.done()
        answers = [done.result() for done in (first, *rest)]
    finally:
        commits.close()

    assert answers == uploads
    assert groups == [3]  # one transaction: the two that came during the wait joined the first


def test_intakes_group_commit_awaited_on_the_event_loop_commits_even_for_a_waiter_gone(
    store: SqlStore, team: Team
) -> None:
    from core.group_commit import GroupCommit

    commits = GroupCommit(store)
    gone, kept = new_submission(team), new_submission(team)

    async def upload_then_disconnect() -> bool:
        waiting = asyncio.ensure_future(commits.stored(gone))
        await asyncio.sleep(0)
        waiting.cancel()  # the request's task cancelled while its group commits
        return await commits.stored(kept) is not None

    try:
        assert asyncio.run(upload_then_disconnect())
    finally:
        commits.close()

    # Both stored: an upload whose answer nobody waits for is still taken, as the thread did.
    assert store.get_submission(gone.id) is not None
    assert store.get_submission(kept.id) is not None


def test_intakes_group_commit_marks_a_published_upload_queued_with_the_next_group(
    store: SqlStore, team: Team
) -> None:
    from core.group_commit import GroupCommit

    commits = GroupCommit(store, linger=3600)  # a mark alone would wait an hour
    try:
        first, second = new_submission(team), new_submission(team)
        assert commits.submit(first).result()
        commits.mark_queued(first)
        assert commits.submit(second).result()  # its transaction carries the mark put in before it
        assert store.get_submission(first.id).state == SubmissionState.QUEUED  # type: ignore[union-attr]
        assert store.get_submission(second.id).state == SubmissionState.STORED  # type: ignore[union-attr]
    finally:
        commits.close()

    kinds = [(e["type"], e["submission"]) for e in all_events(store) if "submission" in e]
    assert kinds == [
        ("submission.stored", first.id),
        ("submission.stored", second.id),
        ("submission.queued", first.id),
    ]


def test_a_publishing_group_commit_publishes_each_committed_group_then_marks_it_queued(
    store: SqlStore, team: Team
) -> None:
    from core.fakes import InMemoryPublisher
    from core.group_commit import GroupCommit

    publisher = InMemoryPublisher()
    commits = GroupCommit(store, linger=0.01, publisher=publisher, spread=2)
    try:
        uploads = [new_submission(team) for _ in range(40)]
        with ThreadPoolExecutor(40) as pool:
            assert all(pool.map(lambda s: commits.submit(s, s.id.encode()).result(), uploads))
        wait_until_queued(store, [u.id for u in uploads])
    finally:
        commits.close()

    assert sorted(publisher.published) == sorted(u.id for u in uploads)  # each once
    assert publisher.inline == {u.id: u.id.encode() for u in uploads}  # their bytes ride along
    assert len(publisher.groups) < len(uploads)  # a few uploads to a message
    assert all(len(group) <= tuning.GROUP_MOST for group in publisher.groups)
    queued = [e["submission"] for e in all_events(store) if e["type"] == "submission.queued"]
    assert sorted(queued) == sorted(u.id for u in uploads)


def test_a_publishing_group_commit_with_the_broker_down_leaves_uploads_stored_for_the_sweeper(
    store: SqlStore, team: Team
) -> None:
    from core.fakes import InMemoryPublisher
    from core.group_commit import GroupCommit

    publisher = InMemoryPublisher()
    publisher.down = True
    commits = GroupCommit(store, linger=0.01, publisher=publisher)
    try:
        upload = new_submission(team)
        assert commits.submit(upload, b"bytes").result()  # the 202 does not wait for the broker
        time.sleep(0.1)
        publisher.down = False
        later = new_submission(team)
        assert commits.submit(later, b"more").result()
        wait_until_queued(store, [later.id])
    finally:
        commits.close()

    assert publisher.published == [later.id]
    assert store.get_submission(upload.id).state == SubmissionState.STORED  # type: ignore[union-attr]
    stuck = store.needing_attention(stored_for=0, queued_for=None, judging_for=3600)
    assert [s.id for s in stuck] == [upload.id]


def test_intakes_group_commit_marks_queued_alone_after_lingering_and_skips_claimed_ones(
    store: SqlStore, team: Team
) -> None:
    from core.group_commit import GroupCommit

    commits = GroupCommit(store, linger=0.01)
    try:
        waiting, claimed = new_submission(team), new_submission(team)
        assert commits.submit(waiting).result() and commits.submit(claimed).result()
        assert claim_one(store, claimed.id, stale_after=HOUR) is not None  # a worker was quicker
        commits.mark_queued(waiting)
        commits.mark_queued(claimed)
        wait_until_queued(store, [waiting.id])
    finally:
        commits.close()

    assert store.get_submission(claimed.id).state == SubmissionState.JUDGING  # type: ignore[union-attr]
    queued = [e["submission"] for e in all_events(store) if e["type"] == "submission.queued"]
    assert queued == [waiting.id]


# -- closing a contest early ---------------------------------------------------------------------


def test_a_group_refuses_uploads_received_after_the_close_but_not_a_retry_of_earlier_bytes(
    store: SqlStore, team: Team
) -> None:
    other = store.create_contest(
        Contest(
            id="c2", title="Contest c2", opens_at=at(-HOUR), closes_at=at(HOUR),
            lexicon_id=LEXICON, rules_id=LAYOUT, created_at=clock.now(), game="wordytaire",)
    )  # fmt: skip
    elsewhere = add_team(store, "beta", "c2")
    earlier = store_submission(store, team, sha256="a" * 64)
    closing = store.close_contest("c1", by="admin")
    assert closing is not None and closing[1]
    closed_at = closing[0].closes_at
    group = [
        new_submission(team, sha256="a" * 64, received_at=at(1)),  # a retry of `earlier`
        new_submission(team, sha256="b" * 64, received_at=at(1)),  # new bytes, after the close
        new_submission(team, sha256="c" * 64, received_at=closed_at),  # at the close: in time
        new_submission(elsewhere, sha256="d" * 64, received_at=at(1)),  # c2 is still open
    ]

    stored = store.store_submissions(group)

    assert stored[0] is None  # the retry: intake answers with `earlier`
    assert isinstance(stored[1], Closed)
    assert str(stored[1]) == f"contest c1 closed at {closed_at}; received at {group[1].received_at}"
    assert stored[2:] == group[2:]
    assert store.get_submission(group[1].id) is None
    assert store.find_same("c1", team.id, "a" * 64) == earlier
    assert other.closes_at > at(0)
    with pytest.raises(Closed):
        store.store_submission(new_submission(team, received_at=at(1)))


def test_closing_moves_the_window_once_with_one_event(store: SqlStore, team: Team) -> None:
    before = clock.now()
    first = store.close_contest("c1", by="admin")
    again = store.close_contest("c1", by="admin")

    assert first is not None and again is not None
    assert first[1] is True and again == (first[0], False)
    assert before <= first[0].closes_at <= clock.now()
    assert store.get_contest("c1") == first[0]
    closings = [e for e in all_events(store) if e["type"] == EventType.CONTEST_CLOSED]
    assert [(e["contest"], e["closes_at"], e["by"]) for e in closings] == [
        ("c1", first[0].closes_at, "admin")
    ]
    assert store.close_contest("nope", by="admin") is None


def test_a_contest_closed_before_it_opened_opens_and_closes_at_the_same_moment(
    store: SqlStore,
) -> None:
    add_contest(store)
    later = store.create_contest(
        Contest(
            id="later", title="Later", opens_at=at(HOUR), closes_at=at(2 * HOUR),
            lexicon_id=LEXICON, rules_id=LAYOUT, created_at=clock.now(), game="wordytaire",)
    )  # fmt: skip
    closing = store.close_contest(later.id, by="admin")
    assert closing is not None
    assert closing[0].opens_at == closing[0].closes_at < later.opens_at


# -- game logs (Crosstiles) ------------------------------------------------------------------------


def add_game_contest(store: SqlStore) -> tuple[Team, Team, Team]:
    """A Crosstiles contest `g1` with two teams allowed to upload logs and one not."""
    add_contest(store)  # the word list and rules data
    store.create_contest(
        Contest(
            id="g1", title="Games", opens_at=at(-HOUR), closes_at=at(HOUR), lexicon_id=LEXICON,
            rules_id=LAYOUT, created_at=clock.now(), game="crosstiles",
        )
    )  # fmt: skip
    allowed = [replace(add_team(store, name, "g1"), uploads_logs=True) for name in ("a", "b")]
    for team in allowed:
        assert store.allow_logs(team.id, True, by="admin") == team
    return allowed[0], allowed[1], add_team(store, "c", "g1")


def game_log(
    team: Team, sha256: str, key: str | None = None, match: str | None = None
) -> Submission:
    """A game log's row: `key` its game's identity (default: its bytes' hash)."""
    return replace(new_submission(team, sha256=sha256), game_key=key or sha256, match_key=match)


def test_a_game_log_is_one_submission_whoever_sends_it_and_only_allowed_teams_may(
    store: SqlStore,
) -> None:
    first, second, barred = add_game_contest(store)
    original = store.store_submission(game_log(first, "a" * 64))

    stored = store.store_submissions(
        [game_log(second, "a" * 64), game_log(barred, "b" * 64), game_log(second, "c" * 64),
         game_log(first, "c" * 64)]
    )  # fmt: skip

    assert stored[0] is None  # the same game: intake answers with `original`
    assert isinstance(stored[1], NotAllowed) and "may not upload game logs" in str(stored[1])
    assert stored[2] is not None and stored[3] is None  # the same game twice in one group
    assert store.find_same("g1", second.id, "a" * 64, "a" * 64) == original
    assert store.find_same("g1", barred.id, "a" * 64, "a" * 64) == original
    assert store.allow_logs(second.id, False, by="admin") == replace(second, uploads_logs=False)
    assert isinstance(store.store_submissions([game_log(second, "d" * 64)])[0], NotAllowed)


def test_a_game_sent_again_in_other_bytes_by_another_team_keeps_that_teams_copy_once(
    store: SqlStore,
) -> None:
    first, second, _ = add_game_contest(store)
    original = store.store_submission(game_log(first, "a" * 64, key="g" * 64))
    uploads = [game_log(second, "b" * 64, key="g" * 64), game_log(second, "c" * 64, key="g" * 64),
               game_log(first, "d" * 64, key="g" * 64)]  # fmt: skip

    stored = store.store_submissions(uploads)

    assert stored == [None, None, None]  # the same game, whoever sent it and in whatever bytes
    assert store.find_same("g1", second.id, "z" * 64, "g" * 64) == original
    assert store.copy_of(original.id, second.id) == uploads[0].blob_key  # its first copy
    assert store.copy_of(original.id, first.id) is None  # the first uploader's bytes are its own
    copied = [e for e in all_events(store) if e["type"] == "submission.copied"]
    assert [(e["team"], e["sha256"]) for e in copied] == [(second.id, "b" * 64)]


def test_logs_with_the_seed_and_players_of_another_but_other_turns_are_all_stored(
    store: SqlStore,
) -> None:
    first, second, _ = add_game_contest(store)
    original = store.store_submission(game_log(first, "a" * 64, key="g" * 64, match="m" * 64))

    stored = store.store_submissions(
        [game_log(second, "b" * 64, key="h" * 64, match="m" * 64),
         game_log(second, "c" * 64, key="g" * 64, match="m" * 64),
         game_log(first, "d" * 64, key="i" * 64, match="n" * 64),
         game_log(second, "e" * 64, key="j" * 64, match="n" * 64)]
    )  # fmt: skip

    # A rival log of one game is no refusal (the standings tell which counts, core.disputes).
    assert isinstance(stored[0], Submission) and stored[0].id != original.id
    assert stored[1] is None  # the same game: it is that game
    assert isinstance(stored[2], Submission) and isinstance(stored[3], Submission)  # in a group


def test_deleting_a_games_first_uploader_hands_it_to_the_next_and_keeps_its_standing(
    store: SqlStore,
) -> None:
    first, second, _ = add_game_contest(store)
    third = replace(add_team(store, "d", "g1"), uploads_logs=True)
    store.allow_logs(third.id, True, by="admin")
    shared = store.store_submission(game_log(first, "a" * 64, key="g" * 64))
    alone = store.store_submission(game_log(first, "f" * 64, key="f" * 64))
    third_copy = replace(game_log(third, "c" * 64, key="g" * 64), received_at=at(-5))
    store.store_submissions([third_copy])
    store.store_submissions([replace(game_log(second, "b" * 64, key="g" * 64), received_at=at(-9))])
    (claim,) = store.claim_many([shared.id], stale_after=HOUR)
    won = GameOutcome(
        (GamePlayer(1, "ann", 300, False, 12, 40), GamePlayer(2, "bob", 260, False, 0, -40)), None
    )
    result = JudgedResult(LEXICON, LAYOUT, "x", 300, f"reports/{shared.id}/r", won)
    store.record_results([(claim, result, signature(["ann"]))])
    add_fixed_lexicon(store)
    run, _ = SqlRejudgeRuns(store).start("g1", "lex-2", LAYOUT, "full", by="admin")
    rejudged = replace(result, lexicon_id="lex-2", report_key=f"reports/{shared.id}/lex-2")
    assert SqlRejudgeRuns(store).record_batch(run, [(shared.id, rejudged)]) == 1
    second_copy = store.copy_of(shared.id, second.id)

    deleted = store.delete_team(first.id, by="admin")

    assert deleted.handed_on == [shared.id]
    assert sorted(deleted.submissions) == sorted([shared.id, alone.id])  # the team's bytes
    assert sorted(deleted.keys) == sorted(
        [shared.blob_key, alone.blob_key, result.report_key, rejudged.report_key]
    )
    # Judged again from the copy, under the live ruleset and then the open run's.
    assert results_under(store, "lex-2") == [] and store.current_result(shared.id) is not None
    handed = store.get_submission(shared.id)
    assert handed is not None and store.get_submission(alone.id) is None
    # The earliest other uploader's copy (received first, not stored first) now is the game.
    assert (handed.team_id, handed.sha256, handed.blob_key) == (second.id, "b" * 64, second_copy)
    assert handed.state == SubmissionState.STORED  # judged again, from its new owner's bytes
    assert store.copy_of(shared.id, second.id) is None
    assert store.copy_of(shared.id, third.id) is not None
    assert [p["nick"] for p in crosstiles_sql.game_standings(store, "g1")] == [
        "ann",
        "bob",
    ]  # still counted
    assert store.delete_team(third.id, by="admin").keys == [third_copy.blob_key]
    assert store.get_submission(shared.id) is not None  # a copy's team leaves the game alone


def rated(rows: list[dict[str, Any]], games: list[GameOutcome]) -> list[dict[str, Any]]:
    """The standings rows with each player's Glicko-2 rating after `games`, in that order."""
    ratings = contest_ratings(
        [[Seat(p.nick, p.score, p.removed) for p in g.players] for g in games]
    )
    return [{**row, **shown(ratings[row["nick"]])} for row in rows]


def test_a_judged_games_players_follow_its_result_into_a_carry_a_rejudge_and_the_standings(
    store: SqlStore,
) -> None:
    first, _, _ = add_game_contest(store)
    add_fixed_lexicon(store)
    ann_wins = GameOutcome(
        (GamePlayer(1, "ann", 300, False, 12, 40), GamePlayer(2, "bob", 260, False, 0, -40)), None
    )
    level = GameOutcome(
        (GamePlayer(1, "bob", 200, False, 6, 0), GamePlayer(2, "ann", 200, False, 6, 0)), None
    )
    broken = GameOutcome((), GameError(7, "not_in_dictionary", "'colour' is not in the list"))
    games = [ann_wins, level, broken]
    subs = [store.store_submission(game_log(first, str(n) * 64)) for n in range(3)]
    for sub, game in zip(subs, games, strict=True):
        (claim,) = store.claim_many([sub.id], stale_after=HOUR)
        result = JudgedResult(LEXICON, LAYOUT, "x", 0, "k", game)
        assert store.record_results([(claim, result, signature(["colour"]))]) == {sub.id}

    standings = crosstiles_sql.game_standings(store, "g1")
    assert standings == rated(
        [
            {"rank": 1, "nick": "ann", "games": 2, "wins": 1.5, "spread": 40},
            {"rank": 2, "nick": "bob", "games": 2, "wins": 0.5, "spread": -40},
        ],
        [ann_wins, level],
    )
    assert crosstiles_sql.invalid_games(store, "g1") == [
        {"submission": subs[2].id, "team": "a", "line": 7, "reason": "not_in_dictionary",
         "detail": "'colour' is not in the list"}
    ]  # fmt: skip

    rejudges = SqlRejudgeRuns(store)
    run, _ = rejudges.start("g1", "lex-2", LAYOUT, "affected", by="admin")
    assert rejudges.carry(run, [subs[0].id, subs[1].id]) == 2
    valid = GameOutcome(
        (GamePlayer(1, "cy", 90, False, 12, 10), GamePlayer(2, "dee", 80, True, 0, -10)), None
    )
    rejudged = JudgedResult("lex-2", LAYOUT, "x", 90, "k2", valid)
    wider = signature(["colour", "neighbour"])
    assert rejudges.record_batch(run, [(subs[2].id, rejudged)], {subs[2].id: wider}) == 1

    assert crosstiles_sql.game_standings(store, "g1", ("lex-2", LAYOUT)) == rated(
        [
            standings[0],
            {"rank": 2, "nick": "cy", "games": 1, "wins": 1.0, "spread": 10},
            {**standings[1], "rank": 3},
            {"rank": 4, "nick": "dee", "games": 1, "wins": 0.0, "spread": -10},
        ],
        [ann_wins, level, valid],
    )
    assert crosstiles_sql.invalid_games(store, "g1", ("lex-2", LAYOUT)) == []
    assert (
        crosstiles_sql.game_standings(store, "g1") == standings
    )  # nothing visible moves before apply
    assert [(c["submission"], c["new_valid"]) for c in rejudges.changes(run)] == [
        (subs[2].id, True)
    ]
    with store.engine.connect() as conn:
        kept = conn.execute(
            select(word_hashes.c.hashes).where(word_hashes.c.submission_id == subs[2].id)
        ).scalar_one()
    assert hashes_in(kept) == hashes_in(wider)  # the words reached under the new list are added
    rejudges.apply(run.id, by="admin")
    assert [row["nick"] for row in crosstiles_sql.game_standings(store, "g1")] == [
        "ann",
        "cy",
        "bob",
        "dee",
    ]
    keys = store.delete_team(first.id, by="admin").keys
    assert "k2" in keys and crosstiles_sql.game_standings(store, "g1") == []


# -- the results export ----------------------------------------------------------------------------


def test_results_come_a_page_at_a_time_in_id_order_with_the_live_result_or_none(
    store: SqlStore, team: Team
) -> None:
    judged_one = judged(store, team, score=42, received_at=at(-60))
    waiting = [store_submission(store, team) for _ in range(4)]
    expected = sorted([judged_one.id, *(s.id for s in waiting)])

    rows, after = [], ""
    while page := store.results_page("c1", after, limit=2):
        assert len(page) <= 2
        rows += page
        after = page[-1].submission

    assert [row.submission for row in rows] == expected
    by_id = {row.submission: row for row in rows}
    shown = by_id[judged_one.id]
    assert (shown.team, shown.state, shown.lexicon) == ("alpha", "judged", LEXICON)
    assert shown.result_id is not None
    assert store.result_fields("wordytaire", [shown.result_id])[shown.result_id]["score"] == 42
    assert by_id[waiting[0].id].result_id is None and by_id[waiting[0].id].state == "stored"
    assert store.results_page("nope", "", limit=10) == []


# -- apply against intake's group commit --------------------------------------------------------


def ready_run(store: SqlStore, team: Team) -> tuple[SqlRejudgeRuns, Run]:
    """A contest with one upload judged under LEXICON, and a run to lex-2 that judged it."""
    first = judged(store, team, score=10, received_at=at(-60))
    add_fixed_lexicon(store)
    rejudges = SqlRejudgeRuns(store)
    run, _ = rejudges.start("c1", "lex-2", LAYOUT, "full", by="admin")
    assert rejudges.record_batch(run, [rejudged_as(first, "lex-2", 12)]) == 1
    ready = rejudges.get(run.id)
    assert ready is not None and ready.state == "ready"
    return rejudges, ready


def judged_without_a_live_result(store: SqlStore) -> list[str]:
    """The contest's submissions `judged` with no result under its live ruleset."""
    contest = store.get_contest("c1")
    assert contest is not None
    with store.engine.connect() as conn:
        judged_ids = conn.execute(
            text("SELECT id FROM submissions WHERE contest_id = 'c1' AND state = 'judged'")
        ).scalars()
        return [sid for sid in judged_ids if store.current_result(sid) is None]


class Pause:
    """Holds the transaction of whoever calls it open until `go`, once `reached` is set."""

    def __init__(self) -> None:
        self.reached, self.go = threading.Event(), threading.Event()

    def __call__(self) -> None:
        self.reached.set()
        assert self.go.wait(30)


def test_apply_waits_for_a_group_commit_that_counted_an_upload_in_its_run_and_then_refuses(
    store: SqlStore, second_store: SqlStore, team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    rejudges, run = ready_run(store, team)
    pause = Pause()
    keep_copies = sql_submissions.keep_copies

    def held(*args: Any) -> None:  # called after the run's total is bumped, before the commit
        keep_copies(*args)
        pause()

    monkeypatch.setattr(sql_submissions, "keep_copies", held)
    late = new_submission(team)
    with ThreadPoolExecutor(2) as pool:
        storing = pool.submit(store.store_submissions, [late])
        assert pause.reached.wait(30)
        applying = pool.submit(SqlRejudgeRuns(second_store).apply, run.id, "admin")
        time.sleep(0.5)
        assert not applying.done()  # the run's row is locked by the group's transaction
        pause.go.set()
        assert storing.result(30) == [late]
        with pytest.raises(RejudgeRefused, match="running"):
            applying.result(30)
    monkeypatch.setattr(sql_submissions, "keep_copies", keep_copies)

    moved = rejudges.get(run.id)
    assert moved is not None and (moved.state, moved.total) == ("running", 2)
    # The upload is judged live under the old list (the contest's still), then by the run.
    claim = claim_one(store, late.id, stale_after=HOUR)
    assert claim is not None and record(store, claim, score=7)
    assert rejudges.record_batch(moved, [rejudged_as(late, "lex-2", 8)]) == 1
    assert rejudges.apply(run.id, by="admin").state == "applied"
    assert judged_without_a_live_result(store) == []
    assert store.current_result(late.id) is not None


def test_a_group_commit_during_apply_waits_and_finds_the_run_closed(
    store: SqlStore, second_store: SqlStore, team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    rejudges, run = ready_run(store, team)
    pause = Pause()
    record_summary = sql_rejudges._record_summary

    def held(*args: Any) -> None:  # inside apply's transaction, the run's row locked
        record_summary(*args)
        pause()

    monkeypatch.setattr(sql_rejudges, "_record_summary", held)
    late = new_submission(team)
    with ThreadPoolExecutor(2) as pool:
        applying = pool.submit(rejudges.apply, run.id, "admin")
        assert pause.reached.wait(30)
        storing = pool.submit(second_store.store_submissions, [late])
        time.sleep(0.5)
        assert not storing.done()
        pause.go.set()
        assert applying.result(30).state == "applied"
        assert storing.result(30) == [late]

    applied = rejudges.get(run.id)
    assert applied is not None and (applied.state, applied.total) == ("applied", 1)
    claim = claim_one(store, late.id, stale_after=HOUR)  # judged under the live list: lex-2
    assert claim is not None
    result = rejudged_as(late, "lex-2", 8)[1]
    assert store.record_results([(claim, result, signature(["cat"]))]) == {late.id}
    assert judged_without_a_live_result(store) == []


# -- uploads a rejudge cannot judge -------------------------------------------------------------


def test_a_runs_failures_count_as_done_once_and_apply_marks_them_failed_with_their_reason(
    store: SqlStore, team: Team
) -> None:
    subs = [judged(store, team, score=10 + n, received_at=at(-60 + n)) for n in range(3)]
    add_fixed_lexicon(store)
    rejudges = SqlRejudgeRuns(store)
    run, _ = rejudges.start("c1", "lex-2", LAYOUT, "full", by="admin")
    failed = {subs[1].id: "upload_missing", subs[2].id: "upload_corrupt"}

    assert rejudges.record_batch(run, [rejudged_as(subs[0], "lex-2", 20)], failed=failed) == 3
    assert rejudges.record_batch(run, [], failed=failed) == 0  # a batch delivered twice
    assert rejudges.without_result(run, [s.id for s in subs]) == []
    ready = rejudges.get(run.id)
    assert ready is not None and (ready.state, ready.done, ready.total) == ("ready", 3, 3)
    count, listed = rejudges.failures(ready, limit=1)
    assert count == 2 and [(f.submission_id, f.team) for f in listed] == [(min(failed), "alpha")]
    with store.write() as (conn, pending):  # a full recount (after a deletion) agrees
        count_progress(conn, pending, run.id)
    recounted = rejudges.get(run.id)
    assert recounted is not None and (recounted.state, recounted.done) == ("ready", 3)

    rejudges.apply(run.id, by="admin")

    for sid, reason in failed.items():
        sub = store.get_submission(sid)
        assert sub is not None and sub.state == "failed"
        assert sub.failure == failure_text(FailureReason(reason))
    assert judged_without_a_live_result(store) == []
    assert store.delete_team(team.id, by="admin").keys  # its failure rows go with it
    with store.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(rejudge_failures)).scalar_one() == 0
