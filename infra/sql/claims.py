"""A submission's judging in the results store: claimed (-> judging: a free one, or one whose
claim was abandoned), then its result recorded (-> judged) or its claim released (back to queued
for a retry, or failed), each move only by the attempt holding the claim, and with its event.
`infra.sql.submissions` holds the moves before: storing and queueing."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, and_, or_, select, update
from sqlalchemy.sql.elements import ColumnElement

from core import clock
from core.events import SubmissionFailed, SubmissionRetrying, about
from core.records import Claim, JudgedResult, Submission
from core.states import SubmissionState
from core.store_rules import claimable, claimed, submission_judged
from infra.sql.base import StoreBase, unindexed
from infra.sql.results import keep_words, put_results
from infra.sql.schema import submissions


class ClaimsMixin(StoreBase):
    # -- judging ----------------------------------------------------------------------------

    def claim_many(self, submission_ids: Sequence[str], stale_after: float) -> list[Claim]:
        """Take submissions for judging, all in one transaction; the ones taken, in the order
        asked (not those judged, failed or being judged now)."""
        now = clock.now()
        stale = clock.ago(now, stale_after)
        with self.write() as (conn, pending):
            rows = {
                row["id"]: Submission(**row)
                for row in conn.execute(
                    select(submissions).where(submissions.c.id.in_(submission_ids))
                ).mappings()
            }
            # Conditional on what was read: under PostgreSQL's read committed, two workers can
            # read the same free row; only the first update matches (its attempts moved on). A
            # free row may have gone from stored to queued since (intake marks it once
            # published): still free, so either matches.
            candidates = []
            for submission_id in dict.fromkeys(submission_ids):
                current = rows.get(submission_id)
                if current is not None and claimable(current, stale):
                    candidates.append(current)
            taken = _take(conn, candidates, now)
            claims = []
            for current in candidates:
                if current.id in taken:
                    claim, event = claimed(current)
                    pending.append(event)
                    claims.append(claim)
            return claims

    def record_results(
        self, judged: Sequence[tuple[Claim, JudgedResult, bytes]], held_on: str | None = None
    ) -> set[str]:
        """judging -> judged with their results, all in one transaction of a few statements
        whatever the group's size; the ids recorded (a claim the sweeper handed on meanwhile
        writes nothing). `held_on`: those ones' bytes are on that host now."""
        now = clock.now()
        with self.write() as (conn, pending):
            held = _judged_now(conn, [claim for claim, _, _ in judged], now, held_on)
            mine = [item for item in judged if (item[0].submission.id, item[0].attempt) in held]
            put_results(conn, [(claim.submission.id, result) for claim, result, _ in mine], now)
            keep_words(conn, {claim.submission.id: words for claim, _, words in mine})
            pending.extend(submission_judged(claim.submission, result) for claim, result, _ in mine)
            return {sid for sid, _ in held}

    def release(self, claim: Claim, error: str, give_up: bool) -> None:
        """A judging attempt failed: back to queued for a retry, or failed for good."""
        now = clock.now()
        sub = claim.submission
        state = SubmissionState.FAILED if give_up else SubmissionState.QUEUED
        with self.write() as (conn, pending):
            changed = conn.execute(
                update(submissions)
                .where(_still_held(claim))
                .values(state=state, state_at=now, failure=error[:2000])
            ).rowcount
            if changed:
                ids, attempt, reason = about(sub), claim.attempt, error[:500]
                pending.append(
                    SubmissionFailed(**ids, attempt=attempt, reason=reason)
                    if give_up
                    else SubmissionRetrying(**ids, attempt=attempt, reason=reason)
                )


def _take(conn: Connection, candidates: list[Submission], now: str) -> set[str]:
    """Claim for judging the submissions read free or abandoned, each only if it is still as
    read: free, or judging (abandoned), with the attempts read (every claim raises them). The
    ids claimed; one statement where the database returns what an UPDATE changed."""
    kinds = [
        (list(_FREE), [sub for sub in candidates if sub.state in _FREE]),
        ([SubmissionState.JUDGING], [sub for sub in candidates if sub.state not in _FREE]),
    ]
    read = [(states, subs) for states, subs in kinds if subs]
    if not read:
        return set()
    taking = update(submissions).values(
        state=SubmissionState.JUDGING, state_at=now, attempts=submissions.c.attempts + 1
    )
    if not conn.dialect.update_returning:  # SQLite before 3.35
        return {
            sub.id
            for states, subs in read
            for sub in subs
            if conn.execute(taking.where(_as_read(states, [sub]))).rowcount
        }
    as_read = or_(*(_as_read(states, subs) for states, subs in read))
    return {row.id for row in conn.execute(taking.where(as_read).returning(submissions.c.id))}


def _as_read(states: list[SubmissionState], subs: list[Submission]) -> ColumnElement[bool]:
    """The rows of `subs` still in one of `states` with the attempts they were read with."""
    return and_(
        unindexed(submissions.c.state).in_(states),
        _attempts_among([(s.id, s.attempts) for s in subs]),
    )


def _attempts_among(pairs: Sequence[tuple[str, int]]) -> ColumnElement[bool]:
    """The rows of these (id, attempts) pairs: the ids grouped by attempts, each group an IN
    list of ids beside its count. Bound values, where a row-value IN list would be rendered
    value by value into the SQL on every call (SQLite takes no row-value parameters); a
    message's uploads are claimed together, so there is one group as a rule."""
    by_attempts: dict[int, list[str]] = {}
    for submission_id, attempts in pairs:
        by_attempts.setdefault(attempts, []).append(submission_id)
    return or_(
        *(
            and_(submissions.c.id.in_(ids), submissions.c.attempts == attempts)
            for attempts, ids in sorted(by_attempts.items())
        )
    )


def _judged_now(
    conn: Connection, claims: Sequence[Claim], now: str, held_on: str | None
) -> set[tuple[str, int]]:
    """Mark judged the submissions whose claims still hold (held on `held_on`, if given), in
    one statement where the database returns what an UPDATE changed; the claims that held,
    as (id, attempt)."""
    if not claims:
        return set()  # (an empty OR is no condition at all)
    done: dict[str, object] = {
        "state": SubmissionState.JUDGED,
        "state_at": now,
        "judged_at": now,
        "failure": None,
    }
    if held_on is not None:
        done["held_on"] = held_on
    if not conn.dialect.update_returning:  # SQLite before 3.35
        return {
            (claim.submission.id, claim.attempt)
            for claim in claims
            if conn.execute(update(submissions).where(_still_held(claim)).values(**done)).rowcount
        }
    held = conn.execute(
        update(submissions)
        .where(
            and_(
                unindexed(submissions.c.state) == SubmissionState.JUDGING,
                _attempts_among([(claim.submission.id, claim.attempt) for claim in claims]),
            )
        )
        .values(**done)
        .returning(submissions.c.id, submissions.c.attempts)
    )
    return {(row.id, row.attempts) for row in held}


def _still_held(claim: Claim) -> ColumnElement[bool]:
    """The claim's attempt still owns the submission (the sweeper has not handed it on)."""
    return and_(
        submissions.c.id == claim.submission.id,
        submissions.c.state == SubmissionState.JUDGING,
        submissions.c.attempts == claim.attempt,
    )


_FREE = (SubmissionState.STORED, SubmissionState.QUEUED)  # waiting for a worker
