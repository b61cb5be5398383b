"""Rejudge runs: results under a new ruleset live beside the current ones until `apply` switches
the contest in one transaction, which records what the run changed (its summary) as it stood.
History is never overwritten: results are keyed by ruleset. An upload a run cannot judge is
recorded as the run's failure, with its reason, and counted as done.

`SqlRejudgeRuns` is made of its parts by concern: starting and producing runs
(`infra.sql.rejudge_runs`), their results and failures (`infra.sql.rejudge_batches`), previews
and summaries (`infra.sql.rejudge_summaries`); applying and cancelling a run live here.
"""

from __future__ import annotations

import threading
from typing import Any

from sqlalchemy import Connection, and_, insert, select, update

from core import clock
from core.errors import NotFound, RejudgeRefused
from core.events import Event, RejudgeCancelled
from core.records import Contest, Run, RunSummary
from core.states import OPEN_REJUDGE_STATES, RejudgeState, SubmissionState
from core.store_rules import applying, check_applicable, kept_public, unjudged_failed
from infra.sql.base import Transactions
from infra.sql.columns import columns_of, fields_of
from infra.sql.rejudge_batches import BatchesMixin
from infra.sql.rejudge_runs import RunsMixin
from infra.sql.rejudge_summaries import SummariesMixin, as_json, game_rows
from infra.sql.results import failed_for
from infra.sql.schema import (
    contests,
    rejudge_failures,
    rejudge_runs,
    rejudge_summaries,
    submissions,
)

__all__ = ["SqlRejudgeRuns"]


class SqlRejudgeRuns(RunsMixin, BatchesMixin, SummariesMixin):
    """Rejudge runs in SQL (the `core.ports.RejudgeRuns` port), in the transactions of the
    results store's `Database` (`infra.sql.base`)."""

    def __init__(self, store: Transactions) -> None:
        self.store = store
        self._summaries: dict[str, tuple[tuple[Any, ...], RunSummary | None]] = {}
        self._summaries_lock = threading.Lock()

    def apply(self, run_id: str, by: str) -> Run:
        """Switch the contest's ruleset, and with it its results and leaderboard, atomically;
        the submissions the run could not judge become failed, with their reason.

        Serialised against intake's group commit, which adds the uploads it stores to an open
        run's total (and sets it running again): on PostgreSQL the run's row is read FOR
        UPDATE, so a group commit that bumped it first makes this wait for its commit and then
        refuse (the run is running again), and one that comes second waits for this commit and
        finds the run closed (its uploads are judged under the new ruleset). The run moves to
        applied only on the condition it was read in (ready, every submission done), so no
        database without row locks can apply a run an upload moved either."""
        with self.store.write() as (conn, pending):
            contest_id = conn.execute(
                select(rejudge_runs.c.contest_id).where(rejudge_runs.c.id == run_id)
            ).scalar()
            if contest_id is None:
                raise NotFound(f"no rejudge run {run_id!r}")
            # The contest's row before the run's, in the order intake's group commit takes them
            # (the contest FOR SHARE, then the open runs): one lock order, so the two never
            # deadlock; a group commit holding the contest makes this wait for its commit.
            contest = Contest(
                **fields_of(
                    conn.execute(
                        select(contests).where(contests.c.id == contest_id).with_for_update()
                    )
                    .mappings()
                    .one()
                )
            )
            row = (
                conn.execute(
                    select(rejudge_runs).where(rejudge_runs.c.id == run_id).with_for_update()
                )
                .mappings()
                .first()
            )
            if row is None:
                raise NotFound(f"no rejudge run {run_id!r}")
            run = Run(**fields_of(row))
            check_applicable(run)
            now = clock.now()
            moved = conn.execute(
                update(rejudge_runs)
                .where(
                    and_(
                        rejudge_runs.c.id == run_id,
                        rejudge_runs.c.state == RejudgeState.READY,
                        rejudge_runs.c.total == run.total,
                        rejudge_runs.c.done >= rejudge_runs.c.total,
                    )
                )
                .values(state=RejudgeState.APPLIED, updated_at=now)
            ).rowcount
            if not moved:
                raise RejudgeRefused(
                    f"run {run_id} took a new upload while it was being applied; "
                    "apply it again once it is ready"
                )
            switched = conn.execute(
                update(contests)
                .where(
                    and_(
                        contests.c.id == run.contest_id,
                        contests.c.lexicon_id == run.from_lexicon_id,
                        contests.c.layout_id == run.from_rules_id,
                    )
                )
                .values(
                    lexicon_id=run.lexicon_id,
                    layout_id=run.rules_id,
                    **columns_of(kept_public(contest, run, now)),
                )
            ).rowcount
            if not switched:
                raise RejudgeRefused(
                    "the contest's ruleset changed since this run started; start a new run"
                )
            _fail_unjudged(conn, pending, run, now)
            _record_summary(conn, run, now)
            # Other open runs were measured against the old ruleset: their previews are void.
            superseded = list(
                conn.execute(
                    select(rejudge_runs.c.id).where(
                        and_(
                            rejudge_runs.c.contest_id == run.contest_id,
                            rejudge_runs.c.state.in_(OPEN_REJUDGE_STATES),
                        )
                    )
                ).scalars()
            )
            for other in superseded:
                conn.execute(
                    update(rejudge_runs)
                    .where(rejudge_runs.c.id == other)
                    .values(state=RejudgeState.CANCELLED, updated_at=now)
                )
            pending.extend(applying(run, by, superseded))
            return Run(**{**run.__dict__, "state": RejudgeState.APPLIED, "updated_at": now})

    def cancel(self, run_id: str, by: str) -> Run:
        with self.store.write() as (conn, pending):
            row = (
                conn.execute(select(rejudge_runs).where(rejudge_runs.c.id == run_id))
                .mappings()
                .first()
            )
            if row is None:
                raise NotFound(f"no rejudge run {run_id!r}")
            if row["state"] not in OPEN_REJUDGE_STATES:
                raise RejudgeRefused(
                    f"run {run_id} is {row['state']}; only an open run can be cancelled"
                )
            now = clock.now()
            conn.execute(
                update(rejudge_runs)
                .where(rejudge_runs.c.id == run_id)
                .values(state=RejudgeState.CANCELLED, updated_at=now)
            )
            pending.append(RejudgeCancelled(rejudge=run_id, contest=row["contest_id"], by=by))
            return Run(**{**fields_of(row), "state": RejudgeState.CANCELLED, "updated_at": now})


def _fail_unjudged(conn: Connection, pending: list[Event], run: Run, now: str) -> None:
    """In `apply`'s transaction: each submission the run could not judge keeps no result under
    the ruleset going live, so it becomes failed with its reason (its team sees the code and
    a sentence), never `judged` without a result."""
    failed = conn.execute(
        select(
            submissions.c.id,
            submissions.c.contest_id,
            submissions.c.team_id,
            rejudge_failures.c.reason,
        )
        .select_from(
            rejudge_failures.join(submissions, submissions.c.id == rejudge_failures.c.submission_id)
        )
        .where(failed_for(run))
    ).all()
    for sid, contest_id, team_id, reason in failed:
        event = unjudged_failed(run, sid, contest_id, team_id, reason)
        conn.execute(
            update(submissions)
            .where(submissions.c.id == sid)
            .values(state=SubmissionState.FAILED, state_at=now, failure=event.reason)
        )
        pending.append(event)


def _record_summary(conn: Connection, run: Run, now: str) -> None:
    """The run's preview as it stands, kept as its summary, in `apply`'s transaction."""
    rows = game_rows(conn, run)
    changed, moved = rows.changes(conn, run), rows.rank_changes(conn, run)
    conn.execute(
        insert(rejudge_summaries).values(
            run_id=run.id,
            frozen_at=now,
            scores=len(changed),
            ranks=len(moved),
            changed=as_json(changed),
            rank_changes=as_json(moved),
        )
    )
