"""Submissions: the upload itself, then its state, its report and its receipt, and checking a
receipt."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from api import schemas
from api.body import upload_bytes
from api.lookups import ID
from api.services import AnyCaller, BearerToken, Caller, Services, Svc, uploader
from core import clock, receipts, report_blobs
from core.errors import NotFound
from core.intake import check_opened
from core.records import Contest, Submission, Team

router = APIRouter()


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
    data = await upload_bytes(request, svc.settings.max_upload_bytes)
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


def _readable_submission(svc: Services, who: Caller, submission_id: str) -> Submission:
    sub = svc.store.get_submission(submission_id) if ID.fullmatch(submission_id) else None
    # Another team's submission is reported as missing, not forbidden: ids leak nothing.
    if sub is None or not who.may_read(sub.team_id):
        raise NotFound(f"no submission {submission_id[:64]!r}")
    return sub
