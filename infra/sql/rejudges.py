"""Rejudge runs: results under a new ruleset live beside the current ones until `apply` switches
the contest in one transaction, which records what the run changed (its summary) as it stood.
History is never overwritten: results are keyed by ruleset. An upload a run cannot judge is
recorded as the run's failure, with its reason, and counted as done.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from sqlalchemy import Connection, and_, func, insert, literal, or_, select, update

from core import clock
from core.errors import NotFound, RejudgeRefused, as_reason, failure_text
from core.events import EventType
from core.freeze import frozen
from core.records import Contest, JudgedResult, Run, RunFailure, RunSummary, Submission
from core.states import OPEN_REJUDGE_STATES, RejudgeState, SubmissionState
from infra.sql.games import GameRows, copy_details, rows_of
from infra.sql.results import (
    count_progress,
    failed_for,
    keep_words,
    put_failures,
    put_new_results,
)
from infra.sql.schema import (
    contests,
    rejudge_failures,
    rejudge_runs,
    rejudge_summaries,
    results,
    submissions,
    teams,
    word_hashes,
)
from infra.sql.store import SqlStore

# Runs whose summary a process remembers; more open or recent at once is not expected.
SUMMARIES_KEPT = 64


class RejudgeStore:
    def __init__(self, store: SqlStore) -> None:
        self.store = store
        # Each run's summary with the key it was computed under (`_data_key`).
        self._summaries: dict[str, tuple[tuple[Any, ...], RunSummary | None]] = {}
        self._summaries_lock = threading.Lock()

    def start(
        self, contest_id: str, lexicon_id: str, layout_id: str, mode: str, by: str
    ) -> tuple[Run, bool]:
        """A new run, or the open one for the same ruleset (asking twice does not judge twice)."""
        with self.store.write() as (conn, pending):
            contest = (
                conn.execute(select(contests).where(contests.c.id == contest_id)).mappings().first()
            )
            if contest is None:
                raise RejudgeRefused(f"no contest {contest_id!r}")
            if (contest["lexicon_id"], contest["layout_id"]) == (lexicon_id, layout_id):
                raise RejudgeRefused("the contest is judged with that lexicon and layout already")
            existing = (
                conn.execute(
                    select(rejudge_runs).where(
                        and_(
                            rejudge_runs.c.contest_id == contest_id,
                            rejudge_runs.c.lexicon_id == lexicon_id,
                            rejudge_runs.c.layout_id == layout_id,
                            rejudge_runs.c.state.in_(OPEN_REJUDGE_STATES),
                        )
                    )
                )
                .mappings()
                .first()
            )
            if existing is not None:
                return Run(**existing), False
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
                "layout_id": layout_id,
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
                {
                    "type": EventType.REJUDGE_STARTED,
                    "rejudge": row["id"],
                    "contest": contest_id,
                    "lexicon": lexicon_id,
                    "layout": layout_id,
                    "mode": mode,
                    "from_lexicon": contest["lexicon_id"],
                    "from_layout": contest["layout_id"],
                    "total": total,
                    "by": by,
                }
            )
            count_progress(conn, pending, row["id"])  # results of an earlier, cancelled run count
            fresh = conn.execute(select(rejudge_runs).where(rejudge_runs.c.id == row["id"]))
            return Run(**fresh.mappings().one()), True

    def get(self, run_id: str) -> Run | None:
        with self.store.read() as conn:
            row = (
                conn.execute(select(rejudge_runs).where(rejudge_runs.c.id == run_id))
                .mappings()
                .first()
            )
            return Run(**row) if row is not None else None

    def open_runs(self, contest_id: str | None = None) -> list[Run]:
        query = select(rejudge_runs).where(rejudge_runs.c.state.in_(OPEN_REJUDGE_STATES))
        if contest_id is not None:
            query = query.where(rejudge_runs.c.contest_id == contest_id)
        with self.store.read() as conn:
            return [
                Run(**row)
                for row in conn.execute(query.order_by(rejudge_runs.c.created_at)).mappings()
            ]

    def list_runs(self, contest_id: str) -> list[Run]:
        with self.store.read() as conn:
            rows = conn.execute(
                select(rejudge_runs)
                .where(rejudge_runs.c.contest_id == contest_id)
                .order_by(rejudge_runs.c.created_at)
            ).mappings()
            return [Run(**row) for row in rows]

    def page(self, run: Run, limit: int) -> Iterator[tuple[str, bytes | None, int]]:
        """The run's next submission ids after its cursor, each with the signature of its words
        (None if never judged) and its upload's size, streamed as read."""
        query = (
            select(submissions.c.id, word_hashes.c.hashes, submissions.c.size)
            .outerjoin(word_hashes, word_hashes.c.submission_id == submissions.c.id)
            .where(and_(submissions.c.contest_id == run.contest_id, submissions.c.id > run.cursor))
            .order_by(submissions.c.id)
            .limit(limit)
        )
        with self.store.read() as conn:
            for row in conn.execute(query):
                yield row.id, row.hashes, row.size

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
                    results.c.layout_id == run.layout_id,
                )
            )
            .exists()
        )
        copied = select(
            source.c.submission_id,
            literal(run.lexicon_id),
            literal(run.layout_id),
            source.c.judge_version,
            source.c.score,
            source.c.legal,
            source.c.illegal,
            source.c.tiles,
            source.c.report_key,
            literal(clock.now()),
            literal(1),
        ).where(
            and_(
                source.c.submission_id.in_(submission_ids),
                source.c.lexicon_id == run.from_lexicon_id,
                source.c.layout_id == run.from_layout_id,
                ~already,
            )
        )
        columns = [
            "submission_id", "lexicon_id", "layout_id", "judge_version", "score", "legal",
            "illegal", "tiles", "report_key", "judged_at", "carried",
        ]  # fmt: skip
        with self.store.write() as (conn, pending):
            statement = insert(results).from_select(columns, copied).returning(results.c.id)
            ids = list(conn.execute(statement).scalars())  # (rowcount is -1 here on psycopg)
            copy_details(conn, ids, run.from_lexicon_id, run.from_layout_id)
            count_progress(conn, pending, run.id, added=len(ids), carried=len(ids))
            return len(ids)

    def record_batch(
        self,
        run: Run,
        batch: list[tuple[str, JudgedResult]],
        words: Mapping[str, bytes] | None = None,
        failed: Mapping[str, str] | None = None,
    ) -> int:
        """Results judged for a run, and the uploads it could not judge (`failed`: a reason
        code each), in one transaction with its progress; returns how many were new (a failure
        counts as done). A submission deleted meanwhile (its team was) gets neither. `words`:
        the word signature each judging made, added to the one recorded (see `keep_words`)."""
        now, words, failed = clock.now(), words or {}, failed or {}
        with self.store.write() as (conn, pending):
            ids = [sid for sid, _ in batch] + list(failed)
            present = set(conn.scalars(select(submissions.c.id).where(submissions.c.id.in_(ids))))
            batch = [(sid, result) for sid, result in batch if sid in present]
            new = put_new_results(conn, batch, now) if batch else 0
            keep_words(conn, {sid: words[sid] for sid, _ in batch if sid in words})
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
                results.c.layout_id == run.layout_id,
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
                **conn.execute(
                    select(contests).where(contests.c.id == contest_id).with_for_update()
                )
                .mappings()
                .one()
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
            run = Run(**row)
            if run.state is not RejudgeState.READY or run.done < run.total:
                raise RejudgeRefused(
                    f"run {run_id} is {run.state} ({run.done}/{run.total} done); apply needs ready"
                )
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
                        contests.c.layout_id == run.from_layout_id,
                    )
                )
                .values(
                    lexicon_id=run.lexicon_id,
                    layout_id=run.layout_id,
                    **_kept_public(contest, run, now),
                )
            ).rowcount
            if not switched:
                raise RejudgeRefused(
                    "the contest's ruleset changed since this run started; start a new run"
                )
            _fail_unjudged(conn, pending, run, now)
            _record_summary(conn, run, now)
            # Other open runs were measured against the old ruleset: their previews are void.
            for other in conn.execute(
                select(rejudge_runs.c.id).where(
                    and_(
                        rejudge_runs.c.contest_id == run.contest_id,
                        rejudge_runs.c.state.in_(OPEN_REJUDGE_STATES),
                    )
                )
            ).all():
                conn.execute(
                    update(rejudge_runs)
                    .where(rejudge_runs.c.id == other.id)
                    .values(state=RejudgeState.CANCELLED, updated_at=now)
                )
                pending.append(
                    {
                        "type": EventType.REJUDGE_CANCELLED,
                        "rejudge": other.id,
                        "contest": run.contest_id,
                        "by": by,
                        "reason": f"superseded by {run_id}",
                    }
                )
            pending.append(
                {
                    "type": EventType.REJUDGE_APPLIED,
                    "rejudge": run_id,
                    "contest": run.contest_id,
                    "lexicon": run.lexicon_id,
                    "layout": run.layout_id,
                    "from_lexicon": run.from_lexicon_id,
                    "from_layout": run.from_layout_id,
                    "by": by,
                }
            )
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
            pending.append(
                {
                    "type": EventType.REJUDGE_CANCELLED,
                    "rejudge": run_id,
                    "contest": row["contest_id"],
                    "by": by,
                }
            )
            return Run(**{**row, "state": RejudgeState.CANCELLED, "updated_at": now})

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
            return [Run(**row) for row in rows]

    def changes(self, run: Run) -> list[dict[str, Any]]:
        """What a preview lists as changed between the run's ruleset and the one it replaces,
        by the contest's game, over the data as it is now: the submissions whose score
        differs, or (game logs) the games whose verdict or winners do."""
        with self.store.read() as conn:
            return _game_rows(conn, run).changes(conn, run)

    def rank_changes(self, run: Run) -> list[dict[str, Any]]:
        """Who moves between the two rulesets, by the contest's game, over the data as it is
        now: the teams whose rank differs, or (game logs) the players whose standing does."""
        with self.store.read() as conn:
            return _game_rows(conn, run).rank_changes(conn, run)

    def summary(self, run: Run) -> RunSummary | None:
        """What the run changes: an applied run's summary as `apply` recorded it (None for a
        run applied before summaries were recorded); a ready or cancelled run's preview of the
        data as it is now; None while it runs.

        A preview is computed again only when the data it reads has changed (`_data_key`): a
        dashboard and a progress bar ask every second, and over a large contest the two
        leaderboards a preview compares cost several times the key's one indexed query."""
        if run.state is RejudgeState.RUNNING:
            return None
        if run.state is RejudgeState.APPLIED:
            key: tuple[Any, ...] = (run.state,)  # recorded once, never changed
        else:
            with self.store.read() as conn:
                key = _data_key(conn, run)
        with self._summaries_lock:
            known = self._summaries.get(run.id)
        if known is not None and known[0] == key:
            return known[1]
        if run.state is RejudgeState.APPLIED:
            found = self._recorded(run.id)
        else:
            # Read after the key: data changing in between costs one more computation, never
            # a stale preview kept under a newer key.
            found = RunSummary(tuple(self.changes(run)), tuple(self.rank_changes(run)))
        with self._summaries_lock:
            if len(self._summaries) >= SUMMARIES_KEPT:
                self._summaries.clear()
            self._summaries[run.id] = (key, found)
        return found

    def _recorded(self, run_id: str) -> RunSummary | None:
        with self.store.read() as conn:
            row = conn.execute(
                select(rejudge_summaries).where(rejudge_summaries.c.run_id == run_id)
            ).first()
        if row is None:
            return None
        return RunSummary(
            tuple(json.loads(row.changed)), tuple(json.loads(row.rank_changes)), row.frozen_at
        )


def _fail_unjudged(conn: Connection, pending: list[dict[str, Any]], run: Run, now: str) -> None:
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
        shown = failure_text(as_reason(reason))
        conn.execute(
            update(submissions)
            .where(submissions.c.id == sid)
            .values(state=SubmissionState.FAILED, state_at=now, failure=shown)
        )
        pending.append(
            {
                "type": EventType.SUBMISSION_FAILED,
                "submission": sid,
                "contest": contest_id,
                "team": team_id,
                "reason": shown,
                "rejudge": run.id,
            }
        )


def _kept_public(contest: Contest, run: Run, now: str) -> dict[str, str]:
    """A run applied while the contest's standings are frozen: the ruleset it replaces, which
    the public standings keep until the thaw (`core.freeze`), unless an earlier run applied
    during the freeze recorded one already."""
    if not frozen(contest, now) or contest.frozen_lexicon_id is not None:
        return {}
    return {"frozen_lexicon_id": run.from_lexicon_id, "frozen_layout_id": run.from_layout_id}


def _game_rows(conn: Connection, run: Run) -> GameRows:
    game = conn.execute(select(contests.c.game).where(contests.c.id == run.contest_id)).first()
    if game is None:
        raise NotFound(f"no contest {run.contest_id}")
    return rows_of(game.game)


def _record_summary(conn: Connection, run: Run, now: str) -> None:
    """The run's preview as it stands, kept as its summary, in `apply`'s transaction."""
    rows = _game_rows(conn, run)
    changed, moved = rows.changes(conn, run), rows.rank_changes(conn, run)
    conn.execute(
        insert(rejudge_summaries).values(
            run_id=run.id,
            frozen_at=now,
            scores=len(changed),
            ranks=len(moved),
            changed=_as_json(changed),
            rank_changes=_as_json(moved),
        )
    )


def _as_json(rows: list[dict[str, Any]]) -> str:
    return json.dumps(rows, separators=(",", ":"))  # ASCII: a NUL in a name stays escaped


def _data_key(conn: Connection, run: Run) -> tuple[Any, ...]:
    """What a run's summary depends on: the run's own row, and the contest's results under
    the two rulesets it compares (their number, newest id and newest judging: a result added,
    deleted or judged again in place moves one of them; a game's own rows and a submission's
    team move only with its result rows)."""
    rulesets = or_(
        and_(results.c.lexicon_id == run.lexicon_id, results.c.layout_id == run.layout_id),
        and_(
            results.c.lexicon_id == run.from_lexicon_id,
            results.c.layout_id == run.from_layout_id,
        ),
    )
    counted = conn.execute(
        select(func.count(), func.max(results.c.id), func.max(results.c.judged_at))
        .select_from(results.join(submissions, submissions.c.id == results.c.submission_id))
        .where(and_(submissions.c.contest_id == run.contest_id, rulesets))
    ).one()
    return (run.state, run.total, run.done, run.carried, run.updated_at, *counted)
