"""The numbers behind /dashboard, /v1/stats and /metrics, computed at most once a second.

`StatsCollector` caches one snapshot behind a lock: however many pages poll, Redis and SQL see
one refresh a second at most. `StatsSnapshotter.compute` builds a snapshot from one read-only SQL
read (`infra.sql.dashboard`), the queue depths (`infra.queues.queue_depths`: six Redis reads,
and one a worker host), what the worker heartbeats said (`heartbeats`) and which database and
Redis node is primary (`infra.replication`, its own short reads); `PreviewCounts` adds what a
finished rejudge run would change: live while it is ready, as apply recorded it once applied.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

from api.heartbeats import WorkerWatch
from api.pages.games import page_of
from api.services import Services
from core import clock, tuning
from core.games import game, names
from core.ports import RejudgeRuns, ResultReads
from core.records import Run
from core.states import OPEN_REJUDGE_STATES, RejudgeState
from infra.replication import ReplicationReads, ReplicationStatus, Service
from infra.sql import dashboard as stats_sql
from infra.sql.columns import fields_of
from infra.sql.dashboard import DashboardReads
from infra.sql.schema import rejudge_runs

REFRESH_S = 1.0
GROWTH_TOLERANCE = 1  # a queue one message deeper than a minute ago is noise, not a backlog
LATENCY_BUCKETS_S = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
REJUDGE_RECENT_S = 600  # a finished run stays on the page this long, its bar full
# A run's score and rank changes are counted once it is judged through: over a half-judged
# contest they would mislead (as the preview at /v1/rejudges/{id} says too).
PREVIEW_STATES = (RejudgeState.READY, RejudgeState.APPLIED)


class StatsCollector:
    """One cached snapshot, recomputed at most every `every` seconds whoever asks."""

    def __init__(
        self,
        compute: Callable[[], dict[str, Any]],
        *,
        every: float = REFRESH_S,
        monotonic: Callable[[], float] = time.monotonic,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self._compute, self._every, self._now, self._on_close = compute, every, monotonic, on_close
        self._lock = threading.Lock()
        self._value: dict[str, Any] | None = None
        self._error: Exception | None = None
        self._at = -math.inf

    def get(self) -> dict[str, Any]:
        with self._lock:  # callers arriving during a refresh wait for it instead of repeating it
            if self._now() - self._at >= self._every:
                try:
                    self._value, self._error = self._compute(), None
                except Exception as exc:
                    self._error = exc  # a failing store is asked again next second, not per caller
                self._at = self._now()
            if self._error is not None:
                raise self._error
            assert self._value is not None
            return self._value

    def close(self) -> None:
        if self._on_close is not None:
            self._on_close()


def build_collector(services: Services) -> StatsCollector:
    """Wire the collector to the app's store and queues; listen to worker heartbeats if the
    composition root gave a Celery app to hear them through (it does when Redis is there)."""
    watch = None
    if services.worker_events is not None:
        watch = WorkerWatch(services.worker_events)
        watch.start()
    snapshotter = StatsSnapshotter(
        services.dashboard,
        services.rejudges,
        services.store,
        services.queue_depths,
        watch,
        replication=services.replication,
    )
    return StatsCollector(snapshotter.compute, on_close=watch.stop if watch else None)


class StatsSnapshotter:
    """Computes snapshots; keeps what SQL cannot answer later (queue depth history, rates)."""

    def __init__(
        self,
        reader: DashboardReads,
        rejudges: RejudgeRuns,
        events: ResultReads,
        queue_depths: Callable[[], dict[str, Any]],
        workers: WorkerWatch | None,
        wall: Callable[[], datetime] | None = None,
        *,
        replication: ReplicationReads | None = None,
    ) -> None:
        """`queue_depths`: the broker's queues, as `infra.queues.queue_depths` reads them.
        `wall`: the time a snapshot is for; by default the clock every stored time is
        written with (`core.clock.now`), so a test that sets that clock sets both.
        `replication`: looked at on each refresh, so a failover is seen within a second of
        the page (or a scraper of /metrics) asking."""
        self._events, self._queue_depths, self._workers = events, queue_depths, workers
        self._replication = replication
        self._wall = wall or _store_time
        self._sql = reader
        self._depths: deque[tuple[float, int]] = deque(maxlen=4000)  # (epoch s, total depth)
        self._rejudge_seen: dict[str, deque[tuple[float, int]]] = {}
        self._histogram = LatencyHistogram()
        self._judged_watermark = 0
        self._previews = PreviewCounts(rejudges)

    def compute(self) -> dict[str, Any]:
        started = time.perf_counter()
        now = self._wall()
        queues = self._queue_depths()
        workers = self._workers.snapshot() if self._workers else _no_workers()
        sql = self._sql.read(
            now, judged_after=self._judged_watermark, rejudges_since_s=REJUDGE_RECENT_S
        )
        totals, series = sql.totals, sql.series
        rejudges = [self._rejudge_row(row, now) for row in sql.rejudges]
        self._previews.forget_all_but({row["id"] for row in sql.rejudges})
        self._observe(sql.judged)
        tail = self._events.events_after(max(0, sql.last_event_id - 30), 30)
        waiting, waiting_then = self._waiting(queues, totals, now)
        series["queue_depth"] = self._depth_series(now)
        replication = self._replication.status() if self._replication else None
        return {
            "generated_at": clock.format_time(now),
            "refresh_s": REFRESH_S,
            "status": status_of(
                failed_recently=totals["failed_last_5_min"],
                waiting=waiting,
                waiting_then=waiting_then,
                workers_online=workers["online"],
            ),
            "queues": queues,
            "workers": workers,
            # What one task is, for reading the workers' task counts: an upload message or a
            # rejudge batch holds up to this many submissions.
            "task_sizes": {
                "uploads_per_message": tuning.GROUP_MOST,
                "submissions_per_rejudge_batch": tuning.REJUDGE_BATCH_MOST,
            },
            "totals": totals,
            "uploads_per_minute": totals["uploads_last_minute"],
            "judged_per_minute": totals["judged_last_minute"],
            # Submissions judged again for rejudge runs: busy workers while no upload arrives.
            "rejudged_per_minute": totals["rejudged_last_minute"],
            "series": series,
            "latency_ms": sql.latency,
            "latency_histogram": self._histogram.as_dict(),
            "failures": sql.failures,
            "contests": [contest | _contest_links(contest["id"]) for contest in sql.contests],
            "rejudges": rejudges,
            "games": games_words(),  # the page's script names no game: it reads these
            "events": list(reversed(tail)),
            "services": services_view(replication),
            "compute_ms": round((time.perf_counter() - started) * 1000, 1),
        }

    def _waiting(
        self, queues: dict[str, Any], totals: dict[str, int], now: datetime
    ) -> tuple[int, int | None]:
        """Work waiting now and a minute ago: Redis depth if it answers, else SQL's backlog."""
        if queues["status"] == "ok":
            depth = int(queues["total"])
            self._depths.append((now.timestamp(), depth))
            return depth, self._depth_about(now.timestamp() - 60)
        backlog = totals["backlog"]
        finished = totals["judged_last_minute"] + totals["failed_last_minute"]
        return backlog, backlog - totals["uploads_last_minute"] + finished

    def _depth_about(self, moment: float) -> int | None:
        near = [(abs(t - moment), depth) for t, depth in self._depths if abs(t - moment) <= 30]
        return min(near)[1] if near else None

    def _depth_series(self, now: datetime) -> list[int | None]:
        """The deepest total seen in each of the last 60 minutes (None: nobody was watching)."""
        first = stats_sql.minute_floor(now) - timedelta(minutes=stats_sql.SERIES_MINUTES - 1)
        points: list[int | None] = [None] * stats_sql.SERIES_MINUTES
        for moment, depth in self._depths:
            index = int((moment - first.timestamp()) // 60)
            if 0 <= index < stats_sql.SERIES_MINUTES:
                current = points[index]
                points[index] = depth if current is None else max(current, depth)
        return points

    def _observe(self, judged: list[tuple[int, float | None]]) -> None:
        """Feed the latency histogram the judgements not seen yet."""
        for event_id, seconds in judged:
            self._judged_watermark = event_id
            if seconds is not None:
                self._histogram.observe(seconds)

    def _rejudge_row(self, row: dict[str, Any], now: datetime) -> dict[str, Any]:
        total, done = int(row["total"] or 0), int(row["done"] or 0)
        seen = self._rejudge_seen.setdefault(row["id"], deque(maxlen=120))
        seen.append((now.timestamp(), done))
        while seen and seen[0][0] < now.timestamp() - 60:
            seen.popleft()
        span = seen[-1][0] - seen[0][0]
        if span >= 2:
            rate = (seen[-1][1] - seen[0][1]) / span
        else:
            updated = stats_sql.parse_time(row["updated_at"])
            created = stats_sql.parse_time(row["created_at"])
            took = (updated - created).total_seconds() if updated and created else 0.0
            rate = done / took if took > 0 else 0.0
        running = row["state"] == RejudgeState.RUNNING
        eta = (total - done) / rate if running and rate > 0 else None
        return {
            "id": row["id"],
            "contest": row["contest_id"],
            "game": row["game"],
            "state": row["state"],
            "open": row["state"] in OPEN_REJUDGE_STATES,
            "total": total,
            "done": done,
            "rate_per_s": round(rate, 2),
            "eta_s": None if eta is None else round(eta, 1),
            "created_at": row["created_at"],
            "updated_at": row["updated_at"],
            "mode": row["mode"],
            "carried": int(row["carried"] or 0),
            "from": _ruleset(row, "from_"),
            "to": _ruleset(row, ""),
            "changes": self._previews.counts(row),
            "preview_url": f"/v1/rejudges/{quote(row['id'], safe='')}",
            "preview_page_url": f"/dashboard/rejudges/{quote(row['id'], safe='')}",
        }


class PreviewCounts:
    """How many scores and ranks a run judged through changes: the lengths of its summary's
    `changed` and `rank_changes` (`RejudgeRuns.summary`). An applied run's were recorded at
    apply and never change, so they are asked once; a ready run's are asked every time, and
    the store computes its preview again only when the data under its two rulesets changed."""

    def __init__(self, rejudges: RejudgeRuns) -> None:
        self._rejudges = rejudges
        self._applied: dict[str, dict[str, int] | None] = {}

    def counts(self, row: dict[str, Any]) -> dict[str, int] | None:
        """{"scores": n, "ranks": m} for a ready or applied run; None while it cannot say (and
        for a run applied before summaries were recorded)."""
        if row["state"] not in PREVIEW_STATES:
            return None
        if row["id"] in self._applied:
            return self._applied[row["id"]]
        run = Run(**fields_of({column.name: row[column.name] for column in rejudge_runs.c}))
        summary = self._rejudges.summary(run)
        found = summary.counts if summary is not None else None
        if run.state is RejudgeState.APPLIED:
            self._applied[run.id] = found
        return found

    def forget_all_but(self, run_ids: set[str]) -> None:
        """Drop the counts of runs no longer on the page."""
        for run_id in set(self._applied) - run_ids:
            del self._applied[run_id]


def _ruleset(row: dict[str, Any], prefix: str) -> dict[str, dict[str, Any]]:
    """The word list and rules data a run goes from (`prefix` "from_") or to (""): id, the name
    it went by when the run started, and every name it carries."""
    return {
        kind: {
            "id": row[f"{prefix}{kind}_id"],
            "name": row.get(f"{prefix}{kind}_name"),
            "names": row.get(f"{prefix}{kind}_names", []),
        }
        for kind in ("lexicon", "layout")
    }


def services_view(status: ReplicationStatus | None) -> dict[str, Any]:
    """The probes' records as the page and /metrics read them: the database (`dialect`,
    `primary`, `standbys`…), Redis (None without one) and the failovers seen, newest first."""
    if status is None:
        return {"database": None, "redis": None, "failovers": [],
                "failovers_seen": {service.value: 0 for service in Service}}  # fmt: skip
    database = status.database
    redis_status = status.redis
    return {
        "database": asdict(database)
        | {
            "replicated": database.replicated,
            "primary": database.primary,
            "sync_standbys": database.sync_standbys,
        },
        "redis": None
        if redis_status is None
        else asdict(redis_status) | {"primary": redis_status.primary},
        "failovers": [
            {"at": clock.format_time(f.at), "service": f.service.value, "old": f.old, "new": f.new}
            for f in status.failovers
        ],
        "failovers_seen": {service.value: n for service, n in status.failovers_seen.items()},
    }


def games_words() -> dict[str, dict[str, Any]]:
    """Each game's words, by name, for the contests and rejudge runs of that game: what its
    rules data is called and how its standings are spoken of (`api.pages.games.words`)."""
    return {
        name: {"rules_noun": game(name).rules_noun} | asdict(page_of(name).words)
        for name in names()
    }


def _contest_links(contest_id: str) -> dict[str, str]:
    """The leaderboard's JSON (public) and its page on the dashboard."""
    quoted = quote(contest_id, safe="")
    return {
        "leaderboard_url": f"/v1/contests/{quoted}/leaderboard",
        "leaderboard_page_url": f"/dashboard/contests/{quoted}/leaderboard",
    }


def _store_time() -> datetime:
    return clock.parse_time(clock.now())


class LatencyHistogram:
    """Cumulative upload-to-result seconds in Prometheus buckets (all judgements seen)."""

    def __init__(self) -> None:
        self.counts = [0] * (len(LATENCY_BUCKETS_S) + 1)
        self.sum = 0.0

    def observe(self, seconds: float) -> None:
        index = next((i for i, b in enumerate(LATENCY_BUCKETS_S) if seconds <= b), -1)
        self.counts[index] += 1
        self.sum += seconds

    def as_dict(self) -> dict[str, Any]:
        running, buckets = 0, []
        for bound, count in zip((*LATENCY_BUCKETS_S, math.inf), self.counts):
            running += count
            buckets.append(["+Inf" if bound == math.inf else bound, running])
        return {"buckets": buckets, "sum_s": round(self.sum, 6), "count": running}


def status_of(
    *, failed_recently: int, waiting: int, waiting_then: int | None, workers_online: int | None
) -> dict[str, Any]:
    """Red: failing (recent failures, or work waiting with no worker); amber: the backlog grew
    over the last minute, or no worker is online yet nothing waits.

    `areas` colours the figure each condition is about, so the page shows where to look."""
    red, amber = [], []
    areas = {"queue": "green", "workers": "unknown", "failures": "green"}
    if workers_online is not None:
        areas["workers"] = "green" if workers_online else "red"
    if failed_recently:
        red.append(f"{failed_recently} submission(s) failed in the last 5 min")
        areas["failures"] = "red"
    if waiting_then is not None and waiting - waiting_then > GROWTH_TOLERANCE:
        amber.append(f"backlog grew from {waiting_then} to {waiting} in the last minute")
        areas["queue"] = "amber"
    if workers_online == 0 and waiting > 0:
        red.append(f"{waiting} waiting and no worker online")
        areas["queue"] = "red"
    elif workers_online == 0:
        amber.append("no worker online: the next upload will wait")
    if red:
        return {"colour": "red", "label": "failing", "reasons": red + amber, "areas": areas}
    if amber:
        label = "backlog growing" if areas["queue"] == "amber" else "no worker online"
        return {"colour": "amber", "label": label, "reasons": amber, "areas": areas}
    return {"colour": "green", "label": "keeping up", "reasons": [], "areas": areas}


def _no_workers() -> dict[str, Any]:
    detail = "no Redis configured: worker heartbeats are not heard"
    return {"status": "unavailable", "detail": detail, "online": None, "slots": 0,
            "slots_known": False, "active": 0, "list": []}  # fmt: skip
