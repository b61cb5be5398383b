"""The operations dashboard: its sign-in, the page and its assets, `/v1/stats` and `/metrics`.

The page is static HTML, CSS and JS served from `api/static`; it draws everything from
`/v1/stats`, which it fetches every second with the HttpOnly admin cookie set by the sign-in form.
"""

from __future__ import annotations

import hmac
import html
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Form, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector as PrometheusCollector

from api.services import ADMIN_COOKIE, Admin, Services, Svc
from api.stats import StatsCollector, build_collector
from core.errors import NotFound

STATIC = Path(__file__).resolve().parent / "static"
ASSETS = {"dashboard.js": "text/javascript", "dashboard.css": "text/css"}
COOKIE_MAX_AGE_S = 12 * 3600
# Nothing the page loads or calls may leave the API's origin.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
_building = threading.Lock()


@asynccontextmanager
async def _stop_collector(app: FastAPI) -> AsyncIterator[None]:
    yield
    collector: StatsCollector | None = getattr(app.state, "stats_collector", None)
    if collector is not None:
        collector.close()


router = APIRouter(lifespan=_stop_collector)


def stats_collector(request: Request, svc: Svc) -> StatsCollector:
    """One collector per app, built on first use (so importing or starting the API connects
    nothing and a test's app gets its own)."""
    state = request.app.state
    with _building:
        found: StatsCollector | None = getattr(state, "stats_collector", None)
        if found is None:
            found = state.stats_collector = build_collector(svc)
    return found


Stats = Annotated[StatsCollector, Depends(stats_collector)]


@router.get("/dashboard", include_in_schema=False)
def dashboard(request: Request, svc: Svc) -> Response:
    """The page, or the sign-in form without a valid admin cookie."""
    if not _signed_in(request, svc):
        return _sign_in_form()
    return FileResponse(STATIC / "dashboard.html", media_type="text/html", headers=SECURITY_HEADERS)


@router.get("/dashboard/static/{name}", include_in_schema=False)
def asset(name: str) -> FileResponse:
    if name not in ASSETS:
        raise NotFound(f"no dashboard asset {name[:64]!r}")
    headers = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}
    return FileResponse(STATIC / name, media_type=ASSETS[name], headers=headers)


@router.post("/dashboard/login", include_in_schema=False)
def login(request: Request, svc: Svc, token: Annotated[str, Form()] = "") -> Response:
    if not _is_admin_token(token.strip(), svc):
        return _sign_in_form("That is not the admin token.", status=401)
    response = RedirectResponse("/dashboard", status_code=303)
    response.set_cookie(
        ADMIN_COOKIE,
        token.strip(),
        max_age=COOKIE_MAX_AGE_S,
        path="/",
        httponly=True,  # the page's script never sees the token
        samesite="strict",  # and no other site can make the browser send it
        secure=request.url.scheme == "https",
    )
    return response


@router.post("/dashboard/logout", include_in_schema=False)
def logout() -> Response:
    response = RedirectResponse("/dashboard", status_code=303)
    response.delete_cookie(ADMIN_COOKIE, path="/", httponly=True, samesite="strict")
    return response


@router.get("/v1/stats", tags=["admin"])
def stats(who: Admin, collector: Stats) -> JSONResponse:
    """What the dashboard draws: queues, workers, throughput, latency, failures, contests,
    rejudge runs and the event tail. Computed at most once a second for all callers."""
    return JSONResponse(collector.get(), headers={"Cache-Control": "no-store"})


@router.get(
    "/metrics",
    tags=["health"],
    responses={
        200: {"description": "Prometheus text exposition", "content": {CONTENT_TYPE_LATEST: {}}}
    },
)
def metrics(collector: Stats) -> Response:
    """Prometheus exposition of the same snapshot (counts only: no tokens, names or hosts)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotMetrics(collector))
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


def _signed_in(request: Request, svc: Services) -> bool:
    return _is_admin_token(request.cookies.get(ADMIN_COOKIE, ""), svc)


def _is_admin_token(token: str, svc: Services) -> bool:
    return bool(token) and hmac.compare_digest(token.encode(), svc.admin_token.encode())


def _sign_in_form(message: str = "", status: int = 200) -> HTMLResponse:
    notice = f'<p class="notice" role="alert">{html.escape(message)}</p>' if message else ""
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tilejudge · sign in</title><link rel="icon" href="data:,">
<link rel="stylesheet" href="/dashboard/static/dashboard.css"></head>
<body class="signin"><main class="signin-card">
<h1>tilejudge operations</h1>
<p>Sign in with the admin token: <code>$TILEJUDGE_ADMIN_TOKEN</code>, or the file
<code>admin-token</code> in the stack's home directory.</p>{notice}
<form method="post" action="/dashboard/login">
<label for="token">Admin token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<button type="submit">Sign in</button></form></main></body></html>"""
    return HTMLResponse(page, status_code=status, headers=SECURITY_HEADERS)


class SnapshotMetrics(PrometheusCollector):
    """Translates the cached snapshot into `tilejudge_*` metric families at each scrape."""

    def __init__(self, collector: StatsCollector) -> None:
        self._collector = collector

    def collect(self) -> Iterator[Metric]:
        snap = self._collector.get()
        yield from _queue_metrics(snap["queues"])
        totals = snap["totals"]
        yield CounterMetricFamily("tilejudge_uploads", "Uploads accepted.", totals["uploads"])
        yield CounterMetricFamily("tilejudge_judged", "Submissions judged.", totals["judged"])
        failures = CounterMetricFamily(
            "tilejudge_failures", "Submissions failed for good, by reason.", labels=["reason"]
        )
        for row in snap["failures"]["by_reason"]:
            failures.add_metric([row["reason"]], row["count"])
        yield failures
        yield _gauge("tilejudge_backlog", "Submissions accepted and not judged yet.",
                     totals["backlog"])  # fmt: skip
        histogram = snap["latency_histogram"]
        yield HistogramMetricFamily(
            "tilejudge_upload_to_result_seconds",
            "Seconds from an upload's receipt to its result.",
            buckets=[(str(bound), count) for bound, count in histogram["buckets"]],
            sum_value=histogram["sum_s"],
        )
        yield from _worker_metrics(snap["workers"])
        yield from _rejudge_metrics(snap["rejudges"])
        contests = GaugeMetricFamily(
            "tilejudge_contest_submissions", "Submissions by contest and state.",
            labels=["contest", "state"],
        )  # fmt: skip
        for contest in snap["contests"]:
            for state, count in contest["counts"].items():
                contests.add_metric([contest["id"], state], count)
        yield contests
        level = {"green": 0, "amber": 1, "red": 2}[snap["status"]["colour"]]
        yield _gauge("tilejudge_status", "0 keeping up, 1 backlog growing, 2 failing.", level)


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)


def _queue_metrics(queues: dict[str, Any]) -> Iterator[Metric]:
    up = queues["status"] == "ok"
    yield _gauge("tilejudge_broker_up", "1 if the broker's Redis answered.", 1 if up else 0)
    if not up:
        return
    depth = GaugeMetricFamily(
        "tilejudge_queue_depth", "Messages waiting in a queue, all priorities.", labels=["queue"]
    )
    for name in ("live", "bulk"):
        depth.add_metric([name], queues[name]["depth"])
    yield depth
    yield _gauge("tilejudge_queue_unacked", "Messages delivered, not acknowledged yet.",
                 queues["unacked"])  # fmt: skip


def _worker_metrics(workers: dict[str, Any]) -> Iterator[Metric]:
    if workers["online"] is None:
        return
    yield _gauge("tilejudge_workers_online", "Celery workers heard from recently.",
                 workers["online"])  # fmt: skip
    yield _gauge("tilejudge_worker_slots", "Pool processes of the online workers.",
                 workers["slots"])  # fmt: skip
    yield _gauge("tilejudge_worker_active_tasks", "Tasks running on the online workers.",
                 workers["active"])  # fmt: skip


def _rejudge_metrics(runs: list[dict[str, Any]]) -> Iterator[Metric]:
    total = GaugeMetricFamily(
        "tilejudge_rejudge_total", "Submissions in an open rejudge run.", labels=["run", "contest"]
    )
    done = GaugeMetricFamily(
        "tilejudge_rejudge_done", "Submissions re-judged so far.", labels=["run", "contest"]
    )
    for run in runs:
        if run["open"]:
            total.add_metric([run["id"], run["contest"]], run["total"])
            done.add_metric([run["id"], run["contest"]], run["done"])
    yield total
    yield done
