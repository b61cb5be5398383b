"""The HTTP contract: lexicons, contests, teams, submissions, leaderboard, events, health."""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
import uuid
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from api import schemas
from api.errors import RequestTimeout, TooLarge, UnsupportedMediaType
from api.services import Admin, AnyCaller, BearerToken, Services, Svc, token_hash, uploader
from core import clock, receipts, report_blobs
from core.errors import Invalid, NotFound, PublishFailed, Unavailable
from core.intake import check_opened
from core.records import Contest, Team
from core.registry import register_lexicon
from judge import Layout, LayoutError, Lexicon, LexiconError, default_layout

router = APIRouter()
ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
UPLOAD_READ_SECONDS = 60.0


@router.post("/v1/lexicons", status_code=201, response_model=schemas.LexiconOut, tags=["admin"])
async def add_lexicon(
    request: Request,
    svc: Svc,
    who: Admin,
    name: Annotated[str, Query(min_length=1, max_length=200)],
) -> schemas.LexiconOut:
    """Register a word list (text/plain, one lower-case word per line). Content-addressed."""
    data = await _read_body(request, limit=64 * 1024 * 1024)
    try:
        lexicon = await run_in_threadpool(Lexicon.from_bytes, data)
    except LexiconError as exc:
        raise Invalid(f"not a word list: {exc}") from exc
    if len(lexicon) == 0:
        raise Invalid("the word list is empty")
    row = await run_in_threadpool(
        lambda: register_lexicon(svc.store, svc.blobs, lexicon, name=name, source="api", by="admin")
    )
    return schemas.LexiconOut(id=row["id"], name=row["name"], words=row["words"])


@router.post("/v1/contests", status_code=201, response_model=schemas.ContestOut, tags=["admin"])
def create_contest(body: schemas.ContestIn, svc: Svc, who: Admin) -> schemas.ContestOut:
    try:
        opens, closes = clock.parse_time(body.opens_at), clock.parse_time(body.closes_at)
    except ValueError as exc:
        raise Invalid(f"opens_at/closes_at: {exc}") from exc
    if closes <= opens:
        raise Invalid("closes_at must be after opens_at")
    lexicon = svc.store.find_lexicon(body.lexicon)
    if lexicon is None:
        raise Invalid(f"no lexicon with id or name {body.lexicon!r}; POST /v1/lexicons first")
    layout_id = _layout_id(svc, body.layout)
    contest = Contest(
        id=body.id,
        title=body.title,
        opens_at=clock.format_time(opens),
        closes_at=clock.format_time(closes),
        lexicon_id=lexicon["id"],
        layout_id=layout_id,
        created_at=clock.now(),
    )
    svc.store.create_contest(contest)
    with contextlib.suppress(PublishFailed):  # best effort: workers load it on demand anyway
        svc.intake.publisher.preload([contest.lexicon_id])
    return _contest_out(contest)


def _layout_id(svc: Svc, wanted: str | None) -> str:
    if wanted is None:
        layout = default_layout()
        svc.store.add_layout(
            id=layout.id, name=layout.name, content=layout.to_json().decode(), created_by="system"
        )
        return layout.id
    row = svc.store.find_layout(wanted)
    if row is None:
        raise Invalid(f"no layout with id or name {wanted!r}")
    return str(row["id"])


@router.post("/v1/layouts", status_code=201, tags=["admin"])
async def add_layout(
    request: Request,
    svc: Svc,
    who: Admin,
    name: Annotated[str, Query(min_length=1, max_length=200)],
) -> dict[str, str]:
    """Register a layout (JSON: period, bonus rows, letters). Content-addressed."""
    try:
        layout = Layout.from_json(await _read_body(request, limit=1024 * 1024))
    except LayoutError as exc:
        raise Invalid(f"not a layout: {exc}") from exc
    svc.store.add_layout(
        id=layout.id, name=name, content=layout.to_json().decode(), created_by="admin"
    )
    return {"id": layout.id, "name": name}


@router.get("/v1/contests/{contest}", response_model=schemas.ContestOut, tags=["public"])
def get_contest(contest: str, svc: Svc) -> schemas.ContestOut:
    return _contest_out(_contest(svc, contest))


@router.post(
    "/v1/contests/{contest}/teams", status_code=201, response_model=schemas.TeamOut, tags=["admin"]
)
def create_team(contest: str, body: schemas.TeamIn, svc: Svc, who: Admin) -> schemas.TeamOut:
    _contest(svc, contest)
    token = "tj_" + secrets.token_urlsafe(32)  # never starts with "-", which CLIs misread
    team = Team(
        id=uuid.uuid4().hex,
        contest_id=contest,
        name=body.name,
        token_hash=token_hash(token),
        created_at=clock.now(),
    )
    svc.store.create_team(team)
    return schemas.TeamOut(id=team.id, name=team.name, token=token)


@router.get("/v1/contests/{contest}/teams", tags=["admin"])
def list_teams(contest: str, svc: Svc, who: Admin) -> dict[str, object]:
    _contest(svc, contest)
    names = svc.store.team_names(contest)
    return {
        "contest": contest,
        "teams": [
            {"id": tid, "name": name} for tid, name in sorted(names.items(), key=lambda t: t[1])
        ],
    }


@router.delete("/v1/teams/{team_id}", tags=["admin"])
def delete_team(team_id: str, svc: Svc, who: Admin) -> dict[str, object]:
    """Delete a team with its uploads, results and reports (rows and S3 objects)."""
    if not ID.fullmatch(team_id) or svc.store.get_team(team_id) is None:
        raise NotFound(f"no team {team_id[:64]!r}")
    keys = svc.store.delete_team(team_id, by="admin")
    svc.uploaders.forget_team(team_id)
    for key in keys:
        svc.blobs.delete(key)
    return {"team": team_id, "deleted_objects": len(keys)}


@router.post(
    "/v1/contests/{contest}/submissions",
    status_code=202,
    tags=["teams"],
    response_model=schemas.SubmissionAccepted,
    openapi_extra={"requestBody": {"content": {"text/plain": {"schema": {"type": "string"}}}}},
)
async def submit(contest: str, request: Request, svc: Svc, token: BearerToken) -> JSONResponse:
    """Upload a move list: raw text/plain body, or multipart/form-data with a field `file`.

    After the contest closes, only a retry of an upload received in time is answered (with
    that submission, flagged `X-Tilejudge-Duplicate`); anything else is refused with 403."""
    # Two trips to the thread pool in all, the body read on the event loop between them: the
    # team, the contest, whether it opened and the rate limit before a byte is read, then intake.
    team, found = await run_in_threadpool(_admit, svc, token, contest)
    data = await _upload_bytes(request, svc.settings.max_upload_bytes)
    received_at = clock.now()
    if received_at > found.closes_at:
        late = await run_in_threadpool(svc.intake.accept_late, team, found, data, received_at)
        submission, created = late, False
    else:
        submission, created = await svc.intake.accept(team, found, data, received_at)
    # The documented SubmissionAccepted, built directly: the busiest route skips FastAPI's
    # validation of its own answer.
    return JSONResponse(
        {
            "id": submission.id,
            "sha256": submission.sha256,
            "received_at": submission.received_at,
            "receipt": submission.receipt,
        },
        status_code=202,
        headers=None if created else {"X-Tilejudge-Duplicate": "true"},
    )


def _admit(svc: Services, token: str, contest_id: str) -> tuple[Team, Contest]:
    """Who uploads, to which contest, whether it is open and whether the team may send more
    now: the checks made before the body is read (401, 403, 404, 429)."""
    team, found = uploader(svc, token)
    if found.id != contest_id:
        raise NotFound(f"no contest {contest_id[:64]!r} for this team")
    svc.limiter.check(team.id)
    # Whether it came too late is decided once the body is in (a retry of an upload made in
    # time still gets its answer then); too early is decided now.
    check_opened(found, clock.now())
    return team, found


@router.get("/v1/submissions/{submission_id}", response_model=schemas.SubmissionOut, tags=["teams"])
def get_submission(submission_id: str, svc: Svc, who: AnyCaller) -> schemas.SubmissionOut:
    sub = _readable_submission(svc, who, submission_id)
    result = svc.store.current_result(sub.id)
    return schemas.SubmissionOut(
        id=sub.id,
        contest=sub.contest_id,
        team=sub.team_id,
        state=sub.state,
        score=result["score"] if result else None,
        legal=result["legal"] if result else None,
        illegal=result["illegal"] if result else None,
        received_at=sub.received_at,
        judged_at=result["judged_at"] if result else None,
        lexicon=result["lexicon_id"] if result else None,
        layout=result["layout_id"] if result else None,
        failure=sub.failure,
    )


@router.get("/v1/submissions/{submission_id}/report", tags=["teams"])
def get_report(submission_id: str, request: Request, svc: Svc, who: AnyCaller) -> Response:
    """The SPEC JSON report of the current result (sent gzipped to a client that accepts it,
    as it is stored)."""
    sub = _readable_submission(svc, who, submission_id)
    result = svc.store.current_result(sub.id)
    if result is None:
        raise NotFound(f"submission {sub.id} is {sub.state}; no report yet")
    stored = svc.blobs.get(result["report_key"])
    headers = {"Vary": "Accept-Encoding"}
    if report_blobs.is_packed(stored) and report_blobs.accepts_gzip(
        request.headers.get("accept-encoding", "")
    ):
        headers["Content-Encoding"] = report_blobs.CONTENT_ENCODING
    else:
        stored = report_blobs.unpack(stored)
    return Response(stored, media_type="application/json", headers=headers)


@router.get("/v1/submissions/{submission_id}/receipt", tags=["teams"])
def get_receipt(submission_id: str, svc: Svc, who: AnyCaller) -> dict[str, str]:
    sub = _readable_submission(svc, who, submission_id)
    return {
        "id": sub.id,
        "team": sub.team_id,
        "contest": sub.contest_id,
        "sha256": sub.sha256,
        "received_at": sub.received_at,
        "receipt": sub.receipt,
    }


@router.post("/v1/receipts/verify", response_model=schemas.ReceiptCheck, tags=["public"])
def verify_receipt(body: schemas.ReceiptIn, svc: Svc) -> schemas.ReceiptCheck:
    """Check that a receipt was issued by this server for exactly these fields."""
    valid = receipts.verify(
        svc.intake.receipt_key,
        body.receipt,
        submission=body.id,
        team=body.team,
        contest=body.contest,
        sha256=body.sha256,
        received_at=body.received_at,
    )
    return schemas.ReceiptCheck(valid=valid)


@router.get(
    "/v1/contests/{contest}/leaderboard", response_model=schemas.Leaderboard, tags=["public"]
)
def leaderboard(contest: str, svc: Svc) -> schemas.Leaderboard:
    _contest(svc, contest)
    entries = [schemas.LeaderboardEntry(**e) for e in svc.store.leaderboard(contest)]
    return schemas.Leaderboard(contest=contest, entries=entries)


@router.get("/v1/events", tags=["admin"])
def list_events(
    svc: Svc,
    who: Admin,
    after: Annotated[int, Query(ge=0, le=2**62)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> dict[str, object]:
    found = svc.store.events_after(after, limit)
    return {"events": found, "next": found[-1]["id"] if found else after}


@router.get("/healthz", tags=["health"])
def healthz() -> dict[str, str]:
    return {"status": "ok"}


_READINESS = {
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "properties": {
                    "ready": {"type": "boolean"},
                    "checks": {"type": "object", "additionalProperties": {"type": "string"}},
                },
                "required": ["ready", "checks"],
            }
        }
    }
}


@router.get(
    "/readyz",
    tags=["health"],
    responses={
        200: {"description": "Redis, S3 and SQL answer", **_READINESS},
        503: {"description": "a dependency is down (which one: `checks`)", **_READINESS},
    },
)
def readyz(svc: Svc) -> JSONResponse:
    checks: dict[str, str] = {}
    for name, probe in (
        ("sql", svc.store.ping),
        ("s3", svc.blobs.ping),
        ("redis", _redis_ping(svc)),
    ):
        try:
            probe()
            checks[name] = "ok"
        except Exception as exc:
            checks[name] = f"unavailable: {type(exc).__name__}"
    ready = all(v == "ok" for v in checks.values())
    return JSONResponse({"ready": ready, "checks": checks}, status_code=200 if ready else 503)


def _redis_ping(svc: Svc):  # type: ignore[no-untyped-def]
    def ping() -> None:
        if svc.redis is None:
            raise Unavailable("no Redis configured")
        svc.redis.ping()

    return ping


def _contest(svc: Svc, contest_id: str) -> Contest:
    # Only well-formed ids reach SQL: PostgreSQL refuses a NUL byte with an error, not a miss.
    found = svc.store.get_contest(contest_id) if ID.fullmatch(contest_id) else None
    if found is None:
        raise NotFound(f"no contest {contest_id[:64]!r}")
    return found


def _contest_out(contest: Contest) -> schemas.ContestOut:
    return schemas.ContestOut(
        id=contest.id,
        title=contest.title,
        opens_at=contest.opens_at,
        closes_at=contest.closes_at,
        lexicon=contest.lexicon_id,
        layout=contest.layout_id,
    )


def _readable_submission(svc: Svc, who: AnyCaller, submission_id: str):  # type: ignore[no-untyped-def]
    sub = svc.store.get_submission(submission_id) if ID.fullmatch(submission_id) else None
    # Another team's submission is reported as missing, not forbidden: ids leak nothing.
    if sub is None or not who.may_read(sub.team_id):
        raise NotFound(f"no submission {submission_id[:64]!r}")
    return sub


async def _upload_bytes(request: Request, limit: int) -> bytes:
    content_type = request.headers.get("content-type", "text/plain").split(";")[0].strip().lower()
    if content_type in ("text/plain", "application/octet-stream", ""):
        return await _read_body(request, limit)
    if content_type == "multipart/form-data":
        await _read_body(request, limit + 64 * 1024)  # cached by Starlette for form() below
        async with request.form() as form:  # closes the spooled temporary files it made
            upload = form.get("file")
            if upload is None or isinstance(upload, str):
                raise Invalid("multipart upload needs a file field named 'file'")
            data = await upload.read()
        if len(data) > limit:
            raise TooLarge(f"upload is over the {limit}-byte limit")
        return data
    raise UnsupportedMediaType(f"send text/plain or multipart/form-data, not {content_type!r}")


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise TooLarge(f"upload is over the {limit}-byte limit")
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(UPLOAD_READ_SECONDS):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise TooLarge(f"upload is over the {limit}-byte limit")
                chunks.append(chunk)
    except TimeoutError:
        raise RequestTimeout(
            f"the upload took over {UPLOAD_READ_SECONDS:.0f} s to arrive"
        ) from None
    body = b"".join(chunks)
    request._body = body
    return body
