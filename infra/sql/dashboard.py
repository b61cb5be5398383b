"""Read-only SQL for the dashboard, on the schema's tables: one consistent read per snapshot
(`DashboardReader.read`), which `api.stats` turns into what the page and `/metrics` show.

Times in the store are fixed-width ISO text, so ranges compare as strings and a minute is the
first 16 characters: counting per minute is a GROUP BY on a prefix, the same on SQLite and
PostgreSQL. A row whose time does not parse (written by an older version or by hand) is left
out and logged: one bad row must not take the dashboard and `/metrics` down for everyone.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from sqlalchemy import Connection, Table, and_, case, func, inspect, or_, select

from core import clock
from core.events import EventType
from core.games import DEFAULT as DEFAULT_GAME
from core.states import OPEN_REJUDGE_STATES, SubmissionState
from infra.sql.schema import (
    contests,
    events,
    layouts,
    lexicon_names,
    rejudge_runs,
    results,
    submissions,
)
from infra.sql.store import SqlStore

SERIES_MINUTES = 60
LATENCY_WINDOW_S = 600
FAILURE_WINDOW_S = 300
REJUDGE_TABLE_RECHECK_S = 30.0  # how often to look for the rejudge table while it is missing
JUDGED_EVENTS_PER_READ = 5000  # bounds one read's catching up on judgements not seen yet
S = submissions.c
BAD_TIMES_LOGGED = 100  # each distinct bad time is logged once, up to this many per process
log = logging.getLogger(__name__)
_logged_bad_times: set[str] = set()
WAITING = (SubmissionState.STORED, SubmissionState.QUEUED, SubmissionState.JUDGING)


@dataclass(frozen=True)
class Readings:
    """What one snapshot takes from SQL, all read in one transaction."""

    totals: dict[str, int]
    series: dict[str, Any]
    latency: dict[str, Any]
    failures: dict[str, Any]
    contests: list[dict[str, Any]]
    # Open rejudge runs and those updated within `rejudges_since_s`, newest first: their rows
    # and the names of their rulesets (`recent_rejudges`).
    rejudges: list[dict[str, Any]]
    # (event id, seconds from receipt to result or None) of each `submission.judged` event
    # after `judged_after`, in id order.
    judged: list[tuple[int, float | None]]
    last_event_id: int


class DashboardReads(Protocol):
    """The dashboard's SQL reads as the API's stats use them (`DashboardReader`)."""

    def read(self, now: datetime, *, judged_after: int, rejudges_since_s: float) -> Readings: ...
    def rejudge(self, run_id: str) -> dict[str, Any] | None: ...


class DashboardReader:
    """Reads a snapshot's rows; remembers whether the rejudge table exists, since another
    migration adds it (looked for again every `REJUDGE_TABLE_RECHECK_S` until it is there)."""

    def __init__(self, store: SqlStore, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._engine = store.engine
        self._now = monotonic
        self._has_rejudges = False
        self._rejudges_checked = -math.inf

    def read(self, now: datetime, *, judged_after: int, rejudges_since_s: float) -> Readings:
        with self._engine.connect().execution_options(readonly=True) as conn:
            totals = activity(conn, now)
            series = minute_series(conn, now)
            rejudges = self._rejudges(conn, now, rejudges_since_s)
            totals["rejudged_last_minute"], series["rejudged"] = (
                rejudge_work(conn, now) if self._has_rejudges else (0, [0] * SERIES_MINUTES)
            )
            return Readings(
                totals=totals,
                series=series,
                latency=latency(conn, now),
                failures=failures(conn, now, totals["failed_last_5_min"]),
                contests=contests_now(conn, now),
                rejudges=rejudges,
                judged=judged_after_event(conn, judged_after),
                last_event_id=conn.execute(select(func.max(events.c.id))).scalar() or 0,
            )

    def rejudge(self, run_id: str) -> dict[str, Any] | None:
        """One rejudge run's row with its rulesets' names, as `recent_rejudges` gives it."""
        with self._engine.connect().execution_options(readonly=True) as conn:
            row = (
                conn.execute(select(rejudge_runs).where(rejudge_runs.c.id == run_id))
                .mappings()
                .first()
            )
            return None if row is None else with_names(conn, [dict(row)])[0]

    def _rejudges(self, conn: Connection, now: datetime, since_s: float) -> list[dict[str, Any]]:
        if (
            not self._has_rejudges
            and self._now() - self._rejudges_checked > REJUDGE_TABLE_RECHECK_S
        ):
            self._rejudges_checked = self._now()
            self._has_rejudges = inspect(conn).has_table(rejudge_runs.name)
        return recent_rejudges(conn, now, since_s) if self._has_rejudges else []


def _count(condition: Any) -> Any:
    return func.coalesce(func.sum(case((condition, 1), else_=0)), 0)


def activity(conn: Connection, now: datetime) -> dict[str, int]:
    minute, five = ago(now, 60), ago(now, FAILURE_WINDOW_S)
    failed = S.state == SubmissionState.FAILED
    row = conn.execute(
        select(
            func.count().label("uploads"),
            _count(S.judged_at.is_not(None)).label("judged"),
            _count(failed).label("failed"),
            _count(S.state.in_(WAITING)).label("backlog"),
            _count(S.received_at >= minute).label("uploads_last_minute"),
            _count(S.judged_at >= minute).label("judged_last_minute"),
            _count(and_(failed, S.state_at >= minute)).label("failed_last_minute"),
            _count(and_(failed, S.state_at >= five)).label("failed_last_5_min"),
        )
    ).one()
    return {key: int(value) for key, value in row._mapping.items()}


def minute_series(conn: Connection, now: datetime) -> dict[str, Any]:
    since, keys = _series_minutes(now)
    series: dict[str, Any] = {"start": since, "step_s": 60}
    for name, column in (("uploads", S.received_at), ("judged", S.judged_at)):
        minute = _minute_of(column)
        rows = conn.execute(select(minute, func.count()).where(column >= since).group_by(minute))
        counts = {str(key): int(n) for key, n in rows}
        series[name] = [counts.get(key, 0) for key in keys]
    return series


def rejudge_work(conn: Connection, now: datetime) -> tuple[int, list[int]]:
    """Results judged for rejudge runs: how many in the last minute, and per minute over the
    series' hour. A live judging stamps its submission and its result with one time, in one
    transaction; a run's results carry the time of their own batch. Results a run carried over
    unchanged were copied, not judged, and are left out.

    Only runs write such results, and each of their writes moves the run's `updated_at`: with
    no run open or updated within the hour the results table is not read at all, and with one
    it is read from the earliest such run's start."""
    since, keys = _series_minutes(now)
    RR = rejudge_runs.c
    first_run = conn.execute(
        select(func.min(RR.created_at)).where(
            or_(RR.state.in_(OPEN_REJUDGE_STATES), RR.updated_at >= since)
        )
    ).scalar()
    if first_run is None:
        return 0, [0] * len(keys)
    R = results.c
    minute = _minute_of(R.judged_at)
    rows = conn.execute(
        select(minute, func.count(), _count(R.judged_at >= ago(now, 60)))
        .select_from(results.join(submissions, S.id == R.submission_id))
        .where(
            and_(
                R.judged_at >= max(since, str(first_run)),
                R.carried == 0,
                or_(S.judged_at.is_(None), S.judged_at != R.judged_at),
            )
        )
        .group_by(minute)
    ).all()
    per_minute = {str(key): int(n) for key, n, _ in rows}
    return sum(int(recent) for _, _, recent in rows), [per_minute.get(key, 0) for key in keys]


def _series_minutes(now: datetime) -> tuple[str, list[str]]:
    """The series' first moment, and the 'YYYY-MM-DDTHH:MM' of each of its minutes."""
    first = minute_floor(now) - timedelta(minutes=SERIES_MINUTES - 1)
    keys = [
        (first + timedelta(minutes=i)).strftime("%Y-%m-%dT%H:%M") for i in range(SERIES_MINUTES)
    ]
    return clock.format_time(first), keys


def _minute_of(column: Any) -> Any:
    return func.substr(column, 1, 16)  # 'YYYY-MM-DDTHH:MM' of the fixed-width ISO text


def latency(conn: Connection, now: datetime) -> dict[str, Any]:
    rows = conn.execute(
        select(S.received_at, S.judged_at)
        .where(S.judged_at >= ago(now, LATENCY_WINDOW_S))
        .limit(100_000)
    )
    spans = []
    for received, judged in rows:
        start, end = parse_time(received), parse_time(judged)
        if start is not None and end is not None:
            spans.append((end - start).total_seconds() * 1000)
    spans.sort()
    return {
        "window_s": LATENCY_WINDOW_S,
        "count": len(spans),
        **{f"p{q}": _percentile(spans, q / 100) for q in (50, 95, 99)},
    }


def _percentile(ordered: list[float], share: float) -> float | None:
    if not ordered:
        return None
    return round(ordered[max(0, math.ceil(share * len(ordered)) - 1)], 1)


def failures(conn: Connection, now: datetime, recent_count: int) -> dict[str, Any]:
    failed = S.state == SubmissionState.FAILED
    by_reason: Counter[str] = Counter()
    grouped = select(S.failure, func.count()).where(failed).group_by(S.failure).limit(1000)
    for failure, n in conn.execute(grouped):
        by_reason[reason_of(failure)] += int(n)
    latest = conn.execute(
        select(S.id, S.contest_id, S.team_id, S.state_at, S.failure)
        .where(failed)
        .order_by(S.state_at.desc())
        .limit(5)
    )
    return {
        "total": sum(by_reason.values()),
        "last_5_min": recent_count,
        "by_reason": [{"reason": r, "count": n} for r, n in by_reason.most_common(10)],
        "recent": [
            {
                "submission": sid,
                "contest": contest,
                "team": team,
                "at": at,
                "reason": reason_of(failure),
                "detail": (failure or "")[:300],
            }
            for sid, contest, team, at, failure in latest
        ],
    }


def reason_of(failure: str | None) -> str:
    """'BlobNotFound: uploads/…' -> 'BlobNotFound': a short class of failure, not the message."""
    head = (failure or "").split(":", 1)[0].strip()
    return head[:60] or "unknown"


def contests_now(conn: Connection, now: datetime) -> list[dict[str, Any]]:
    counts: dict[str, dict[str, int]] = defaultdict(dict)
    for contest_id, state, n in conn.execute(
        select(S.contest_id, S.state, func.count()).group_by(S.contest_id, S.state)
    ):
        counts[contest_id][state] = int(n)
    rows = []
    for c in conn.execute(select(contests)).mappings():
        opens, closes = parse_time(c["opens_at"]), parse_time(c["closes_at"])
        if opens is None or closes is None:
            continue
        opens_in, closes_in = (opens - now).total_seconds(), (closes - now).total_seconds()
        phase = "upcoming" if opens_in > 0 else ("open" if closes_in > 0 else "closed")
        by_state = counts.get(c["id"], {})
        rows.append({
            "id": c["id"], "title": c["title"], "game": c["game"], "phase": phase,
            "opens_at": c["opens_at"], "closes_at": c["closes_at"],
            "opens_in_s": round(opens_in), "closes_in_s": round(closes_in),
            "counts": {str(state): by_state.get(state, 0) for state in SubmissionState},
            "total": sum(by_state.values()),
        })  # fmt: skip
    order = {"open": 0, "upcoming": 1, "closed": 2}
    rows.sort(key=lambda r: (order[r["phase"]], abs(r["closes_in_s"])))
    return rows[:20]


def recent_rejudges(conn: Connection, now: datetime, since_s: float) -> list[dict[str, Any]]:
    """Each run's row, with the names of the word lists and layouts it goes from and to
    (`lexicon_name`, `from_layout_name`...: None for an id no longer registered; and every
    name each carries, `lexicon_names`...) and its contest's game."""
    R = rejudge_runs.c
    rows = [
        dict(row)
        for row in conn.execute(
            select(rejudge_runs)
            .where(or_(R.state.in_(OPEN_REJUDGE_STATES), R.updated_at >= ago(now, since_s)))
            .order_by(R.created_at.desc())
            .limit(20)
        ).mappings()
    ]
    return with_names(conn, rows)


def with_names(conn: Connection, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rejudge run rows with the names of their rulesets and their contest's game added (see
    `recent_rejudges`)."""
    keys = ("lexicon_id", "from_lexicon_id")
    labels = _lexicon_labels(conn, {row[key] for row in rows for key in keys})
    for row in rows:
        for key in keys:
            named = labels.get(row[key], [])
            row[key.removesuffix("_id") + "_name"] = name_at(named, row["created_at"])
            row[key.removesuffix("_id") + "_names"] = [name for name, _ in named]
    keys = ("layout_id", "from_layout_id")
    layout_names = _names(conn, layouts, {row[key] for row in rows for key in keys})
    for row in rows:
        for key in keys:
            name = layout_names.get(row[key])
            row[key.removesuffix("_id") + "_name"] = name
            row[key.removesuffix("_id") + "_names"] = [] if name is None else [name]
    games = dict(
        conn.execute(
            select(contests.c.id, contests.c.game).where(
                contests.c.id.in_(sorted({row["contest_id"] for row in rows}))
            )
        ).all()
    )
    for row in rows:
        row["game"] = games.get(row["contest_id"], DEFAULT_GAME)
    return rows


def name_at(labels: list[tuple[str, str]], moment: str) -> str | None:
    """The name a word list was last given at or before `moment` (a run's start: the name the
    organiser knew it by then), else its first; `labels` are (name, given at), oldest first."""
    given = [name for name, at in labels if at <= moment]
    if given:
        return given[-1]
    return labels[0][0] if labels else None


def _lexicon_labels(conn: Connection, ids: set[str]) -> dict[str, list[tuple[str, str]]]:
    """Each word list's names with when each was given, oldest first (`lexicon_names` holds
    the first name too, so `lexicons.name` is never the only one)."""
    if not ids:
        return {}
    found: dict[str, list[tuple[str, str]]] = {}
    N = lexicon_names.c
    for lexicon_id, name, at in conn.execute(
        select(N.lexicon_id, N.name, N.created_at)
        .where(N.lexicon_id.in_(sorted(ids)))
        .order_by(N.created_at, N.name)
    ):
        found.setdefault(str(lexicon_id), []).append((str(name), str(at)))
    return found


def _names(conn: Connection, table: Table, ids: set[str]) -> dict[str, str]:
    if not ids:
        return {}
    rows = conn.execute(select(table.c.id, table.c.name).where(table.c.id.in_(sorted(ids))))
    return {str(id_): str(name) for id_, name in rows}


def judged_after_event(conn: Connection, after: int) -> list[tuple[int, float | None]]:
    E = events.c
    rows = conn.execute(
        select(E.id, E.ts, E.data)
        .where(and_(E.id > after, E.type == str(EventType.SUBMISSION_JUDGED)))
        .order_by(E.id)
        .limit(JUDGED_EVENTS_PER_READ)
    )
    found: list[tuple[int, float | None]] = []
    for event_id, ts, data in rows:
        judged, received = parse_time(ts), parse_time(_received_at(data))
        seconds = (judged - received).total_seconds() if judged and received else None
        found.append((int(event_id), seconds))
    return found


def _received_at(data: str | None) -> str | None:
    try:
        found = json.loads(data or "{}")
    except ValueError:
        return None
    received = found.get("received_at") if isinstance(found, dict) else None
    return received if isinstance(received, str) else None


def ago(now: datetime, seconds: float) -> str:
    return clock.format_time(now - timedelta(seconds=seconds))


def minute_floor(moment: datetime) -> datetime:
    return moment.replace(second=0, microsecond=0)


def parse_time(text: str | None) -> datetime | None:
    """A stored 'YYYY-MM-DDTHH:MM:SS.ffffffZ' as an aware datetime; None, logged, for anything
    else (a missing time is simply None)."""
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        moment = None
    if moment is not None and moment.tzinfo is not None:
        return moment
    shown = repr(text)[:80]
    if shown not in _logged_bad_times and len(_logged_bad_times) < BAD_TIMES_LOGGED:
        _logged_bad_times.add(shown)
        log.warning("dashboard: skipped a row whose stored time %s does not parse", shown)
    return None
