"""Rejudge runs as they start and are produced: a run opened beside the contest's live ruleset,
read back, paged from its cursor by the producer, and found stalled by the sweeper."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

from sqlalchemy import and_, func, insert, select, update

from core import clock
from core.errors import RejudgeRefused
from core.events import RejudgeStarted
from core.records import Paged, Run
from core.states import OPEN_REJUDGE_STATES, RejudgeState
from infra.sql.base import Transactions
from infra.sql.columns import fields_of
from infra.sql.results import count_progress
from infra.sql.schema import contests, rejudge_runs, submissions, word_hashes


class RunsMixin:
    """Starting, reading and producing runs (`infra.sql.rejudges.SqlRejudgeRuns` is made of it)."""

    store: Transactions

    def start(
        self, contest_id: str, lexicon_id: str, rules_id: str, mode: str, by: str
    ) -> tuple[Run, bool]:
        """A new run, or the open one for the same ruleset (asking twice does not judge twice)."""
        with self.store.write() as (conn, pending):
            contest = (
                conn.execute(select(contests).where(contests.c.id == contest_id)).mappings().first()
            )
            if contest is None:
                raise RejudgeRefused(f"no contest {contest_id!r}")
            if (contest["lexicon_id"], contest["layout_id"]) == (lexicon_id, rules_id):
                raise RejudgeRefused("the contest is judged with that lexicon and layout already")
            existing = (
                conn.execute(
                    select(rejudge_runs).where(
                        and_(
                            rejudge_runs.c.contest_id == contest_id,
                            rejudge_runs.c.lexicon_id == lexicon_id,
                            rejudge_runs.c.layout_id == rules_id,
                            rejudge_runs.c.state.in_(OPEN_REJUDGE_STATES),
                        )
                    )
                )
                .mappings()
                .first()
            )
            if existing is not None:
                return Run(**fields_of(existing)), False
            total = conn.execute(
                select(func.count())
                .select_from(submissions)
                .where(submissions.c.contest_id == contest_id)
            ).scalar_one()
            now = clock.now()
            row = {
                "id": uuid.uuid4().hex,
                "contest_id": contest_id,
                "lexicon_id": lexicon_id,
                "layout_id": rules_id,
                "from_lexicon_id": contest["lexicon_id"],
                "from_layout_id": contest["layout_id"],
                "mode": mode,
                "state": RejudgeState.RUNNING if total else RejudgeState.READY,
                "total": total,
                "done": 0,
                "carried": 0,
                "cursor": "",
                "created_by": by,
                "created_at": now,
                "updated_at": now,
                "finished_at": None if total else now,
            }
            conn.execute(insert(rejudge_runs).values(**row))
            pending.append(
                RejudgeStarted(
                    rejudge=row["id"],
                    contest=contest_id,
                    lexicon=lexicon_id,
                    layout=rules_id,
                    mode=mode,
                    from_lexicon=contest["lexicon_id"],
                    from_layout=contest["layout_id"],
                    total=total,
                    by=by,
                )
            )
            count_progress(conn, pending, row["id"])  # results of an earlier, cancelled run count
            fresh = conn.execute(select(rejudge_runs).where(rejudge_runs.c.id == row["id"]))
            return Run(**fields_of(fresh.mappings().one())), True

    def get(self, run_id: str) -> Run | None:
        with self.store.read() as conn:
            row = (
                conn.execute(select(rejudge_runs).where(rejudge_runs.c.id == run_id))
                .mappings()
                .first()
            )
            return Run(**fields_of(row)) if row is not None else None

    def open_runs(self, contest_id: str | None = None) -> list[Run]:
        query = select(rejudge_runs).where(rejudge_runs.c.state.in_(OPEN_REJUDGE_STATES))
        if contest_id is not None:
            query = query.where(rejudge_runs.c.contest_id == contest_id)
        with self.store.read() as conn:
            return [
                Run(**fields_of(row))
                for row in conn.execute(query.order_by(rejudge_runs.c.created_at)).mappings()
            ]

    def list_runs(self, contest_id: str) -> list[Run]:
        with self.store.read() as conn:
            rows = conn.execute(
                select(rejudge_runs)
                .where(rejudge_runs.c.contest_id == contest_id)
                .order_by(rejudge_runs.c.created_at)
            ).mappings()
            return [Run(**fields_of(row)) for row in rows]

    def page(self, run: Run, limit: int) -> Iterator[Paged]:
        """The run's next submissions after its cursor, each with the signature of its words
        (None if never judged), its upload's size and the host holding it, streamed as read."""
        query = (
            select(
                submissions.c.id, word_hashes.c.hashes, submissions.c.size, submissions.c.held_on
            )
            .outerjoin(word_hashes, word_hashes.c.submission_id == submissions.c.id)
            .where(and_(submissions.c.contest_id == run.contest_id, submissions.c.id > run.cursor))
            .order_by(submissions.c.id)
            .limit(limit)
        )
        with self.store.read() as conn:
            for row in conn.execute(query):
                yield Paged(row.id, row.hashes, row.size, row.held_on)

    def advance(self, run_id: str, cursor: str) -> bool:
        """Record that everything up to `cursor` was published; False if the run was closed."""
        with self.store.write() as (conn, _):
            return bool(
                conn.execute(
                    update(rejudge_runs)
                    .where(
                        and_(
                            rejudge_runs.c.id == run_id,
                            rejudge_runs.c.state.in_(OPEN_REJUDGE_STATES),
                        )
                    )
                    .values(cursor=cursor, updated_at=clock.now())
                ).rowcount
            )

    def restart_producer(self, run_id: str) -> None:
        """Page again from the start (after lost messages); results already in count once."""
        with self.store.write() as (conn, _):
            conn.execute(
                update(rejudge_runs)
                .where(rejudge_runs.c.id == run_id)
                .values(cursor="", updated_at=clock.now())
            )

    def stalled(self, older_than: float) -> list[Run]:
        """Running runs with no progress for a while: messages lost (a Redis restart, say)."""
        cutoff = clock.ago(clock.now(), older_than)
        with self.store.read() as conn:
            rows = conn.execute(
                select(rejudge_runs).where(
                    and_(
                        rejudge_runs.c.state == RejudgeState.RUNNING,
                        rejudge_runs.c.updated_at < cutoff,
                    )
                )
            ).mappings()
            return [Run(**fields_of(row)) for row in rows]
