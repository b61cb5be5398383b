"""The results store's submissions and their lifecycle: stored -> queued -> judging -> judged
(or back to queued for a retry, or failed), each move with its event. Here: reading them,
storing uploads and queueing them; `infra.sql.claims` holds judging's moves (claim, record,
release)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace

from sqlalchemy import Connection, and_, bindparam, select, update

from core import clock
from core.errors import CoreError, Duplicate
from core.events import (
    Event,
    EventType,
    SubmissionQueued,
    SubmissionRequeued,
    SubmissionStored,
    about,
)
from core.intake import closed, no_log_right
from core.records import Submission
from core.states import OPEN_REJUDGE_STATES, RejudgeState, SubmissionState
from infra.sql.base import RowsAmong, insert_all, unindexed
from infra.sql.claims import ClaimsMixin
from infra.sql.copies import keep_copies
from infra.sql.schema import contests, rejudge_runs, submission_copies, submissions, teams

# The statements of intake's transaction, built once: each call binds its values.
_c = submissions.c
_SAME_BYTES_ROWS = RowsAmong("same_bytes", (_c.contest_id, _c.team_id, _c.sha256))
_SAME_BYTES = select(_c.contest_id, _c.team_id, _c.sha256, _c.id).where(_SAME_BYTES_ROWS.clause)
_SAME_GAME_ROWS = RowsAmong("same_game", (_c.contest_id, _c.game_key))
_SAME_GAME = select(_c.contest_id, _c.game_key, _c.id, _c.team_id).where(_SAME_GAME_ROWS.clause)
_CLOSING = (
    select(contests.c.id, contests.c.closes_at)
    .where(contests.c.id.in_(bindparam("ids", expanding=True)))
    .with_for_update(read=True)
)
_COVER_IN_OPEN_RUNS = (
    update(rejudge_runs)
    .where(
        and_(
            rejudge_runs.c.contest_id == bindparam("contest"),
            rejudge_runs.c.state.in_(OPEN_REJUDGE_STATES),
        )
    )
    .values(
        total=rejudge_runs.c.total + bindparam("count"),
        state=RejudgeState.RUNNING,
        finished_at=None,
    )
)
# stored -> queued, of the ids given that are still stored.
_STILL_STORED = and_(
    _c.id.in_(bindparam("ids", expanding=True)), unindexed(_c.state) == SubmissionState.STORED
)
_MARK_QUEUED = (
    update(submissions)
    .where(_STILL_STORED)
    .values(state=SubmissionState.QUEUED, state_at=bindparam("stamp"))
)
_MARK_QUEUED_RETURNING = _MARK_QUEUED.returning(_c.id, _c.contest_id, _c.team_id)


class SubmissionsMixin(ClaimsMixin):
    # -- submissions ------------------------------------------------------------------------

    def find_same(
        self, contest_id: str, team_id: str, sha256: str, game_key: str | None = None
    ) -> Submission | None:
        """The submission an upload is already: the team's own upload of these bytes, or the
        shared submission (a game whoever sent it) with this game key. Each lookup along a
        unique index."""
        wheres = [
            and_(
                submissions.c.contest_id == contest_id,
                submissions.c.team_id == team_id,
                submissions.c.sha256 == sha256,
            )
        ]
        if game_key is not None:
            wheres.append(
                and_(submissions.c.contest_id == contest_id, submissions.c.game_key == game_key)
            )
        with self.read() as conn:
            for where in wheres:
                row = conn.execute(select(submissions).where(where)).mappings().first()
                if row is not None:
                    return Submission(**row)
        return None

    def copy_of(self, submission_id: str, team_id: str) -> str | None:
        """The blob key of the team's own copy of a shared submission it did not send first."""
        with self.read() as conn:
            return conn.execute(
                select(submission_copies.c.blob_key).where(
                    and_(
                        submission_copies.c.submission_id == submission_id,
                        submission_copies.c.team_id == team_id,
                    )
                )
            ).scalar_one_or_none()

    def get_submission(self, submission_id: str) -> Submission | None:
        with self.read() as conn:
            row = (
                conn.execute(select(submissions).where(submissions.c.id == submission_id))
                .mappings()
                .first()
            )
            return Submission(**row) if row is not None else None

    def store_submission(self, submission: Submission) -> Submission:
        """Record an upload whose bytes are already in blob storage (state `stored`)."""
        row = self.store_submissions([submission])[0]
        if isinstance(row, CoreError):
            raise row
        if row is None:
            raise Duplicate("the same bytes were uploaded already")
        return submission

    def store_submissions(
        self, batch: Sequence[Submission], queued: Sequence[Submission] = ()
    ) -> list[Submission | CoreError | None]:
        """Record uploads whose bytes are in blob storage, all in one transaction (one commit,
        one fsync, for a burst of them: intake's group commit), and mark the `queued` ones
        published since stored -> queued in it too. Each upload comes back as stored, None
        where its team sent the same bytes already (earlier, or earlier in this batch; for a
        game log, any team did: that team's copy is kept if it sent none before), or the error
        refusing it: Closed where its contest closed before it was received, NotAllowed where
        its team may no longer upload game logs. Another game of the contest with the same seed
        and players (`Submission.match_key`) is no refusal: both are kept and judged, and the
        standings count the one valid log, or hold rival valid ones as disputed
        (`core.disputes`).
        A concurrent writer of the same bytes makes it raise Duplicate, and nothing is written."""
        answers: dict[int, Submission | CoreError] = {}
        try:
            with self.write() as (conn, pending):
                if batch:
                    answers = self._insert_fresh(conn, pending, batch)
                if queued:
                    self._mark_known_queued(conn, pending, queued)
        except Duplicate as exc:
            raise Duplicate("the same bytes were uploaded already") from exc
        # Each stored upload's leaf in its contest's transparency log, for its receipt.
        leaves = {
            e["submission"]: e["leaf"]
            for e in pending.written
            if e["type"] is EventType.SUBMISSION_STORED and "leaf" in e
        }
        return [_with_leaf(answers.get(id(s)), leaves) for s in batch]

    def _insert_fresh(
        self, conn: Connection, pending: list[Event], batch: Sequence[Submission]
    ) -> dict[int, Submission | CoreError]:
        """Insert the uploads of `batch` that are new, whose contest was open when they were
        received and whose team may upload them; by id() of each upload, what became of it
        (absent: it is a submission already; a shared one's copy is kept, with its team)."""
        keys = [_same_key(s) for s in batch]
        seen = _stored_keys(conn, batch)
        closes = _closing_times(conn, {s.contest_id for s in batch})
        refused = _without_log_right(conn, batch)
        answers: dict[int, Submission | CoreError] = {}
        fresh: list[Submission] = []
        copies: list[tuple[str, Submission]] = []
        for key, submission in zip(keys, batch):
            if submission.shared and submission.team_id in refused:
                answers[id(submission)] = no_log_right(submission.team_id, submission.contest_id)
                continue
            if key in seen:  # a retry, or the same game: its submission back, even late
                if submission.shared and seen[key][1] != submission.team_id:
                    copies.append((seen[key][0], submission))
                continue
            closes_at = closes.get(submission.contest_id)
            if closes_at is not None and submission.received_at > closes_at:
                answers[id(submission)] = closed(
                    submission.contest_id, closes_at, submission.received_at
                )
                continue
            seen[key] = (submission.id, submission.team_id)
            fresh.append(submission)
            answers[id(submission)] = submission
        if not fresh:
            keep_copies(conn, pending, copies)
            return answers
        rows = [{k: v for k, v in s.__dict__.items() if k != "log_leaf"} for s in fresh]
        insert_all(conn, submissions, rows)
        # An open rejudge run covers uploads that arrive while it runs, too. Only a run still
        # open: on PostgreSQL this waits for an `apply` holding the run's row (FOR UPDATE) and
        # then, under read committed, checks the state again, so an applied run is left alone;
        # an apply that comes second finds the run running again and refuses.
        by_contest = Counter(s.contest_id for s in fresh)
        for contest_id, count in by_contest.items():
            conn.execute(_COVER_IN_OPEN_RUNS, {"contest": contest_id, "count": count})
        pending.extend(
            SubmissionStored(**about(s), sha256=s.sha256, size=s.size, received_at=s.received_at)
            for s in fresh
        )
        keep_copies(conn, pending, copies)  # after the rows they may refer to
        return answers

    def mark_queued(self, submission_id: str) -> bool:
        """stored -> queued once its message is published; False if it moved on meanwhile."""
        return bool(self.mark_queued_many([submission_id]))

    def mark_queued_many(self, submission_ids: Sequence[str]) -> list[str]:
        """Several published submissions stored -> queued in one transaction (one commit, one
        fsync, however many a burst of uploads published); returns those that were marked."""
        ids = list(submission_ids)
        with self.write() as (conn, pending):
            rows: list[tuple[str, str, str]]
            if self.engine.dialect.update_returning:  # one statement (SQLite 3.35+, PostgreSQL)
                marking = {"ids": ids, "stamp": clock.now()}
                rows = [(r[0], r[1], r[2]) for r in conn.execute(_MARK_QUEUED_RETURNING, marking)]
            else:
                rows = self._mark_queued_one_by_one(conn, ids)
            order = {sid: n for n, sid in enumerate(submission_ids)}
            marked = sorted(rows, key=lambda row: order[row[0]])
            pending.extend(
                SubmissionQueued(submission=sid, contest=c, team=t) for sid, c, t in marked
            )
            return [row[0] for row in marked]

    def _mark_known_queued(
        self, conn: Connection, pending: list[Event], published: Sequence[Submission]
    ) -> None:
        """`mark_queued_many` within a transaction under way, for submissions whose contest and
        team are known: when all of them are still `stored` (the rule in a burst) the UPDATE
        returns no rows, so SQLite's driver steps once, not once a row (`insert_rows` says why
        that counts)."""
        published = list({s.id: s for s in published}.values())  # each once, as asked first
        ids = [s.id for s in published]
        stamp = clock.now()
        changed = conn.execute(_MARK_QUEUED, {"ids": ids, "stamp": stamp}).rowcount
        if changed == len(ids):
            marked = list(published)
        else:  # a worker claimed some first: the ones this UPDATE moved carry its stamp
            moved = set(
                conn.execute(
                    select(submissions.c.id).where(
                        and_(
                            submissions.c.id.in_(ids),
                            submissions.c.state == SubmissionState.QUEUED,
                            submissions.c.state_at == stamp,
                        )
                    )
                ).scalars()
            )
            marked = [s for s in published if s.id in moved]
        pending.extend(SubmissionQueued(**about(s)) for s in marked)

    @staticmethod
    def _mark_queued_one_by_one(conn: Connection, ids: list[str]) -> list[tuple[str, str, str]]:
        found = conn.execute(
            select(_c.id, _c.contest_id, _c.team_id).where(_STILL_STORED), {"ids": ids}
        ).all()
        marked = []
        for sid, contest_id, team_id in found:
            changed = conn.execute(
                update(submissions)
                .where(and_(submissions.c.id == sid, submissions.c.state == SubmissionState.STORED))
                .values(state=SubmissionState.QUEUED, state_at=clock.now())
            ).rowcount
            if changed:
                marked.append((sid, contest_id, team_id))
        return marked

    def requeue(self, seen: Submission) -> bool:
        """The sweeper's move: back to queued, only if nothing touched it since it was `seen`."""
        with self.write() as (conn, pending):
            changed = conn.execute(
                update(submissions)
                .where(
                    and_(
                        submissions.c.id == seen.id,
                        submissions.c.state == seen.state,
                        submissions.c.state_at == seen.state_at,
                    )
                )
                .values(state=SubmissionState.QUEUED, state_at=clock.now())
            ).rowcount
            if changed:
                if seen.state == SubmissionState.STORED:
                    pending.append(SubmissionQueued(**about(seen), was=seen.state))
                else:
                    pending.append(SubmissionRequeued(**about(seen), was=seen.state))
            return bool(changed)


def _with_leaf(
    answer: Submission | CoreError | None, leaves: Mapping[str, int]
) -> Submission | CoreError | None:
    if isinstance(answer, Submission) and answer.id in leaves:
        return replace(answer, log_leaf=leaves[answer.id])
    return answer


def _same_key(submission: Submission) -> tuple[str, str, str]:
    """Uploads with the same key are one submission: a team's own bytes, or a shared game
    whoever sent it (no team in the key: its game key)."""
    if submission.game_key is not None:
        return submission.contest_id, "", submission.game_key
    return submission.contest_id, submission.team_id, submission.sha256


def _stored_keys(
    conn: Connection, batch: Sequence[Submission]
) -> dict[tuple[str, str, str], tuple[str, str]]:
    """The keys (`_same_key`) of the batch that stored submissions hold already, each with
    that submission's id and team."""
    own = [(s.contest_id, s.team_id, s.sha256) for s in batch if s.game_key is None]
    shared = [(s.contest_id, s.game_key) for s in batch if s.game_key is not None]
    seen: dict[tuple[str, str, str], tuple[str, str]] = {}
    if own:
        found = conn.execute(_SAME_BYTES, _SAME_BYTES_ROWS.values(own))
        for r in _SAME_BYTES_ROWS.among(found, own):
            seen[(r[0], r[1], r[2])] = (r[3], r[1])
    if shared:
        found = conn.execute(_SAME_GAME, _SAME_GAME_ROWS.values(shared))
        for r in _SAME_GAME_ROWS.among(found, shared):
            seen[(r[0], "", r[1])] = (r[2], r[3])
    return seen


def _without_log_right(conn: Connection, batch: Sequence[Submission]) -> set[str]:
    """The teams among the batch's game-log uploaders that may not upload game logs, read in
    the writing transaction: a right the organiser takes back holds from the next commit in
    every API process, whatever a process remembers of the team. Share-locked on PostgreSQL,
    as the contests' closing times are, so a concurrent change waits for this group."""
    uploaders = {s.team_id for s in batch if s.shared}
    if not uploaders:
        return set()
    query = select(teams.c.id).where(and_(teams.c.id.in_(uploaders), teams.c.uploads_logs))
    allowed = set(conn.execute(query.with_for_update(read=True)).scalars())
    return uploaders - allowed


def _closing_times(conn: Connection, contest_ids: set[str]) -> dict[str, str]:
    """When each contest closes, read in the writing transaction: one query a group, however
    many uploads it holds. On PostgreSQL the rows are share-locked, so a concurrent close
    (which locks its row first) either waits for this group's commit or is seen by it."""
    return {row[0]: row[1] for row in conn.execute(_CLOSING, {"ids": sorted(contest_ids)})}
