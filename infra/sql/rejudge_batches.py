"""Rejudge runs' results: carried over where no word of the fix touches a submission, recorded
by the batches judged for a run, and the uploads a run could not judge (its failures), each
write in one transaction with the run's progress."""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import and_, func, insert, literal, select

from core import clock
from core.records import JudgedResult, Run, RunFailure, Submission
from infra.sql.base import Transactions
from infra.sql.games import copy_details
from infra.sql.results import (
    count_progress,
    failed_for,
    hold,
    keep_words,
    put_failures,
    put_new_results,
)
from infra.sql.schema import rejudge_failures, results, submissions, teams


class BatchesMixin:
    """A run's results and failures (`infra.sql.rejudges.SqlRejudgeRuns` is made of it)."""

    store: Transactions

    def carry(self, run: Run, submission_ids: list[str]) -> int:
        """Copy the current results of submissions no word of the fix touches, in one statement
        and one transaction with the progress; a result already there under the run's ruleset
        stays as it is (so a page carried twice counts once)."""
        if not submission_ids:
            return 0
        source = results.alias("source")
        already = (
            select(results.c.id)
            .where(
                and_(
                    results.c.submission_id == source.c.submission_id,
                    results.c.lexicon_id == run.lexicon_id,
                    results.c.layout_id == run.rules_id,
                )
            )
            .exists()
        )
        copied = select(
            source.c.submission_id,
            literal(run.lexicon_id),
            literal(run.rules_id),
            source.c.judge_version,
            source.c.score,
            source.c.report_key,
            literal(clock.now()),
            literal(1),
        ).where(
            and_(
                source.c.submission_id.in_(submission_ids),
                source.c.lexicon_id == run.from_lexicon_id,
                source.c.layout_id == run.from_rules_id,
                ~already,
            )
        )
        columns = [
            "submission_id", "lexicon_id", "layout_id", "judge_version", "score", "report_key",
            "judged_at", "carried",
        ]  # fmt: skip
        with self.store.write() as (conn, pending):
            statement = insert(results).from_select(columns, copied).returning(results.c.id)
            ids = list(conn.execute(statement).scalars())  # (rowcount is -1 here on psycopg)
            copy_details(conn, ids, run.from_lexicon_id, run.from_rules_id)
            count_progress(conn, pending, run.id, added=len(ids), carried=len(ids))
            return len(ids)

    def record_batch(
        self,
        run: Run,
        batch: list[tuple[str, JudgedResult]],
        words: Mapping[str, bytes] | None = None,
        failed: Mapping[str, str] | None = None,
        held_on: str | None = None,
    ) -> int:
        """Results judged for a run, and the uploads it could not judge (`failed`: a reason
        code each), in one transaction with its progress; returns how many were new (a failure
        counts as done). A submission deleted meanwhile (its team was) gets neither. `words`:
        the word signature each judging made, added to the one recorded (see `keep_words`).
        `held_on`: the judging host, which holds the judged ones' bytes now."""
        now, words, failed = clock.now(), words or {}, failed or {}
        with self.store.write() as (conn, pending):
            ids = [sid for sid, _ in batch] + list(failed)
            present = set(conn.scalars(select(submissions.c.id).where(submissions.c.id.in_(ids))))
            batch = [(sid, result) for sid, result in batch if sid in present]
            judged = put_new_results(conn, batch, now) if batch else []
            # A submission the run recorded as failed was counted done then: judged since (a
            # producer restarted once S3 could read it), it is not counted again.
            counted = (
                set(
                    conn.scalars(
                        select(rejudge_failures.c.submission_id).where(
                            and_(
                                rejudge_failures.c.run_id == run.id,
                                rejudge_failures.c.submission_id.in_(judged),
                            )
                        )
                    )
                )
                if judged
                else set()
            )
            new = len(judged) - len(counted)
            keep_words(conn, {sid: words[sid] for sid, _ in batch if sid in words})
            if held_on is not None and batch:
                hold(conn, held_on, [sid for sid, _ in batch])
            gone = {sid: reason for sid, reason in failed.items() if sid in present}
            new += put_failures(conn, run, gone, now)
            count_progress(conn, pending, run.id, added=new)
            return new

    def failures(self, run: Run, limit: int) -> tuple[int, list[RunFailure]]:
        """How many submissions the run could not judge (and that have no result under its
        ruleset since), and the first `limit` of them by id, with their team's name."""
        where = failed_for(run)
        joined = rejudge_failures.join(
            submissions, submissions.c.id == rejudge_failures.c.submission_id
        ).join(teams, teams.c.id == submissions.c.team_id)
        with self.store.read() as conn:
            count = conn.execute(select(func.count()).select_from(joined).where(where)).scalar_one()
            rows = conn.execute(
                select(
                    rejudge_failures.c.submission_id,
                    teams.c.name,
                    rejudge_failures.c.reason,
                    rejudge_failures.c.failed_at,
                )
                .select_from(joined)
                .where(where)
                .order_by(rejudge_failures.c.submission_id)
                .limit(limit)
            ).all()
        return int(count), [RunFailure(*row) for row in rows]

    def without_result(self, run: Run, submission_ids: list[str]) -> list[Submission]:
        """The submissions among these that have no result under the run's ruleset yet."""
        have = select(results.c.submission_id).where(
            and_(
                results.c.submission_id.in_(submission_ids),
                results.c.lexicon_id == run.lexicon_id,
                results.c.layout_id == run.rules_id,
            )
        )
        failed = select(rejudge_failures.c.submission_id).where(
            and_(
                rejudge_failures.c.run_id == run.id,
                rejudge_failures.c.submission_id.in_(submission_ids),
            )
        )
        query = (
            select(submissions)
            .where(
                and_(
                    submissions.c.id.in_(submission_ids),
                    submissions.c.id.not_in(have),
                    submissions.c.id.not_in(failed),
                )
            )
            .order_by(submissions.c.id)
        )
        with self.store.read() as conn:
            return [Submission(**row) for row in conn.execute(query).mappings()]
