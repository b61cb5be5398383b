"""Read-only SQL for the CLICS Contest API (`core.clics`): a contest with its teams, submissions
and every result row, read in one transaction; and, for the event feed, pages of the event log
and what rendering a page needs of each contest it touches."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from sqlalchemy import Connection, and_, func, or_, select, tuple_

from core import clics
from core.clics import Applied, ContestData, Judging, Upload
from core.clics_feed import Logged, Read, Wanted
from core.clics_games import mapped_games
from core.events import EventType
from core.records import Contest, Team
from core.states import RejudgeState
from infra.sql.base import Transactions
from infra.sql.columns import fields_of
from infra.sql.schema import contests, events, rejudge_runs, results, submissions, teams

IN_MOST = 500  # ids in one IN (...) list


class ClicsReader:
    def __init__(self, store: Transactions) -> None:
        self._store = store

    def contests(self) -> list[Contest]:
        """The contests the Contest API maps (their game's), by id."""
        with self._store.read() as conn:
            rows = conn.execute(
                select(contests).where(contests.c.game.in_(mapped_games())).order_by(contests.c.id)
            ).mappings()
            return [Contest(**fields_of(row)) for row in rows]

    def contest(self, contest_id: str) -> ContestData | None:
        """The whole contest: every team, submission (in receipt order) and result row."""
        with self._store.read() as conn:
            return _contest_data(conn, contest_id, None)

    def last_event(self) -> int:
        with self._store.read() as conn:
            return int(conn.execute(select(func.coalesce(func.max(events.c.id), 0))).scalar_one())

    def logged_after(self, after: int, limit: int, contest_id: str | None = None) -> list[Logged]:
        """Up to `limit` rows of the event log after id `after` (of one contest, if given)."""
        query = select(
            events.c.id, events.c.type, events.c.contest_id, events.c.team_id,
            events.c.submission_id,
        ).where(events.c.id > after)  # fmt: skip
        if contest_id is not None:
            query = query.where(events.c.contest_id == contest_id)
        with self._store.read() as conn:
            return [Logged(*row) for row in conn.execute(query.order_by(events.c.id).limit(limit))]

    def reads_for(self, wants: dict[str, Wanted], now: str) -> dict[str, Read]:
        """What rendering a page needs of each contest it touches, each in one transaction."""
        found: dict[str, Read] = {}
        for contest_id, want in wants.items():
            with self._store.read() as conn:
                data = _contest_data(
                    conn, contest_id, None if want.everything else want.submissions
                )
                if data is None:
                    continue
                if want.tops:
                    data = _with_tops(conn, data, now)
                gone = {team: _logged_uploads(conn, contest_id, team) for team in want.gone_teams}
            found[contest_id] = Read(data, gone)
        return found


def _contest_data(
    conn: Connection, contest_id: str, only: Collection[str] | None
) -> ContestData | None:
    row = conn.execute(select(contests).where(contests.c.id == contest_id)).mappings().first()
    if row is None:
        return None
    runs = conn.execute(
        select(
            rejudge_runs.c.from_lexicon_id, rejudge_runs.c.from_layout_id,
            rejudge_runs.c.lexicon_id, rejudge_runs.c.layout_id, rejudge_runs.c.updated_at,
        )
        .where(and_(rejudge_runs.c.contest_id == contest_id,
                    rejudge_runs.c.state == RejudgeState.APPLIED))
        .order_by(rejudge_runs.c.updated_at, rejudge_runs.c.id)
    )  # fmt: skip
    applied = tuple(Applied((r[0], r[1]), (r[2], r[3]), r[4]) for r in runs)
    team_rows = conn.execute(
        select(teams).where(teams.c.contest_id == contest_id).order_by(teams.c.name)
    ).mappings()
    return ContestData(
        contest=Contest(**fields_of(row)),
        applied=applied,
        teams=tuple(Team(**t) for t in team_rows),
        uploads=tuple(_uploads(conn, contest_id, only)),
        judgings=tuple(_judgings(conn, contest_id, only)),
    )


def _uploads(conn: Connection, contest_id: str, only: Collection[str] | None) -> list[Upload]:
    s = submissions.c
    query = select(s.id, s.team_id, s.received_at, s.state, s.state_at).where(
        s.contest_id == contest_id
    )
    return [
        Upload(*row)
        for chunk in _chunks(only)
        for row in conn.execute(
            (query if chunk is None else query.where(s.id.in_(chunk))).order_by(s.received_at, s.id)
        )
    ]


def _judgings(conn: Connection, contest_id: str, only: Collection[str] | None) -> list[Judging]:
    r = results.c
    query = (
        select(r.id, r.submission_id, r.lexicon_id, r.layout_id, r.score, r.judged_at)
        .join(submissions, submissions.c.id == r.submission_id)
        .where(submissions.c.contest_id == contest_id)
    )
    return [
        Judging(row.id, row.submission_id, (row.lexicon_id, row.layout_id), row.score,
                row.judged_at)
        for chunk in _chunks(only)
        for row in conn.execute(query if chunk is None else query.where(r.submission_id.in_(chunk)))
    ]  # fmt: skip


def _chunks(only: Collection[str] | None) -> Iterable[Sequence[str] | None]:
    if only is None:
        yield None
        return
    ordered = sorted(only)
    for start in range(0, len(ordered), IN_MOST):
        yield ordered[start : start + IN_MOST]


def _with_tops(conn: Connection, data: ContestData, now: str) -> ContestData:
    """`data` with the highest score of a judgement each sight sees in the whole contest."""
    tops = []
    for full in (False, True):
        seen = clics.sight(data, now, full)
        query = (
            select(func.coalesce(func.max(results.c.score), 0))
            .join(submissions, submissions.c.id == results.c.submission_id)
            .where(
                and_(
                    submissions.c.contest_id == data.contest.id,
                    or_(*(
                        tuple_(results.c.lexicon_id, results.c.layout_id) == ruleset
                        for ruleset in seen.rulesets
                    )),
                )
            )
        )  # fmt: skip
        if seen.hidden_from is not None:
            query = query.where(submissions.c.received_at < seen.hidden_from)
        tops.append(int(conn.execute(query).scalar_one()))
    return ContestData(
        data.contest, data.applied, data.teams, data.uploads, data.judgings, (tops[0], tops[1])
    )


def _logged_uploads(conn: Connection, contest_id: str, team_id: str) -> tuple[str, ...]:
    """The submissions a (deleted) team made, as the event log recorded them."""
    rows = conn.execute(
        select(events.c.submission_id)
        .where(
            and_(
                events.c.contest_id == contest_id,
                events.c.team_id == team_id,
                events.c.type == str(EventType.SUBMISSION_STORED),
            )
        )
        .distinct()
    )
    return tuple(sorted(sid for (sid,) in rows if sid is not None))
