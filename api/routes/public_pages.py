"""The public pages: `/contests` (every contest, open, upcoming and closed) and
`/contests/{id}` (a contest's scoreboard, `?page=N`, `?big=1` for a projector), their live
stream `/contests/{id}/stream` and their stylesheet and script. Anyone may read them; they are
public reads, paced and shared like the JSON ones (`api.public`), under the dashboard's strict
Content-Security-Policy. docs/pages.md says what they show."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, Response, StreamingResponse

from api.lookups import well_formed
from api.pages import board, live
from api.pages.board import PAGES_MOST, LivePart
from api.pages.latest import Latest
from api.public import FRESH_PER_WINDOW
from api.routes.dashboard import SECURITY_HEADERS
from api.services import Services, Svc
from core import clock
from core.errors import NotFound

STATIC = Path(__file__).resolve().parents[1] / "static"
ASSETS = {"scoreboard.js": "text/javascript", "scoreboard.css": "text/css"}
router = APIRouter(include_in_schema=False)
Page = Annotated[int, Query(ge=1, le=PAGES_MOST, description="the board's page, 1 first")]


@router.get("/contests")
async def contests_page(svc: Svc) -> Response:
    contests = await svc.public.get(("contests",), svc.store.list_contests, fresh=FRESH_PER_WINDOW)
    return HTMLResponse(board.contests_page(contests, clock.now()), headers=SECURITY_HEADERS)


@router.get("/contests/{contest}")
async def scoreboard_page(
    contest: str,
    request: Request,
    svc: Svc,
    page: Page = 1,
    big: Annotated[bool, Query()] = False,
) -> Response:
    """The scoreboard, drawn on the server; its script follows the stream."""
    try:
        part = await _part(request, svc, contest, page)
    except NotFound as exc:
        return HTMLResponse(
            board.not_found_page(str(exc.args[0]) if exc.args else "No such contest."),
            status_code=404,
            headers=SECURITY_HEADERS,
        )
    return HTMLResponse(board.scoreboard_page(contest, part, page, big), headers=SECURITY_HEADERS)


@router.get("/contests/{contest}/stream")
async def scoreboard_stream(contest: str, request: Request, svc: Svc, page: Page = 1) -> Response:
    """The scoreboard page's live part as server-sent events (`board`, its HTML), sent again
    whenever it changes; 503 with Retry-After beyond the followers' bounds (`api.pages.live`)."""
    await _part(request, svc, contest, page)  # 404 for an unknown contest
    followers = _followers(request)
    address = request.client.host if request.client else ""
    refused = followers.refusal(address)
    if refused is not None:
        raise live.Busy(f"{refused}; retry later", headers={"Retry-After": live.RETRY_AFTER_S})
    stream = live.follow(followers, address, partial(_part, request, svc, contest, page))
    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    return StreamingResponse(stream, media_type="text/event-stream", headers=headers)


@router.get("/pages/static/{name}")
def asset(name: str) -> FileResponse:
    if name not in ASSETS:
        raise NotFound(f"no page asset {name[:64]!r}")
    headers = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}
    return FileResponse(STATIC / name, media_type=ASSETS[name], headers=headers)


async def _part(request: Request, svc: Services, contest: str, page: int) -> LivePart:
    """The page's live part, from the contest's board as computed at most once a second in
    this process for every reader and follower of every page of it (`api.public`): however
    many read, the board costs one computation a second, and a page is at most a second old,
    or while the next computation runs, a few (`api.pages.latest`). The JSON board, which
    fewer poll, is computed afresh for the first few a second."""
    key = well_formed(contest)
    whole = await _latest(request).get(
        key,
        partial(svc.public.get, ("scoreboard", key), partial(board.whole_board, svc, contest)),
    )
    return board.part(whole, page)


def _latest(request: Request) -> Latest[board.Board]:
    state = request.app.state
    found: Latest[board.Board] | None = getattr(state, "page_boards", None)
    if found is None:
        found = state.page_boards = Latest()
    return found


def _followers(request: Request) -> live.Followers:
    """The app's followers' count, made on first use (each test's app has its own)."""
    state = request.app.state
    found: live.Followers | None = getattr(state, "page_followers", None)
    if found is None:
        found = state.page_followers = live.Followers()
    return found
