"""Results under a ruleset (with a judged game's players or error), the uploads a rejudge run
could not judge, and rejudge progress counted in the same transaction as them."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, NamedTuple

from sqlalchemy import Connection, and_, func, insert, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.dml import Insert
from sqlalchemy.sql.elements import ColumnElement

from core import clock
from core.events import Event, RejudgeProgress, RejudgeReady
from core.records import JudgedResult, Run
from core.states import OPEN_REJUDGE_STATES, RejudgeState
from core.word_hashes import union
from infra.sql.games import drop_details, put_details
from infra.sql.schema import rejudge_failures, rejudge_runs, results, submissions, word_hashes


def put_result(
    conn: Connection,
    submission_id: str,
    result: JudgedResult,
    now: str,
    replace: bool = False,
    carried: bool = False,
) -> bool:
    """Insert a submission's result under its ruleset; True if it was new (results are keyed by
    submission and ruleset, so delivering the same work twice counts it once)."""
    key = and_(
        results.c.submission_id == submission_id,
        results.c.lexicon_id == result.lexicon_id,
        results.c.layout_id == result.rules_id,
    )
    values = _result_values(result, now, carried)
    found = conn.execute(select(results.c.id).where(key)).first()
    if found is not None:
        if replace:
            conn.execute(update(results).where(key).values(**values))
            drop_details(conn, [found.id])
            put_details(conn, [(found.id, result.game)])
        return False
    inserted = conn.execute(
        insert(results).values(**_result_row(submission_id, result, now, carried))
    )
    put_details(conn, [(inserted.inserted_primary_key[0], result.game)])  # type: ignore[index]
    return True


def hold(conn: Connection, host: str, submission_ids: list[str]) -> None:
    """The bytes of these submissions are on `host` now (`Submission.held_on`): one statement,
    writing only the rows that named another host."""
    conn.execute(
        update(submissions)
        .where(
            and_(
                submissions.c.id.in_(submission_ids),
                or_(submissions.c.held_on.is_(None), submissions.c.held_on != host),
            )
        )
        .values(held_on=host)
    )


def keep_words(conn: Connection, signatures: dict[str, bytes]) -> None:
    """Record each submission's word signature, or widen the one recorded to the union: a
    judging that looked up words the recorded one lacks (a game log that went further under
    another list) adds them; one that adds none writes nothing."""
    if not signatures:
        return
    upserts = _upserts(conn)
    if upserts is not None:  # one statement for the new
        signatures = dict(signatures)  # what is left to widen
        rows = [{"submission_id": sid, "hashes": hashes} for sid, hashes in signatures.items()]
        for sid in conn.execute(upserts.signatures, rows).scalars():
            del signatures[sid]
        if not signatures:
            return
    kept = dict(
        conn.execute(
            select(word_hashes.c.submission_id, word_hashes.c.hashes).where(
                word_hashes.c.submission_id.in_(list(signatures))
            )
        ).all()
    )
    fresh = [
        {"submission_id": sid, "hashes": hashes}
        for sid, hashes in signatures.items()
        if sid not in kept
    ]
    if fresh:
        conn.execute(insert(word_hashes), fresh)
    for sid, hashes in signatures.items():
        if sid in kept and (widened := union(kept[sid], hashes)) != kept[sid]:
            conn.execute(
                update(word_hashes).where(word_hashes.c.submission_id == sid).values(hashes=widened)
            )


def put_new_results(conn: Connection, batch: list[tuple[str, JudgedResult]], now: str) -> list[str]:
    """Insert the results that are new under their ruleset, skip the others; the submissions
    of those that were new.

    One `INSERT ... ON CONFLICT DO NOTHING` for the batch on SQLite and PostgreSQL (`_upserts`),
    where `put_result` would run two statements a result: a rejudge batch's transaction, which
    holds SQLite's single write lock that live uploads queue behind, stays a few statements
    and a few milliseconds long."""
    return _insert_new(conn, batch, now)


def put_results(conn: Connection, batch: list[tuple[str, JudgedResult]], now: str) -> None:
    """`put_result(..., replace=True)` for each: the new ones inserted together (a judged
    group's results, where three statements an upload were most of its transaction), a result
    already there under its ruleset replaced, as that one call does."""
    inserted = set(_insert_new(conn, batch, now))
    for sid, result in batch:
        if sid not in inserted:
            put_result(conn, sid, result, now, replace=True)


def _insert_new(conn: Connection, batch: list[tuple[str, JudgedResult]], now: str) -> list[str]:
    """The results new under their ruleset inserted, with their games' details; the
    submissions of those inserted."""
    upserts = _upserts(conn)
    if upserts is None:  # SQLite before 3.35 too
        return [sid for sid, result in batch if put_result(conn, sid, result, now)]
    if not batch:
        return []
    games = {sid: result.game for sid, result in batch}
    rows = [_result_row(sid, result, now) for sid, result in batch]
    inserted = conn.execute(upserts.results, rows).all()
    put_details(conn, [(row.id, games[row.submission_id]) for row in inserted])
    return [row.submission_id for row in inserted]


# The dialects whose `insert` has `on_conflict_do_nothing`, by name.
_UPSERTING = {"sqlite": sqlite, "postgresql": postgresql}


class _Upserts(NamedTuple):
    results: Insert
    signatures: Insert


def _upserts(conn: Connection) -> _Upserts | None:
    """The INSERT ... ON CONFLICT DO NOTHING ... RETURNING statements of results and word
    signatures for the connection's database; None where it has no such statement (SQLite
    before 3.35 returns nothing from an INSERT)."""
    name = conn.dialect.name
    return _built_upserts(name) if name in _UPSERTING and conn.dialect.insert_returning else None


@functools.cache
def _built_upserts(dialect: str) -> _Upserts:
    """`_upserts` for `dialect`, built once. Each statement is executed with a list of rows:
    SQLAlchemy then sends one multi-row statement a page of rows from a compiled form it caches
    ("insertmanyvalues"), where building `.values(rows)` anew for each batch cost about 0.12 ms
    a row in SQLAlchemy alone, against 0.015."""
    module = _UPSERTING[dialect]
    return _Upserts(
        module.insert(results)
        .on_conflict_do_nothing(index_elements=["submission_id", "lexicon_id", "layout_id"])
        .returning(results.c.id, results.c.submission_id),
        module.insert(word_hashes)
        .on_conflict_do_nothing(index_elements=["submission_id"])
        .returning(word_hashes.c.submission_id),
    )


def _result_row(
    submission_id: str, result: JudgedResult, now: str, carried: bool = False
) -> dict[str, Any]:
    return {
        "submission_id": submission_id,
        "lexicon_id": result.lexicon_id,
        "layout_id": result.rules_id,
        **_result_values(result, now, carried),
    }


def _result_values(result: JudgedResult, now: str, carried: bool = False) -> dict[str, Any]:
    """A result's columns other than its key (submission and ruleset)."""
    return {
        "judge_version": result.judge_version,
        "score": result.score,
        "report_key": result.report_key,
        "judged_at": now,
        "carried": int(carried),
    }


def count_progress(
    conn: Connection,
    pending: list[Event],
    run_id: str,
    added: int | None = None,
    carried: int = 0,
) -> None:
    """Bring a rejudge run's progress up to date in the caller's transaction, with the results
    that transaction added under the run's ruleset (`added`, of which `carried` were carried
    over, and any failures it recorded for the run), or, with `added` None, by counting every
    result the ruleset has for the contest and every failure of the run without one.

    Every write of such a result goes through here with the number `put_result` reported new,
    so work delivered twice counts once; the increment happens in SQL (`done = done + n`), so
    concurrent transactions cannot lose one. The full count is for starting a run (results of
    an earlier, cancelled one count) and after deletions."""
    if added is None:
        run = (
            conn.execute(select(rejudge_runs).where(rejudge_runs.c.id == run_id)).mappings().first()
        )
        if run is None or run["state"] not in OPEN_REJUDGE_STATES:
            return
        covered = (
            select(func.count(), func.coalesce(func.sum(results.c.carried), 0))
            .select_from(results.join(submissions, submissions.c.id == results.c.submission_id))
            .where(
                and_(
                    submissions.c.contest_id == run["contest_id"],
                    results.c.lexicon_id == run["lexicon_id"],
                    results.c.layout_id == run["layout_id"],
                )
            )
        )
        done, carried = conn.execute(covered).one()
        failed = conn.execute(
            select(func.count())
            .select_from(
                rejudge_failures.join(
                    submissions, submissions.c.id == rejudge_failures.c.submission_id
                )
            )
            .where(
                and_(
                    rejudge_failures.c.run_id == run_id,
                    submissions.c.contest_id == run["contest_id"],
                    ~has_result(
                        rejudge_failures.c.submission_id, run["lexicon_id"], run["layout_id"]
                    ),
                )
            )
        ).scalar_one()
        before = int(run["done"])
        set_to: dict[str, Any] = {"done": done + failed, "carried": int(carried)}
    else:
        set_to = {
            "done": rejudge_runs.c.done + added,
            "carried": rejudge_runs.c.carried + carried,
        }
    now = clock.now()
    updated = (
        conn.execute(
            update(rejudge_runs)
            .where(and_(rejudge_runs.c.id == run_id, rejudge_runs.c.state.in_(OPEN_REJUDGE_STATES)))
            .values(**set_to, updated_at=now)
            .returning(
                rejudge_runs.c.contest_id,
                rejudge_runs.c.state,
                rejudge_runs.c.total,
                rejudge_runs.c.done,
                rejudge_runs.c.carried,
            )
        )
        .mappings()
        .first()
    )
    if updated is None:
        return  # closed meanwhile
    done, total = int(updated["done"]), int(updated["total"])
    if added is not None:
        before = done - added
    tenth = max(1, total // 10)
    if done // tenth > before // tenth and done < total:
        pending.append(
            RejudgeProgress(rejudge=run_id, contest=updated["contest_id"], done=done, total=total)
        )
    if done >= total and updated["state"] == RejudgeState.RUNNING:
        conn.execute(
            update(rejudge_runs)
            .where(and_(rejudge_runs.c.id == run_id, rejudge_runs.c.state == RejudgeState.RUNNING))
            .values(state=RejudgeState.READY, finished_at=now)
        )
        pending.append(
            RejudgeReady(
                rejudge=run_id,
                contest=updated["contest_id"],
                done=done,
                total=total,
                carried=int(updated["carried"]),
            )
        )


def has_result(
    submission_id: ColumnElement[Any], lexicon_id: str, layout_id: str
) -> ColumnElement[bool]:
    """Whether the submission has a result under the ruleset."""
    return (
        select(results.c.id)
        .where(
            and_(
                results.c.submission_id == submission_id,
                results.c.lexicon_id == lexicon_id,
                results.c.layout_id == layout_id,
            )
        )
        .exists()
    )


def failed_for(run: Run) -> ColumnElement[bool]:
    """The run's failures that still hold: no result under its ruleset came since."""
    return and_(
        rejudge_failures.c.run_id == run.id,
        ~has_result(rejudge_failures.c.submission_id, run.lexicon_id, run.rules_id),
    )


def put_failures(conn: Connection, run: Run, failed: Mapping[str, str], now: str) -> int:
    """Record the uploads the run could not judge, each once (a batch delivered twice, or two
    deliveries at once, count it once), but none that has a result under the run's ruleset;
    how many were new."""
    if not failed:
        return 0
    judged = set(
        conn.scalars(
            select(results.c.submission_id).where(
                and_(
                    results.c.submission_id.in_(list(failed)),
                    results.c.lexicon_id == run.lexicon_id,
                    results.c.layout_id == run.rules_id,
                )
            )
        )
    )
    rows = [
        {"run_id": run.id, "submission_id": sid, "reason": reason, "failed_at": now}
        for sid, reason in failed.items()
        if sid not in judged
    ]
    if not rows:
        return 0
    dialect = _UPSERTING.get(conn.dialect.name)
    if dialect is not None and conn.dialect.insert_returning:
        statement = (
            dialect.insert(rejudge_failures)
            .values(rows)
            .on_conflict_do_nothing(index_elements=["run_id", "submission_id"])
            .returning(rejudge_failures.c.submission_id)
        )
        return len(conn.execute(statement).all())
    known = set(
        conn.scalars(
            select(rejudge_failures.c.submission_id).where(
                and_(
                    rejudge_failures.c.run_id == run.id,
                    rejudge_failures.c.submission_id.in_([row["submission_id"] for row in rows]),
                )
            )
        )
    )
    fresh = [row for row in rows if row["submission_id"] not in known]
    if fresh:
        conn.execute(insert(rejudge_failures), fresh)
    return len(fresh)


def recount_open_runs(conn: Connection, pending: list[Event], contest_id: str) -> None:
    """After submissions are deleted, an open rejudge run covers fewer: recount it."""
    total = conn.execute(
        select(func.count()).select_from(submissions).where(submissions.c.contest_id == contest_id)
    ).scalar_one()
    open_runs = conn.execute(
        select(rejudge_runs.c.id).where(
            and_(
                rejudge_runs.c.contest_id == contest_id,
                rejudge_runs.c.state.in_(OPEN_REJUDGE_STATES),
            )
        )
    ).all()
    for run in open_runs:
        conn.execute(update(rejudge_runs).where(rejudge_runs.c.id == run.id).values(total=total))
        count_progress(conn, pending, run.id)
