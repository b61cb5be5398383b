"""The team page's routes, the only ones its session cookie counts on (the cookie's path is
`/team`, and nothing else reads it): the sign-in form and sign-out, the page and its assets,
its list of the team's submissions, its upload, and each submission's report page, JSON report
and receipt. Every other route, and every write of the JSON API, takes a token in a header.

Each POST is refused from another site's page (its `Origin`), besides the cookie being
SameSite=strict; failed sign-ins are throttled per client address as the dashboard's are. The
upload goes through the API's own intake steps (`api.routes.submissions`): the same checks,
limits and one-sentence errors."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from fastapi import APIRouter, Form, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response

from api.errors import Forbidden, Unauthorized
from api.lookups import ID
from api.public import FRESH_PER_WINDOW
from api.routes import submissions
from api.routes.dashboard import SECURITY_HEADERS, STATIC, client_key, secure_cookies
from api.services import Caller, Services, Svc, same_token
from api.team_pages import html
from api.team_pages.games import e, game_page
from api.team_pages.listing import team_rows
from api.team_pages.log_check import log_check, receipt_check
from api.team_sessions import TEAM_COOKIE, TEAM_COOKIE_PATH, TeamSession
from core import report_blobs
from core.contests import token_hash
from core.errors import NotFound, ReportPending, Throttled
from core.records import Contest, Submission, Team

router = APIRouter(include_in_schema=False)
ASSETS = {"team.js": "text/javascript", "team.css": "text/css"}
# A report drawn as a page at most this large once its runs are folded; the JSON has the rest.
REPORT_PAGE_MOST = 16 * 1024 * 1024
SIGNED_OUT = "sign in again on /team: the team session has expired or was signed out"


@dataclass(frozen=True)
class SignedIn:
    session: TeamSession
    team: Team
    contest: Contest

    @property
    def caller(self) -> Caller:
        return Caller(admin=False, team=self.team)


def signed_in(request: Request, svc: Services) -> SignedIn | None:
    """The team whose live session the request's cookie holds, read from the store (a team
    deleted meanwhile has none), or None."""
    cookie = request.cookies.get(TEAM_COOKIE)
    found = svc.team_sessions.check(cookie) if cookie else None
    if found is None:
        return None
    contest = svc.store.get_contest(found[1].contest_id)
    return SignedIn(found[0], found[1], contest) if contest is not None else None


def required(request: Request, svc: Services) -> SignedIn:
    found = signed_in(request, svc)
    if found is None:
        raise Unauthorized(SIGNED_OUT)
    return found


def same_origin(request: Request) -> None:
    """Refuse a POST sent from another site's page, as the dashboard does: an absent `Origin`
    is a client that is no browser; `null` is foreign; the host is compared, not the scheme."""
    origin = request.headers.get("origin")
    if origin is None:
        return
    host = request.headers.get("host", "")
    if not host or urlsplit(origin).netloc.lower() != host.lower():
        raise Forbidden("the team page's forms must be sent from its own origin")


def _html(body: str, status: int = 200, headers: dict[str, str] | None = None) -> HTMLResponse:
    return HTMLResponse(body, status_code=status, headers=SECURITY_HEADERS | (headers or {}))


@router.get("/team")
def team_home(request: Request, svc: Svc) -> Response:
    """The team's page, or the sign-in form without a live session."""
    found = signed_in(request, svc)
    if found is None:
        return _html(html.sign_in())
    listing = team_rows(svc.store, found.team, found.contest)
    limit = svc.settings.max_upload_bytes
    return _html(html.team_page(found.team, found.contest, listing, limit))


@router.post("/team/login")
async def login(request: Request, svc: Svc, token: Annotated[str, Form()] = "") -> Response:
    """Sign in with the team token. A client address that failed `TILEJUDGE_LOGIN_FAILURES`
    times in the last minute is refused (429) until its oldest failure is a minute old; the
    count is the dashboard's, so guesses cannot alternate between the two forms."""
    same_origin(request)
    client = client_key(request)
    team = await svc.public.run(partial(_team_of, svc, token.strip()))
    if team is None:
        try:
            await svc.public.run(partial(svc.login_failures.check, client))
        except Throttled as exc:
            return _too_many_sign_ins(exc.retry_after)
        return _html(html.sign_in("That is not a team token."), status=401)
    wait = await svc.public.run(partial(svc.login_failures.wait, client))
    if wait is not None:
        return _too_many_sign_ins(wait)
    response = RedirectResponse("/team", status_code=303)
    response.set_cookie(
        TEAM_COOKIE,
        svc.team_sessions.issue(team),
        max_age=svc.team_sessions.lifetime_s,
        path=TEAM_COOKIE_PATH,
        httponly=True,  # the page's script never sees the session
        samesite="strict",  # and no other site can make the browser send it
        secure=secure_cookies(request, svc),
    )
    return response


def _team_of(svc: Services, token: str) -> Team | None:
    if not token or not token.isascii() or same_token(token, svc.admin_token):
        return None
    return svc.store.team_by_token_hash(token_hash(token))


def _too_many_sign_ins(wait: int) -> Response:
    message = f"Too many failed sign-ins from this address: try again in {wait} s."
    return _html(html.sign_in(message), status=429, headers={"Retry-After": str(wait)})


@router.post("/team/logout")
def logout(request: Request, svc: Svc) -> Response:
    """Revoke the session in every API process and clear the cookie."""
    same_origin(request)
    found = signed_in(request, svc)
    if found is not None:
        svc.team_sessions.revoke(found.session)
    response = RedirectResponse("/team", status_code=303)
    response.delete_cookie(
        TEAM_COOKIE,
        path=TEAM_COOKIE_PATH,
        httponly=True,
        samesite="strict",
        secure=secure_cookies(request, svc),
    )
    return response


@router.get("/team/static/{name}")
def asset(name: str) -> FileResponse:
    if name not in ASSETS:
        raise NotFound(f"no team page asset {name[:64]!r}")
    headers = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}
    return FileResponse(STATIC / name, media_type=ASSETS[name], headers=headers)


@router.get("/team/submissions.json")
async def listing(request: Request, svc: Svc) -> JSONResponse:
    """The team's latest submissions with their state and result, as the page lists them. One
    computation per team at a time, shared by all its open pages (`api.public`)."""
    found = await svc.public.run(partial(required, request, svc))
    rows = await svc.public.get(
        ("team-page", found.team.id),
        partial(team_rows, svc.store, found.team, found.contest),
        fresh=FRESH_PER_WINDOW,
    )
    return JSONResponse(rows, headers={"Cache-Control": "no-store"})


@router.post("/team/upload")
async def upload(request: Request, svc: Svc) -> JSONResponse:
    """An upload from the page's form (multipart, field `file`), with the session cookie: the
    API's upload route's checks and answer, the team taken from the session. The session and
    the admission are checked before a byte of the body is read."""
    same_origin(request)
    found = await run_in_threadpool(required, request, svc)
    team, contest = await run_in_threadpool(
        submissions.admit, svc, found.team, found.contest, found.contest.id
    )
    return await submissions.take_upload(request, svc, team, contest)


@router.get("/team/submissions/{submission_id}")
def report_page(submission_id: str, request: Request, svc: Svc) -> Response:
    """A submission's report as a page (the team's own, or a game log of its contest, as
    `GET /v1/submissions/{id}` allows), with its receipt checked against the log."""
    found = signed_in(request, svc)
    if found is None:
        return _html(html.sign_in(), status=401)
    sub = _readable(svc, found, submission_id)
    if sub is None:
        return _html(html.not_found(), status=404)
    result = svc.store.current_result(sub.id)
    if result is None:
        shown = f'<p class="empty">{e(_not_yet(sub))}</p>'
        judged = None
    else:
        shown = _drawn(svc, found, sub, result)
        judged = {"judged_at": result.judged_at}
    checks = [
        receipt_check(svc.intake.receipt_key, sub),
        log_check(svc.store, svc.log_signer, sub, found.team.id),
    ]
    return _html(html.report_page(sub, judged, shown, checks))


def _readable(svc: Services, found: SignedIn, submission_id: str) -> Submission | None:
    """The submission if this team may read it (`GET /v1/submissions/{id}`'s rule), else None:
    another team's ids are answered as missing, never as forbidden."""
    if not ID.fullmatch(submission_id):
        return None
    try:
        return submissions.readable_submission(svc, found.caller, submission_id)
    except NotFound:
        return None


def _not_yet(sub: Submission) -> str:
    if sub.state == "failed":
        return "Judging failed: see the reason in your list of submissions."
    return f"Not judged yet ({sub.state}): your page shows when it is; then reload this one."


def _drawn(svc: Services, found: SignedIn, sub: Submission, result: Any) -> str:
    """The report, its runs of alike lines folded, drawn by its game's module; a report too
    large to draw as a page is left to its JSON. Its reads count as the JSON's do."""
    try:
        svc.report_reads.check(found.team.id)
    except Throttled as exc:
        return f'<p class="error">{e(exc)}: try again in {exc.retry_after} s.</p>'
    limit = report_blobs.max_report_bytes(svc.settings.max_upload_bytes)
    try:
        stored = svc.reports.stream(sub, result)
    except ReportPending as exc:
        wait = exc.retry_after
        return f'<p class="empty">This report is being made: reload this page in {wait} s.</p>'
    pieces = report_blobs.runs(report_blobs.unpacked(stored, limit))
    body, size = [], 0
    for piece in pieces:
        size += len(piece)
        if size > REPORT_PAGE_MOST:
            return '<p class="empty">This report is too large to show as a page: read its JSON.</p>'
        body.append(piece)
    return game_page(found.contest.game).report_html(json.loads(b"".join(body)))


@router.get("/team/submissions/{submission_id}/report.json")
def report_json(
    submission_id: str,
    request: Request,
    svc: Svc,
    lines: Literal["each", "runs"] = "each",
) -> Response:
    """The SPEC JSON report, as `GET /v1/submissions/{id}/report` sends it to the team."""
    found = required(request, svc)
    return submissions.get_report(submission_id, request, svc, found.caller, lines)


@router.get("/team/submissions/{submission_id}/receipt.json")
def receipt_json(submission_id: str, request: Request, svc: Svc) -> JSONResponse:
    """The receipt, as `GET /v1/submissions/{id}/receipt` answers it, as a file to keep."""
    found = required(request, svc)
    receipt = submissions.get_receipt(submission_id, svc, found.caller)
    disposition = f'attachment; filename="receipt-{receipt["id"]}.json"'
    return JSONResponse(receipt, headers={"Content-Disposition": disposition})
