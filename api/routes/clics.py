"""The CLICS Contest API `2026-01` (icpc/ccs-specs), read-only, for Wordytaire contests: an
application of its own mounted at /clics, so that its errors take the spec's shape
({"code", "message"}) and its routes stay out of tilejudge's own OpenAPI document. What it
shows is mapped in `core.clics`; `docs/clics.md` says how.

Anyone may read it (the public role); `Authorization: Bearer <token>`, or HTTP basic auth with
the token as the password, reads it as the organiser (the admin token) or as a team of the
contest (its token). A contest's data is read once for every caller asking meanwhile
(`api.public`), and its event feed is served by this process's one poller (`api.clics_feed`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from api.clics_feed import FeedHub
from api.errors import CORE_ERRORS, ApiError, Unauthorized
from api.lookups import ID
from api.public import FRESH_PER_WINDOW
from api.services import Services, presented_token, same_token, services, team_of
from core import clics, clics_scoreboard, clock
from core.clics import ContestData, Role, Viewer
from core.clics_games import mapped
from core.errors import NotFound
from core.ports import ClicsReads
from core.records import Contest

PROVIDER_VERSION = "0.1.0"
Svc = Annotated[Services, Depends(services)]
# The collections, each as the viewer sees it at a moment.
COLLECTIONS: dict[str, Callable[[ContestData, Viewer, str], list[dict[str, Any]]]] = {
    "judgement-types": lambda data, viewer, now: list(clics.JUDGEMENT_TYPES),
    "languages": lambda data, viewer, now: clics.languages(data.contest),
    "problems": clics.problems,
    "groups": lambda data, viewer, now: [],
    "organizations": lambda data, viewer, now: [],
    "teams": lambda data, viewer, now: clics.teams(data.teams),
    "submissions": lambda data, viewer, now: clics.submissions(data),
    "judgements": clics.judgements,
    "runs": lambda data, viewer, now: [],
    "clarifications": lambda data, viewer, now: [],
}
router = APIRouter()


class BadRequest(ApiError):
    status, code = 400, "bad_request"


class Busy(ApiError):
    status, code = 503, "busy"


TOKEN = re.compile(r"[0-9]{1,18}")  # an event id (`isdigit` takes "²", which int() refuses)


def clics_app(parent: FastAPI) -> FastAPI:
    """The Contest API, to mount at /clics; it shares the parent's state (its services)."""
    app = FastAPI(title="CLICS Contest API", openapi_url=None, docs_url=None, redoc_url=None)
    app.state = parent.state
    app.add_middleware(CORSMiddleware, allow_origins=["*"], allow_methods=["GET"])
    for cls, (status, _, shown) in CORE_ERRORS.items():
        app.add_exception_handler(cls, _handler(status, shown))
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _invalid)
    app.include_router(router)
    return app


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"code": status, "message": message}, status, headers=headers)


def _handler(status: int, shown: str | None) -> Callable[[Request, Exception], Any]:
    async def handle(_: Request, exc: Exception) -> JSONResponse:
        return _error(status, shown or (str(exc.args[0]) if exc.args else str(exc)))

    return handle


async def _api_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    headers = dict(exc.headers or {})
    if exc.status == 401:
        headers.setdefault("WWW-Authenticate", 'Basic realm="tilejudge", Bearer')
    return _error(exc.status, exc.detail, headers)


async def _http_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    return _error(exc.status_code, str(exc.detail))


async def _invalid(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return _error(400, "; ".join(str(e.get("msg")) for e in exc.errors()) or "bad request")


# -- who asks, and what of --------------------------------------------------------------------


async def viewer(contest: str, request: Request, svc: Svc) -> Viewer:
    """The public without a token; the organiser with the admin token; with a team's token,
    that team in its own contest (and the public in any other). An unknown token is 401."""
    token = presented_token(request)
    if token is None:
        return Viewer()
    if same_token(token, svc.admin_token):
        return Viewer(Role.ADMIN)
    found = await team_of(request, svc, token) if token.isascii() else None
    if found is None:
        raise Unauthorized("unknown token")
    team, _ = found
    return Viewer(Role.TEAM, team.id) if team.contest_id == contest else Viewer()


Who = Annotated[Viewer, Depends(viewer)]


def _reader(svc: Services) -> tuple[ClicsReads, FeedHub]:
    if svc.clics is None or svc.clics_feed is None:
        raise NotFound("this API process does not serve the Contest API")
    return svc.clics, svc.clics_feed


def _well_formed(contest: str) -> None:
    """Only well-formed ids reach a cache key or SQL."""
    if not ID.fullmatch(contest):
        raise NotFound(f"no contest {contest[:64]!r}")


async def _data(svc: Services, contest: str) -> ContestData:
    """The whole contest, read once for every caller asking meanwhile; 404 for an unknown
    contest, and for one of a game the Contest API does not map."""
    reader, _ = _reader(svc)
    _well_formed(contest)
    data: ContestData | None = await svc.public.get(
        ("clics", contest), partial(reader.contest, contest), fresh=FRESH_PER_WINDOW
    )
    _mapped(contest, data.contest if data is not None else None)
    assert data is not None
    return data


def _mapped(contest_id: str, found: Contest | None) -> Contest:
    """The contest, or 404: for an unknown one, and one of a game the API does not map."""
    if found is None:
        raise NotFound(f"no contest {contest_id[:64]!r}")
    if mapped(found.game) is None:
        raise NotFound(
            f"contest {contest_id!r} is a {found.game} contest, which the Contest API does "
            "not serve (docs/clics.md)"
        )
    return found


# -- the endpoints ----------------------------------------------------------------------------


@router.get("/")
async def api_information() -> dict[str, Any]:
    return clics.api_information(PROVIDER_VERSION)


@router.get("/contests")
async def list_contests(svc: Svc) -> list[dict[str, Any]]:
    reader, _ = _reader(svc)
    found = await svc.public.get(("clics", "contests"), reader.contests, fresh=FRESH_PER_WINDOW)
    return [clics.contest_object(contest) for contest in found]


@router.get("/contests/{contest}")
async def get_contest(contest: str, svc: Svc, who: Who) -> dict[str, Any]:
    return clics.contest_object((await _data(svc, contest)).contest)


@router.get("/contests/{contest}/access")
async def access(contest: str, svc: Svc, who: Who) -> dict[str, Any]:
    await _data(svc, contest)
    return clics.access(who)


@router.get("/contests/{contest}/state")
async def state(contest: str, svc: Svc, who: Who) -> dict[str, Any]:
    return clics.state_object((await _data(svc, contest)).contest, clock.now())


@router.get("/contests/{contest}/scoreboard")
async def scoreboard(contest: str, svc: Svc, who: Who) -> dict[str, Any]:
    return clics_scoreboard.scoreboard(await _data(svc, contest), who, clock.now())


@router.get("/contests/{contest}/event-feed")
async def event_feed(
    contest: str,
    request: Request,
    svc: Svc,
    who: Who,
    since_token: Annotated[str | None, Query(max_length=32)] = None,
    since_id: Annotated[str | None, Query(max_length=32, description="2022-07's name")] = None,
    stream: bool = True,
) -> StreamingResponse:
    """NDJSON: a snapshot of every object, then each change as it happens (a newline when
    nothing has happened for a while); from `since_token` on, the changes after that token."""
    reader, hub = _reader(svc)
    _well_formed(contest)
    record = _mapped(contest, await svc.public.run(partial(svc.store.get_contest, contest)))
    last = await hub.last_event()
    given = since_token if since_token is not None else since_id
    snapshot = None
    address = request.client.host if request.client else ""
    refused = hub.refusal(who, address) if stream else None
    if refused is not None:
        raise Busy(f"{refused}; retry later", headers={"Retry-After": "5"})
    if given is not None:
        if not TOKEN.fullmatch(given) or int(given) > last:
            raise BadRequest(f"unknown since_token {given[:32]!r}")
        start = int(given)
    else:  # read after `last`: the snapshot holds every change up to it
        start, snapshot = last, await svc.public.run(partial(reader.contest, contest))
        record = snapshot.contest if snapshot is not None else record
    feed = hub.follow(record, who, start, snapshot, stream, address)
    return StreamingResponse(feed, media_type="application/x-ndjson")


@router.get("/contests/{contest}/{collection}")
async def collection(
    contest: str, collection: str, request: Request, svc: Svc, who: Who
) -> list[dict[str, Any]]:
    """A collection, filtered by any `<name>_id` query parameter (empty: null)."""
    found = _collection(collection, await _data(svc, contest), who)
    wanted = {k: v for k, v in request.query_params.items() if k.endswith("_id")}
    return [item for item in found if all((item.get(k) or "") == v for k, v in wanted.items())]


@router.get("/contests/{contest}/{collection}/{object_id}")
async def one(contest: str, collection: str, object_id: str, svc: Svc, who: Who) -> dict[str, Any]:
    found = _collection(collection, await _data(svc, contest), who)
    item = next((item for item in found if item.get("id") == object_id), None)
    if item is None:
        raise NotFound(f"no {collection} {object_id[:64]!r} in contest {contest!r}")
    return item


def _collection(name: str, data: ContestData, who: Viewer) -> list[dict[str, Any]]:
    render = COLLECTIONS.get(name)
    if render is None:
        raise NotFound(f"no endpoint {name[:64]!r}: see /clics/contests/{{id}}/access")
    return render(data, who, clock.now())
