"""The operations dashboard: its sign-in, the page and its assets, the pages it links to (a
contest's leaderboard, a rejudge run's changes), `/v1/stats` and `/metrics`.

The page is static HTML, CSS and JS shipped in `api/static`; it draws everything from
`/v1/stats`, which it fetches every second with the HttpOnly session cookie set by the sign-in
form. The cookie holds a signed session, never the admin token, and counts only on the page's
own reads (`api.services.DASHBOARD_READS`) and on the pages below `/dashboard/`.
"""

from __future__ import annotations

import functools
import hashlib
import html
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote, urlsplit

from fastapi import APIRouter, Depends, FastAPI, Form, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.routing import APIRoute
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import TypeAdapter

from api import dashboard_pages
from api.errors import Forbidden
from api.lookups import known_contest
from api.metrics import exposition
from api.routes import disputes, rejudges, standings
from api.services import (
    ADMIN_COOKIE,
    SESSION_MAX_AGE_S,
    Admin,
    Caller,
    MetricsAccess,
    Services,
    Session,
    Svc,
    same_token,
)
from api.stats import StatsCollector, build_collector
from core.errors import NotFound, Throttled

# Package data beside the `api` package; a file path, because FileResponse sends files.
STATIC = Path(__file__).resolve().parents[1] / "static"
ASSETS = {
    "dashboard.js": "text/javascript",
    "dashboard_charts.js": "text/javascript",
    "dashboard.css": "text/css",
}
COOKIE_MAX_AGE_S = SESSION_MAX_AGE_S
# Nothing the page loads or calls may leave the API's origin.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    # Not "no-referrer": under it a browser sends `Origin: null` with the page's own forms,
    # which the sign-in and sign-out origin check must tell apart from another site's.
    "Referrer-Policy": "same-origin",
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
async def dashboard(request: Request, svc: Svc) -> Response:
    """The page, or the sign-in form without a valid session cookie."""
    if await svc.public.run(partial(_session, request, svc)) is None:
        return _sign_in_form()
    return FileResponse(STATIC / "dashboard.html", media_type="text/html", headers=SECURITY_HEADERS)


@router.get("/dashboard/contests/{contest}/leaderboard", include_in_schema=False)
def leaderboard_page(contest: str, request: Request, svc: Svc) -> Response:
    """The contest's leaderboard as a page: what `/v1/contests/{contest}/leaderboard` answers."""
    if _session(request, svc) is None:
        return _sign_in_form()
    found = known_contest(svc, contest)
    board = _as_served(standings.full_board(contest, svc))
    body = dashboard_pages.leaderboard_body(board, found.title)
    if "disputed" in board:  # a game whose logs may have rivals (`core.disputes`)
        shown = disputes.as_json(svc, contest, svc.store.disputes(found))
        body += dashboard_pages.disputes_body(contest, shown)
    json_url = f"/v1/contests/{quote(contest, safe='')}/leaderboard"
    page = dashboard_pages.page(f"Leaderboard · {contest}", body, json_url=json_url)
    return HTMLResponse(page, headers=SECURITY_HEADERS)


@router.post("/dashboard/contests/{contest}/disputes/{match}/settle", include_in_schema=False)
def settle_dispute(
    contest: str,
    match: disputes.MatchKey,
    request: Request,
    svc: Svc,
    submission: Annotated[str, Form(pattern=r"^[A-Za-z0-9_-]{1,64}$")],
) -> Response:
    """The leaderboard page's settle button (a plain form: the page runs no script), with the
    session cookie; back to the page, which shows the game counted."""
    _same_origin(request)
    if _session(request, svc) is None:
        return _sign_in_form()
    disputes.settle(svc, contest, match, submission, "dashboard")
    page = f"/dashboard/contests/{quote(contest, safe='')}/leaderboard"
    return RedirectResponse(page, status_code=303)


@router.get("/dashboard/rejudges/{run_id}", include_in_schema=False)
def rejudge_page(run_id: str, request: Request, svc: Svc) -> Response:
    """A rejudge run as a page: what `/v1/rejudges/{run_id}` answers (its preview, or once
    applied what changed), with its word lists and layouts by name."""
    if _session(request, svc) is None:
        return _sign_in_form()
    run = rejudges.show_rejudge(run_id, svc, Caller(admin=True, team=None))
    row = svc.dashboard.rejudge(run["id"]) or {}
    names = {
        key: row.get(f"{key}_name") for key in ("lexicon", "layout", "from_lexicon", "from_layout")
    }
    heading = "What changed" if run["state"] == "applied" else "Preview"
    body = dashboard_pages.rejudge_body(run, names)
    json_url = f"/v1/rejudges/{quote(run['id'], safe='')}"
    page = dashboard_pages.page(f"{heading} · run {run['id'][:8]}", body, json_url=json_url)
    return HTMLResponse(page, headers=SECURITY_HEADERS)


@router.get("/dashboard/static/{name}", include_in_schema=False)
def asset(name: str) -> FileResponse:
    if name not in ASSETS:
        raise NotFound(f"no dashboard asset {name[:64]!r}")
    headers = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}
    return FileResponse(STATIC / name, media_type=ASSETS[name], headers=headers)


@router.post("/dashboard/login", include_in_schema=False)
async def login(request: Request, svc: Svc, token: Annotated[str, Form()] = "") -> Response:
    """Sign in with the admin token. A client address that failed `TILEJUDGE_LOGIN_FAILURES`
    times in the last minute is refused (429) until the oldest failure is a minute old."""
    _same_origin(request)
    client = client_key(request)
    # A wrong token is counted in the same step that decides whether it may be told so (one
    # atomic check), so a burst of guesses sent at once gets no more than the limit through;
    # a right one is refused alike while the address is at its limit, so a 429 tells nothing.
    if not _is_admin_token(token.strip(), svc):
        try:
            await svc.public.run(partial(svc.login_failures.check, client))
        except Throttled as exc:
            return _too_many_sign_ins(exc.retry_after)
        return _sign_in_form("That is not the admin token.", status=401)
    wait = await svc.public.run(partial(svc.login_failures.wait, client))
    if wait is not None:
        return _too_many_sign_ins(wait)
    response = RedirectResponse("/dashboard", status_code=303)
    response.set_cookie(
        ADMIN_COOKIE,
        svc.sessions.issue(),
        max_age=COOKIE_MAX_AGE_S,
        path="/",
        httponly=True,  # the page's script never sees the session
        samesite="strict",  # and no other site can make the browser send it
        secure=secure_cookies(request, svc),
    )
    return response


def _too_many_sign_ins(wait: int) -> Response:
    message = f"Too many failed sign-ins from this address: try again in {wait} s."
    return _sign_in_form(message, status=429, headers={"Retry-After": str(wait)})


def client_key(request: Request) -> str:
    """Who failed a sign-in: a digest of the client's address; the address itself is not kept.
    It is the address that connected, unless FORWARDED_ALLOW_IPS names the proxy in front:
    then uvicorn takes it from that proxy's X-Forwarded-For, and from no one else's, so a
    client choosing its own header changes nothing (`devstack.children.uvicorn_options`)."""
    host = request.client.host if request.client else ""
    return hashlib.sha256(host.encode()).hexdigest()[:32]


def secure_cookies(request: Request, svc: Services) -> bool:
    """Whether the cookie goes out `Secure`: the browser reached the API over https, as the
    request's scheme says (uvicorn takes it from X-Forwarded-Proto when the proxy is trusted)
    or as TILEJUDGE_PUBLIC_URL does."""
    public = svc.settings.public_url or ""
    return request.url.scheme == "https" or public.startswith("https://")


@router.post("/dashboard/logout", include_in_schema=False)
def logout(request: Request, svc: Svc) -> Response:
    """Revoke the session in every API process and clear the cookie; without a live session
    there is nothing to revoke, and the cookie is cleared all the same."""
    _same_origin(request)
    session = _session(request, svc)
    if session is not None:
        svc.sessions.revoke(session)
    response = RedirectResponse("/dashboard", status_code=303)
    response.delete_cookie(
        ADMIN_COOKIE,
        path="/",
        httponly=True,
        samesite="strict",
        secure=secure_cookies(request, svc),
    )
    return response


@router.get("/v1/stats", tags=["admin"])
def stats(who: Admin, collector: Stats) -> JSONResponse:
    """What the dashboard draws: queues, workers, throughput, latency, failures, contests,
    rejudge runs, the event tail and the services (primaries, replicas, failovers seen).
    Computed at most once a second for all callers."""
    return JSONResponse(collector.get(), headers={"Cache-Control": "no-store"})


@router.get(
    "/metrics",
    tags=["health"],
    responses={
        200: {"description": "Prometheus text exposition", "content": {CONTENT_TYPE_LATEST: {}}}
    },
)
async def metrics(request: Request, svc: Svc, with_ids: MetricsAccess) -> Response:
    """Prometheus exposition of the same snapshot (counts only: no tokens, names or hosts).

    Families labelled by contest, rejudge run or database and Redis node address only for
    the admin or metrics token; with
    `TILEJUDGE_METRICS_TOKEN` set, only those tokens are answered. Rendered at most once a
    second for every scraper, on the public thread budget."""

    def render() -> bytes:
        return exposition(stats_collector(request, svc).get, with_ids=with_ids)

    body = await svc.public.get(("metrics", with_ids), render)
    return Response(body, media_type=CONTENT_TYPE_LATEST)


def _as_served(board: dict[str, Any]) -> dict[str, Any]:
    """A leaderboard through its JSON route's response model, as that route answers it: the
    page shows no field the JSON leaves out."""
    model = _leaderboard_model()
    served: dict[str, Any] = model.dump_python(model.validate_python(board), mode="json")
    return served


@functools.cache
def _leaderboard_model() -> TypeAdapter[Any]:
    [model] = [
        route.response_model
        for route in standings.router.routes
        if isinstance(route, APIRoute) and route.endpoint is standings.leaderboard
    ]
    return TypeAdapter(model)


def _session(request: Request, svc: Services) -> Session | None:
    cookie = request.cookies.get(ADMIN_COOKIE)
    return svc.sessions.check(cookie) if cookie else None


def _same_origin(request: Request) -> None:
    """Refuse a form posted from another site. Browsers send `Origin` with every POST, so an
    absent one is a client that is no browser (curl, a test); `null` (a sandboxed or
    privacy-stripped origin) is foreign. The host is compared, not the scheme: behind a proxy
    that ends TLS the API hears http for a page served over https."""
    origin = request.headers.get("origin")
    if origin is None:
        return
    host = request.headers.get("host", "")
    if not host or urlsplit(origin).netloc.lower() != host.lower():
        raise Forbidden("the dashboard's forms must be posted from its own origin")


def _is_admin_token(token: str, svc: Services) -> bool:
    return bool(token) and same_token(token, svc.admin_token)


def _sign_in_form(
    message: str = "", status: int = 200, headers: dict[str, str] | None = None
) -> HTMLResponse:
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
    return HTMLResponse(page, status_code=status, headers=SECURITY_HEADERS | (headers or {}))
