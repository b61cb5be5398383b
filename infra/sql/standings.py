"""The results store's reads across submissions: live results, the leaderboard, a contest's
results page by page and the event feed (`StandingsMixin`); submissions the sweeper must see to
and counts by state (`SubmissionStates`)."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Connection, and_, func, or_, select
from sqlalchemy.sql.elements import ColumnElement

from core import clock
from core.records import ResultLine, StoredResult, Submission
from core.states import SubmissionState
from infra.sql.base import StoreBase
from infra.sql.columns import fields_of
from infra.sql.schema import contests, events, results, submissions, teams


class StandingsMixin(StoreBase):
    """The reads `SqlResultReads` is made of (`infra.sql.result_reads`), and the leaderboard a
    game's standings read (`infra.sql.games`)."""

    # -- live results -----------------------------------------------------------------------

    def current_result(self, submission_id: str) -> StoredResult | None:
        """The result under the contest's live lexicon and rules data."""
        with self.read() as conn:
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
            return StoredResult(**fields_of(row)) if row is not None else None

    # -- leaderboard and events -------------------------------------------------------------

    def leaderboard(
        self, contest_id: str, ruleset: tuple[str, str] | None = None, before: str | None = None
    ) -> list[dict[str, Any]]:
        """Each team's best judged score under the live ruleset (or the given lexicon and rules data
        ids, for a rejudge preview); ties go to the earlier receipt. With `before`, only the
        uploads received before that time count (a frozen board, `core.freeze`)."""
        with self.read() as conn:
            return leaderboard_in(conn, contest_id, ruleset, before)

    def received_since(self, contest_id: str, since: str) -> int:
        """How many of the contest's submissions were received at or after `since`."""
        with self.read() as conn:
            return int(
                conn.execute(
                    select(func.count()).where(
                        and_(
                            submissions.c.contest_id == contest_id,
                            submissions.c.received_at >= since,
                        )
                    )
                ).scalar_one()
            )

    def results_page(
        self, contest_id: str, after: str, limit: int, team_id: str | None = None
    ) -> list[ResultLine]:
        """Up to `limit` of the contest's submissions with ids after `after`, in id order,
        each with its team's name and its result under the live ruleset (None before it is
        judged): one page of an export, read along the (contest, id) index; with `team_id`,
        of that team's submissions alone (what a team audits)."""
        live = and_(
            results.c.submission_id == submissions.c.id,
            results.c.lexicon_id == contests.c.lexicon_id,
            results.c.layout_id == contests.c.layout_id,
        )
        query = (
            select(
                submissions.c.id,
                submissions.c.team_id,
                teams.c.name,
                submissions.c.state,
                submissions.c.received_at,
                results.c.judged_at,
                results.c.lexicon_id,
                results.c.layout_id,
                results.c.id.label("result_id"),
            )
            .join(contests, contests.c.id == submissions.c.contest_id)
            .join(teams, teams.c.id == submissions.c.team_id)
            .outerjoin(results, live)
            .where(
                and_(
                    submissions.c.contest_id == contest_id,
                    submissions.c.id > after,
                    *([submissions.c.team_id == team_id] if team_id is not None else []),
                )
            )
            .order_by(submissions.c.id)
            .limit(limit)
        )
        with self.read() as conn:
            return [
                ResultLine(
                    submission=r.id,
                    team=r.name,
                    team_id=r.team_id,
                    state=r.state,
                    received_at=r.received_at,
                    judged_at=r.judged_at,
                    lexicon=r.lexicon_id,
                    layout=r.layout_id,
                    result_id=r.result_id,
                )
                for r in conn.execute(query)
            ]

    def events_after(self, after: int, limit: int) -> list[dict[str, Any]]:
        with self.read() as conn:
            rows = conn.execute(
                select(events).where(events.c.id > after).order_by(events.c.id).limit(limit)
            ).mappings()
            return [
                {"id": r["id"], "ts": r["ts"], "type": r["type"], **json.loads(r["data"])}
                for r in rows
            ]


class SubmissionStates(StoreBase):
    """Submissions by state, a part of `SqlSubmissions`: those the sweeper must see to, and how
    many are in each state."""

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
        with self.read() as conn:
            rows = conn.execute(
                select(submissions)
                .where(or_(*stuck))
                .order_by(submissions.c.received_at)
                .limit(limit)
            ).mappings()
            return [Submission(**r) for r in rows]

    def count_by_state(self, contest_id: str | None = None) -> dict[str, int]:
        with self.read() as conn:
            query = select(submissions.c.state, func.count()).group_by(submissions.c.state)
            if contest_id is not None:
                query = query.where(submissions.c.contest_id == contest_id)
            return {state: n for state, n in conn.execute(query)}


def leaderboard_in(
    conn: Connection,
    contest_id: str,
    ruleset: tuple[str, str] | None = None,
    before: str | None = None,
) -> list[dict[str, Any]]:
    """`StandingsMixin.leaderboard` on an open connection: inside the caller's transaction (a
    rejudge's `apply` records its summary in the one that switches the contest)."""
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
        .where(and_(submissions.c.contest_id == contest_id, *live, *received_before(before)))
        .subquery()
    )
    query = (
        select(ranked, teams.c.name)
        .join(teams, teams.c.id == ranked.c.team_id)
        .where(ranked.c.n == 1)
        .order_by(ranked.c.score.desc(), ranked.c.received_at, ranked.c.submission)
    )
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


def received_before(before: str | None) -> tuple[ColumnElement[bool], ...]:
    """The condition that a submission was received before `before` (none for None)."""
    return () if before is None else (submissions.c.received_at < before,)
