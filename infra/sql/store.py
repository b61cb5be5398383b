"""The results store: every state change and its event are written in one transaction.

Events get ids in commit order: on PostgreSQL each writing transaction takes one advisory lock
before it inserts an event (SQLite serialises writers anyway), so a reader paging with
`after=N` never skips an event that commits late with a smaller id.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import structlog
from sqlalchemy import Connection, and_, func, insert, or_, select, text, tuple_, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from infra import clock
from infra.events import EventType, SubmissionState
from infra.sql.engine import is_postgres, make_engine
from infra.sql.results import JudgedResult, put_result, recount_open_runs
from infra.sql.schema import (
    contests,
    events,
    layouts,
    lexicon_names,
    lexicons,
    rejudge_runs,
    results,
    submissions,
    teams,
    word_hashes,
)

__all__ = ["Contest", "Duplicate", "SqlStore", "Submission", "Team", "make_engine"]

log = structlog.get_logger("tilejudge.events")
_EVENT_LOCK = 7_306_351  # any constant; names the advisory lock that orders event ids


class Duplicate(Exception):
    """A row with that unique key exists already."""


@dataclass(frozen=True)
class Contest:
    id: str
    title: str
    opens_at: str
    closes_at: str
    lexicon_id: str
    layout_id: str
    created_at: str


@dataclass(frozen=True)
class Team:
    id: str
    contest_id: str
    name: str
    token_hash: str
    created_at: str


@dataclass(frozen=True)
class Submission:
    id: str
    contest_id: str
    team_id: str
    sha256: str
    size: int
    blob_key: str
    received_at: str
    receipt: str
    state: str
    state_at: str
    attempts: int
    judged_at: str | None
    failure: str | None


@dataclass(frozen=True)
class Claim:
    submission: Submission
    attempt: int


class SqlStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._postgres = is_postgres(engine)

    @classmethod
    def from_url(cls, url: str) -> SqlStore:
        return cls(make_engine(url))

    # -- plumbing ---------------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[tuple[Connection, list[dict[str, Any]]]]:
        """A write transaction; events appended to the list are inserted, then logged on commit."""
        pending: list[dict[str, Any]] = []
        with self.engine.begin() as conn:
            yield conn, pending
            if pending:
                if self._postgres:
                    conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _EVENT_LOCK})
                for event in pending:
                    event["id"] = conn.execute(
                        insert(events).values(**_event_row(event))
                    ).inserted_primary_key[0]  # type: ignore[index]
        for event in pending:
            log.info(event["type"], **{k: v for k, v in event.items() if k != "type"})

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        with self.engine.connect().execution_options(readonly=True) as conn:
            yield conn

    def ping(self) -> None:
        with self._read() as conn:
            conn.execute(select(1))

    # -- word lists and layouts -------------------------------------------------------------

    def add_lexicon(
        self,
        *,
        id: str,
        name: str,
        words: int,
        size: int,
        blob_key: str,
        source: str,
        created_by: str,
    ) -> dict[str, Any]:
        """Register a word list, or add a name to one registered already; returns its row with
        the name asked for."""
        now = clock.now()
        with self._write() as (conn, pending):
            existing = conn.execute(select(lexicons).where(lexicons.c.id == id)).mappings().first()
            row = (
                dict(existing)
                if existing is not None
                else {
                    "id": id,
                    "name": name,
                    "words": words,
                    "size": size,
                    "blob_key": blob_key,
                    "source": source,
                    "created_by": created_by,
                    "created_at": now,
                }
            )
            if existing is None:
                conn.execute(insert(lexicons).values(**row))
                pending.append(
                    {
                        "type": EventType.LEXICON_ADDED,
                        "lexicon": id,
                        "name": name,
                        "words": words,
                        "by": created_by,
                    }
                )
            labelled = conn.execute(
                select(lexicon_names.c.name).where(
                    and_(lexicon_names.c.name == name, lexicon_names.c.lexicon_id == id)
                )
            ).first()
            if labelled is None:
                conn.execute(insert(lexicon_names).values(name=name, lexicon_id=id, created_at=now))
                if existing is not None:
                    pending.append(
                        {
                            "type": EventType.LEXICON_NAMED,
                            "lexicon": id,
                            "name": name,
                            "by": created_by,
                        }
                    )
            return {**row, "name": name}

    def find_lexicon(self, id_or_name: str) -> dict[str, Any] | None:
        """By id, else by the newest list carrying that name."""
        with self._read() as conn:
            row = (
                conn.execute(select(lexicons).where(lexicons.c.id == id_or_name)).mappings().first()
            )
            if row is None:
                row = (
                    conn.execute(
                        select(lexicons)
                        .join(lexicon_names, lexicon_names.c.lexicon_id == lexicons.c.id)
                        .where(lexicon_names.c.name == id_or_name)
                        .order_by(lexicon_names.c.created_at.desc())
                        .limit(1)
                    )
                    .mappings()
                    .first()
                )
            return dict(row) if row is not None else None

    def all_lexicons(self) -> list[dict[str, Any]]:
        """Every registered list, oldest first, with all the names it carries."""
        with self._read() as conn:
            names: dict[str, list[str]] = {}
            for label in conn.execute(select(lexicon_names).order_by(lexicon_names.c.created_at)):
                names.setdefault(label.lexicon_id, []).append(label.name)
            rows = conn.execute(select(lexicons).order_by(lexicons.c.created_at)).mappings()
            return [{**r, "names": names.get(r["id"], [r["name"]])} for r in rows]

    def add_layout(self, *, id: str, name: str, content: str, created_by: str) -> dict[str, Any]:
        with self._write() as (conn, pending):
            existing = conn.execute(select(layouts).where(layouts.c.id == id)).mappings().first()
            if existing is not None:
                return dict(existing)
            row = {
                "id": id,
                "name": name,
                "content": content,
                "created_by": created_by,
                "created_at": clock.now(),
            }
            conn.execute(insert(layouts).values(**row))
            pending.append(
                {"type": EventType.LAYOUT_ADDED, "layout": id, "name": name, "by": created_by}
            )
            return row

    def all_layouts(self) -> list[dict[str, Any]]:
        with self._read() as conn:
            return [
                dict(r)
                for r in conn.execute(select(layouts).order_by(layouts.c.created_at)).mappings()
            ]

    def find_layout(self, id_or_name: str) -> dict[str, Any] | None:
        with self._read() as conn:
            row = (
                conn.execute(
                    select(layouts)
                    .where(or_(layouts.c.id == id_or_name, layouts.c.name == id_or_name))
                    .order_by(layouts.c.created_at.desc())
                    .limit(1)
                )
                .mappings()
                .first()
            )
            return dict(row) if row is not None else None

    # -- contests and teams -----------------------------------------------------------------

    def create_contest(self, contest: Contest) -> Contest:
        try:
            with self._write() as (conn, pending):
                conn.execute(insert(contests).values(**contest.__dict__))
                pending.append(
                    {
                        "type": EventType.CONTEST_CREATED,
                        "contest": contest.id,
                        "title": contest.title,
                        "opens_at": contest.opens_at,
                        "closes_at": contest.closes_at,
                        "lexicon": contest.lexicon_id,
                        "layout": contest.layout_id,
                    }
                )
        except IntegrityError as exc:
            raise Duplicate(f"contest {contest.id!r} exists already") from exc
        return contest

    def get_contest(self, contest_id: str) -> Contest | None:
        with self._read() as conn:
            row = (
                conn.execute(select(contests).where(contests.c.id == contest_id)).mappings().first()
            )
            return Contest(**row) if row is not None else None

    def list_contests(self) -> list[Contest]:
        with self._read() as conn:
            return [
                Contest(**r)
                for r in conn.execute(select(contests).order_by(contests.c.id)).mappings()
            ]

    def create_team(self, team: Team) -> Team:
        try:
            with self._write() as (conn, pending):
                conn.execute(insert(teams).values(**team.__dict__))
                pending.append(
                    {
                        "type": EventType.TEAM_CREATED,
                        "contest": team.contest_id,
                        "team": team.id,
                        "name": team.name,
                    }
                )
        except IntegrityError as exc:
            raise Duplicate(
                f"team {team.name!r} exists already in contest {team.contest_id!r}"
            ) from exc
        return team

    def team_by_token_hash(self, token_hash: str) -> Team | None:
        with self._read() as conn:
            row = (
                conn.execute(select(teams).where(teams.c.token_hash == token_hash))
                .mappings()
                .first()
            )
            return Team(**row) if row is not None else None

    def get_team(self, team_id: str) -> Team | None:
        with self._read() as conn:
            row = conn.execute(select(teams).where(teams.c.id == team_id)).mappings().first()
            return Team(**row) if row is not None else None

    def team_names(self, contest_id: str) -> dict[str, str]:
        with self._read() as conn:
            rows = conn.execute(
                select(teams.c.id, teams.c.name).where(teams.c.contest_id == contest_id)
            )
            return {r.id: r.name for r in rows}

    def delete_team(self, team_id: str, by: str) -> list[str]:
        """Delete a team, its submissions and results; return the blob keys to remove."""
        with self._write() as (conn, pending):
            team = conn.execute(select(teams).where(teams.c.id == team_id)).mappings().first()
            if team is None:
                return []
            own = select(submissions.c.id).where(submissions.c.team_id == team_id)
            keys = [
                r.blob_key
                for r in conn.execute(
                    select(submissions.c.blob_key).where(submissions.c.team_id == team_id)
                )
            ]
            keys += [
                r.report_key
                for r in conn.execute(
                    select(results.c.report_key).where(results.c.submission_id.in_(own))
                )
            ]
            count = len(conn.execute(own).all())
            conn.execute(results.delete().where(results.c.submission_id.in_(own)))
            conn.execute(word_hashes.delete().where(word_hashes.c.submission_id.in_(own)))
            conn.execute(submissions.delete().where(submissions.c.team_id == team_id))
            conn.execute(teams.delete().where(teams.c.id == team_id))
            recount_open_runs(conn, pending, team["contest_id"])
            pending.append(
                {
                    "type": EventType.TEAM_DELETED,
                    "contest": team["contest_id"],
                    "team": team_id,
                    "submissions_deleted": count,
                    "by": by,
                }
            )
            return keys

    # -- submissions ------------------------------------------------------------------------

    def find_same_bytes(self, contest_id: str, team_id: str, sha256: str) -> Submission | None:
        with self._read() as conn:
            row = (
                conn.execute(
                    select(submissions).where(
                        and_(
                            submissions.c.contest_id == contest_id,
                            submissions.c.team_id == team_id,
                            submissions.c.sha256 == sha256,
                        )
                    )
                )
                .mappings()
                .first()
            )
            return Submission(**row) if row is not None else None

    def get_submission(self, submission_id: str) -> Submission | None:
        with self._read() as conn:
            row = (
                conn.execute(select(submissions).where(submissions.c.id == submission_id))
                .mappings()
                .first()
            )
            return Submission(**row) if row is not None else None

    def store_submission(self, submission: Submission) -> Submission:
        """Record an upload whose bytes are already in blob storage (state `stored`)."""
        if self.store_submissions([submission])[0] is None:
            raise Duplicate("the same bytes were uploaded already")
        return submission

    def store_submissions(self, batch: Sequence[Submission]) -> list[Submission | None]:
        """Record uploads whose bytes are in blob storage, all in one transaction (one commit,
        one fsync, for a burst of them: intake's group commit). Each comes back as stored, or
        None where its team sent the same bytes already (earlier, or earlier in this batch).
        A concurrent writer of the same bytes makes it raise Duplicate, and nothing is stored."""
        same = tuple_(submissions.c.contest_id, submissions.c.team_id, submissions.c.sha256)
        keys = [(s.contest_id, s.team_id, s.sha256) for s in batch]
        try:
            with self._write() as (conn, pending):
                found = conn.execute(
                    select(
                        submissions.c.contest_id, submissions.c.team_id, submissions.c.sha256
                    ).where(same.in_(keys))
                )
                seen: set[tuple[str, str, str]] = {(r[0], r[1], r[2]) for r in found}
                fresh: list[Submission] = []
                for key, submission in zip(keys, batch):
                    if key not in seen:
                        seen.add(key)
                        fresh.append(submission)
                if not fresh:
                    return [None] * len(batch)
                conn.execute(insert(submissions), [s.__dict__ for s in fresh])
                # An open rejudge run covers uploads that arrive while it runs, too.
                by_contest = Counter(s.contest_id for s in fresh)
                for contest_id, count in by_contest.items():
                    conn.execute(
                        update(rejudge_runs)
                        .where(
                            and_(
                                rejudge_runs.c.contest_id == contest_id,
                                rejudge_runs.c.state.in_(("running", "ready")),
                            )
                        )
                        .values(
                            total=rejudge_runs.c.total + count, state="running", finished_at=None
                        )
                    )
                pending.extend(
                    {
                        "type": EventType.SUBMISSION_STORED,
                        **_about(s),
                        "sha256": s.sha256,
                        "size": s.size,
                        "received_at": s.received_at,
                    }
                    for s in fresh
                )
        except IntegrityError as exc:
            raise Duplicate("the same bytes were uploaded already") from exc
        stored = {id(s) for s in fresh}
        return [s if id(s) in stored else None for s in batch]

    def mark_queued(self, submission_id: str) -> bool:
        """stored -> queued once its message is published; False if it moved on meanwhile."""
        return bool(self.mark_queued_many([submission_id]))

    def mark_queued_many(self, submission_ids: Sequence[str]) -> list[str]:
        """Several published submissions stored -> queued in one transaction (one commit, one
        fsync, however many a burst of uploads published); returns those that were marked."""
        with self._write() as (conn, pending):
            rows = (
                conn.execute(
                    select(submissions).where(
                        and_(
                            submissions.c.id.in_(list(submission_ids)),
                            submissions.c.state == SubmissionState.STORED,
                        )
                    )
                )
                .mappings()
                .all()
            )
            marked = []
            for row in rows:
                sub = Submission(**row)
                changed = conn.execute(
                    update(submissions)
                    .where(
                        and_(
                            submissions.c.id == sub.id,
                            submissions.c.state == SubmissionState.STORED,
                        )
                    )
                    .values(state=SubmissionState.QUEUED, state_at=clock.now())
                ).rowcount
                if changed:
                    pending.append({"type": EventType.SUBMISSION_QUEUED, **_about(sub)})
                    marked.append(sub.id)
            return marked

    def requeue(self, seen: Submission) -> bool:
        """The sweeper's move: back to queued, only if nothing touched it since it was `seen`."""
        with self._write() as (conn, pending):
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
                kind = (
                    EventType.SUBMISSION_QUEUED
                    if seen.state == SubmissionState.STORED
                    else EventType.SUBMISSION_REQUEUED
                )
                pending.append({"type": kind, **_about(seen), "was": seen.state})
            return bool(changed)

    def claim(self, submission_id: str, stale_after: float) -> Claim | None:
        """Take a submission for judging; None if it is judged, failed or being judged now."""
        now = clock.now()
        stale = clock.ago(now, stale_after)
        with self._write() as (conn, pending):
            row = (
                conn.execute(select(submissions).where(submissions.c.id == submission_id))
                .mappings()
                .first()
            )
            if row is None:
                return None
            current = Submission(**row)
            free = current.state in (SubmissionState.STORED, SubmissionState.QUEUED)
            abandoned = current.state == SubmissionState.JUDGING and current.state_at < stale
            if not (free or abandoned):
                return None
            attempt = current.attempts + 1
            # Conditional on what was read: under PostgreSQL's read committed, two workers can
            # read the same free row; only the first update matches, the second claims nothing.
            taken = conn.execute(
                update(submissions)
                .where(
                    and_(
                        submissions.c.id == submission_id,
                        submissions.c.state == current.state,
                        submissions.c.attempts == current.attempts,
                    )
                )
                .values(state=SubmissionState.JUDGING, state_at=now, attempts=attempt)
            ).rowcount
            if not taken:
                return None
            pending.append(
                {"type": EventType.SUBMISSION_JUDGING, **_about(current), "attempt": attempt}
            )
            return Claim(current, attempt)

    def record_result(
        self,
        claim: Claim,
        result: JudgedResult,
        word_signature: bytes,
    ) -> bool:
        """judging -> judged with its result; False, nothing written, if the claim was lost."""
        now = clock.now()
        sub = claim.submission
        with self._write() as (conn, pending):
            changed = conn.execute(
                update(submissions)
                .where(
                    and_(
                        submissions.c.id == sub.id,
                        submissions.c.state == SubmissionState.JUDGING,
                        submissions.c.attempts == claim.attempt,
                    )
                )
                .values(state=SubmissionState.JUDGED, state_at=now, judged_at=now, failure=None)
            ).rowcount
            if not changed:
                return False
            put_result(conn, sub.id, result, now, replace=True)
            if (
                conn.execute(
                    select(word_hashes.c.submission_id).where(word_hashes.c.submission_id == sub.id)
                ).first()
                is None
            ):
                conn.execute(
                    insert(word_hashes).values(submission_id=sub.id, hashes=word_signature)
                )
            pending.append(
                {
                    "type": EventType.SUBMISSION_JUDGED,
                    **_about(sub),
                    "score": result.score,
                    "legal": result.legal,
                    "illegal": result.illegal,
                    "received_at": sub.received_at,
                    "lexicon": result.lexicon_id,
                    "layout": result.layout_id,
                }
            )
            return True

    def release(self, claim: Claim, error: str, give_up: bool) -> None:
        """A judging attempt failed: back to queued for a retry, or failed for good."""
        now = clock.now()
        sub = claim.submission
        state = SubmissionState.FAILED if give_up else SubmissionState.QUEUED
        with self._write() as (conn, pending):
            changed = conn.execute(
                update(submissions)
                .where(
                    and_(
                        submissions.c.id == sub.id,
                        submissions.c.state == SubmissionState.JUDGING,
                        submissions.c.attempts == claim.attempt,
                    )
                )
                .values(state=state, state_at=now, failure=error[:2000])
            ).rowcount
            if changed:
                kind = EventType.SUBMISSION_FAILED if give_up else EventType.SUBMISSION_RETRYING
                pending.append(
                    {"type": kind, **_about(sub), "attempt": claim.attempt, "reason": error[:500]}
                )

    def current_result(self, submission_id: str) -> dict[str, Any] | None:
        """The result under the contest's live lexicon and layout."""
        with self._read() as conn:
            row = (
                conn.execute(
                    select(results)
                    .join(submissions, submissions.c.id == results.c.submission_id)
                    .join(contests, contests.c.id == submissions.c.contest_id)
                    .where(
                        and_(
                            results.c.submission_id == submission_id,
                            results.c.lexicon_id == contests.c.lexicon_id,
                            results.c.layout_id == contests.c.layout_id,
                        )
                    )
                )
                .mappings()
                .first()
            )
            return dict(row) if row is not None else None

    def needing_attention(
        self,
        *,
        stored_for: float,
        queued_for: float | None,
        judging_for: float,
        limit: int = 500,
    ) -> list[Submission]:
        """Submissions the sweeper must (re)publish: stuck in stored, queued or judging too long
        (`queued_for` None: none for being queued)."""
        now = clock.now()
        stuck = [
            and_(
                submissions.c.state == SubmissionState.STORED,
                submissions.c.state_at < clock.ago(now, stored_for),
            ),
            and_(
                submissions.c.state == SubmissionState.JUDGING,
                submissions.c.state_at < clock.ago(now, judging_for),
            ),
        ]
        if queued_for is not None:
            stuck.append(
                and_(
                    submissions.c.state == SubmissionState.QUEUED,
                    submissions.c.state_at < clock.ago(now, queued_for),
                )
            )
        with self._read() as conn:
            rows = conn.execute(
                select(submissions)
                .where(or_(*stuck))
                .order_by(submissions.c.received_at)
                .limit(limit)
            ).mappings()
            return [Submission(**r) for r in rows]

    def count_by_state(self, contest_id: str | None = None) -> dict[str, int]:
        with self._read() as conn:
            query = select(submissions.c.state, func.count()).group_by(submissions.c.state)
            if contest_id is not None:
                query = query.where(submissions.c.contest_id == contest_id)
            return {state: n for state, n in conn.execute(query)}

    # -- leaderboard and events -------------------------------------------------------------

    def leaderboard(
        self, contest_id: str, ruleset: tuple[str, str] | None = None
    ) -> list[dict[str, Any]]:
        """Each team's best judged score under the live ruleset (or the given lexicon and layout
        ids, for a rejudge preview); ties go to the earlier receipt."""
        if ruleset is None:
            live = (
                results.c.lexicon_id == contests.c.lexicon_id,
                results.c.layout_id == contests.c.layout_id,
            )
        else:
            live = (results.c.lexicon_id == ruleset[0], results.c.layout_id == ruleset[1])
        ranked = (
            select(
                submissions.c.team_id,
                submissions.c.id.label("submission"),
                results.c.score,
                submissions.c.received_at,
                func.row_number()
                .over(
                    partition_by=submissions.c.team_id,
                    order_by=(results.c.score.desc(), submissions.c.received_at, submissions.c.id),
                )
                .label("n"),
            )
            .join(results, results.c.submission_id == submissions.c.id)
            .join(contests, contests.c.id == submissions.c.contest_id)
            .where(and_(submissions.c.contest_id == contest_id, *live))
            .subquery()
        )
        query = (
            select(ranked, teams.c.name)
            .join(teams, teams.c.id == ranked.c.team_id)
            .where(ranked.c.n == 1)
            .order_by(ranked.c.score.desc(), ranked.c.received_at, ranked.c.submission)
        )
        with self._read() as conn:
            rows = conn.execute(query).mappings().all()
        return [
            {
                "rank": i,
                "team": r["name"],
                "team_id": r["team_id"],
                "score": r["score"],
                "submission": r["submission"],
                "received_at": r["received_at"],
            }
            for i, r in enumerate(rows, 1)
        ]

    def events_after(self, after: int, limit: int) -> list[dict[str, Any]]:
        with self._read() as conn:
            rows = conn.execute(
                select(events).where(events.c.id > after).order_by(events.c.id).limit(limit)
            ).mappings()
            return [
                {"id": r["id"], "ts": r["ts"], "type": r["type"], **json.loads(r["data"])}
                for r in rows
            ]


def _about(submission: Submission) -> dict[str, Any]:
    return {
        "submission": submission.id,
        "contest": submission.contest_id,
        "team": submission.team_id,
    }


def _event_row(event: dict[str, Any]) -> dict[str, Any]:
    ts = event.setdefault("ts", clock.now())
    data = {k: v for k, v in event.items() if k not in ("type", "ts", "id")}
    return {
        "ts": ts,
        "type": str(event["type"]),
        "contest_id": event.get("contest"),
        "team_id": event.get("team"),
        "submission_id": event.get("submission"),
        "data": json.dumps(data, separators=(",", ":"), default=str),
    }
