"""Submissions: the upload itself, then its state, its report and its receipt, and checking a
receipt."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from itertools import chain
from typing import Literal

import structlog
from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, StreamingResponse

from api import schemas
from api.body import upload_bytes
from api.lookups import ID, known_contest, shown
from api.routes.games import submission_model
from api.services import AnyCaller, BearerToken, Caller, Services, Svc, uploader
from core import clock, freeze, receipts, report_blobs
from core.errors import NotFound, read_failure
from core.intake import check_opened, may_upload, no_log_right
from core.records import Contest, Submission, Team
from core.upload_hints import upload_hint

router = APIRouter()
log = structlog.get_logger("tilejudge.api")


@router.post(
    "/v1/contests/{contest}/submissions",
    status_code=202,
    tags=["teams"],
    response_model=schemas.SubmissionAccepted,
    openapi_extra={"requestBody": {"content": {"text/plain": {"schema": {"type": "string"}}}}},
)
async def submit(contest: str, request: Request, svc: Svc, token: BearerToken) -> JSONResponse:
    """Upload a move list (a Crosstiles contest: a game log): raw text/plain body, or
    multipart/form-data with a field `file`.

    After the contest closes, only a retry of an upload received in time is answered (with
    that submission, flagged `X-Tilejudge-Duplicate`); anything else is refused with 403. A
    Crosstiles contest takes logs only from teams the organiser allowed (403 otherwise); a
    game already in the contest, uploaded again by any team in any bytes (line endings, notes,
    spacing), is answered with the submission it already is, even after the close; a log with
    the seed and players of another but other turns is taken as a rival log of that game (the
    standings count the one valid log; two valid ones are a dispute the organiser settles:
    `/v1/contests/{contest}/disputes`).

    An upload that is empty, holds a NUL byte, is not UTF-8, or reads as another game's is
    accepted and judged all the same (the rules give it a result), and the answer carries a
    `hint` saying so."""
    # Two trips to the thread pool in all, the body read on the event loop between them: the
    # team, the contest, whether it opened and the rate limit before a byte is read, then intake.
    team, found = await run_in_threadpool(_admit, svc, token, contest)
    return await take_upload(request, svc, team, found)


async def take_upload(request: Request, svc: Services, team: Team, found: Contest) -> JSONResponse:
    """The upload's body read and taken by intake, once `admit` let it in; the 202 answer. The
    same steps for the API's route and the team page's upload form."""
    data = await upload_bytes(request, svc.settings.max_upload_bytes)
    received_at = clock.now()
    if received_at > found.closes_at:
        late = await svc.intake.accept_late(team, found, data, received_at)
        submission, created = late, False
    else:
        submission, created = await svc.intake.accept(team, found, data, received_at)
    leaf = submission.log_leaf
    if leaf is None:  # a retry: its upload's leaf, as the first answer gave it
        leaf = await run_in_threadpool(_upload_leaf, svc, submission.id, team.id)
    # The documented SubmissionAccepted, built directly: the busiest route skips FastAPI's
    # validation of its own answer.
    answer: dict[str, object] = {
        "id": submission.id,
        "sha256": submission.sha256,
        "received_at": submission.received_at,
        "receipt": submission.receipt,
        # Its upload's leaf in the contest's transparency log (`GET .../log` proves it).
        "log_leaf": leaf,
    }
    # Accepted and judged all the same (the rules give it a result); the team hears at once.
    hint = upload_hint(found.game, data)
    if hint is not None:
        answer["hint"] = hint
    return JSONResponse(
        answer,
        status_code=202,
        headers=None if created else {"X-Tilejudge-Duplicate": "true"},
    )


def _upload_leaf(svc: Services, submission_id: str, team_id: str) -> int | None:
    """The leaf of this team's upload of the submission in its contest's log (a shared game
    has one upload entry a team that sent it)."""
    return next(
        (
            leaf
            for leaf, kind, team in svc.store.log_leaves(submission_id)
            if kind == "upload" and team == team_id
        ),
        None,
    )


def _admit(svc: Services, token: str, contest_id: str) -> tuple[Team, Contest]:
    """Who uploads, to which contest, whether it is open and whether the team may send more
    now: the checks made before the body is read (401, 403, 404, 429)."""
    team, found = uploader(svc, token)
    return admit(svc, team, found, contest_id)


def admit(svc: Services, team: Team, found: Contest, contest_id: str) -> tuple[Team, Contest]:
    """Whether `team` of the contest `found` may upload to `contest_id` now (403, 404, 429)."""
    if found.id != contest_id:
        raise NotFound(f"no contest {contest_id[:64]!r} for this team")
    if not may_upload(team, found):
        # What this process remembers may predate a grant: the store says (the group commit
        # checks again in its transaction, in case the right is taken back meanwhile).
        fresh = svc.store.get_team(team.id)
        if fresh is None or not may_upload(fresh, found):
            raise no_log_right(team.id, found.id)
        svc.uploaders.forget_team(team.id)
    svc.limiter.check(team.id)
    # Whether it came too late is decided once the body is in (a retry of an upload made in
    # time still gets its answer then); too early is decided now.
    check_opened(found, clock.now())
    return team, found


@router.get("/v1/submissions/{submission_id}", response_model=submission_model(), tags=["teams"])
def get_submission(submission_id: str, svc: Svc, who: AnyCaller) -> schemas.SubmissionOut:
    """The submission's state and, once judged, its result in its game's own fields (`result`),
    some of them beside the score too (a move list's `legal` and `illegal`)."""
    sub = readable_submission(svc, who, submission_id)
    contest = known_contest(svc, sub.contest_id)
    result = svc.store.current_result(sub.id)
    fields = None
    if result is not None:
        fields = svc.store.result_fields(contest.game, [result.id]).get(result.id)
    row = {
        "id": sub.id,
        "contest": sub.contest_id,
        "team": sub.team_id,
        "state": sub.state,
        "received_at": sub.received_at,
        "judged_at": result.judged_at if result else None,
        "lexicon": result.lexicon_id if result else None,
        "layout": result.rules_id if result else None,
        **_failure(sub.failure),
        "log_leaf": next(
            (leaf for leaf, kind, _ in reversed(svc.store.log_leaves(sub.id)) if kind in OUTCOMES),
            None,
        ),
    }
    return shown(contest.game, schemas.SubmissionOut, row, fields)


OUTCOMES = ("verdict", "failed")  # the log entries that state a submission's outcome


def _failure(recorded: str | None) -> dict[str, str | None]:
    """A failure as a team sees it: its reason code and that code's sentence, never the text
    recorded (older rows hold an exception's message: an endpoint, a key, a constraint)."""
    read = read_failure(recorded)
    if read is None:
        return {"failure": None, "reason": None}
    return {"failure": read[1], "reason": read[0].value}


@router.get("/v1/submissions/{submission_id}/report", tags=["teams"])
def get_report(
    submission_id: str,
    request: Request,
    svc: Svc,
    who: AnyCaller,
    lines: Literal["each", "runs"] = "each",
) -> Response:
    """The SPEC JSON report of the current result, streamed: sent gzipped as it is stored to a
    client that accepts gzip, otherwise unpacked a piece at a time. `lines=runs` sends every run
    of consecutive identical illegal lines as one object with `through` (its last line) and
    `count`, so that the report's size follows what it says, not how often it says it.

    At most `TILEJUDGE_REPORT_READS` reads a minute per team (and for the organiser): a large
    report costs its unpacking at every read. A light upload's report is made on its first
    read (`core.reports`): 409 if this server's judge does not find the recorded result."""
    svc.report_reads.check(who.team.id if who.team is not None else "admin")
    sub = readable_submission(svc, who, submission_id)
    result = svc.store.current_result(sub.id)
    if result is None:
        raise NotFound(f"submission {sub.id} is {sub.state}; no report yet")
    stored = svc.reports.stream(sub, result)
    first = next(stored, b"")
    pieces = chain([first], stored)
    headers = {"Vary": "Accept-Encoding"}
    gzip_ok = report_blobs.accepts_gzip(request.headers.get("accept-encoding", ""))
    if lines == "each" and gzip_ok and report_blobs.is_packed(first):
        headers["Content-Encoding"] = report_blobs.CONTENT_ENCODING
        return StreamingResponse(pieces, media_type="application/json", headers=headers)
    limit = report_blobs.max_report_bytes(svc.settings.max_upload_bytes)
    body = report_blobs.unpacked(pieces, limit)
    if lines == "runs":
        body = report_blobs.runs(body)
        if gzip_ok:
            headers["Content-Encoding"] = report_blobs.CONTENT_ENCODING
            body = report_blobs.packed_stream(body)
    return StreamingResponse(_logged(body, sub.id), media_type="application/json", headers=headers)


def _logged(pieces: Iterator[bytes], submission_id: str) -> Iterator[bytes]:
    """The pieces; a stored report that cannot be unpacked ends the response early (its status
    is sent already), and is logged."""
    try:
        yield from pieces
    except (report_blobs.ReportTooLarge, ValueError, zlib.error) as exc:
        log.error("report_unreadable", submission=submission_id, error=str(exc))
        raise ReportUnreadable(f"report of {submission_id}: {exc}") from exc


class ReportUnreadable(RuntimeError):
    """A stored report failed to unpack after its response began: the connection is cut."""


@router.get("/v1/submissions/{submission_id}/receipt", tags=["teams"])
def get_receipt(submission_id: str, svc: Svc, who: AnyCaller) -> dict[str, str]:
    sub = readable_submission(svc, who, submission_id)
    return {
        "id": sub.id,
        "team": sub.team_id,
        "contest": sub.contest_id,
        "sha256": sub.sha256,
        "received_at": sub.received_at,
        "receipt": sub.receipt,
    }


@router.post("/v1/receipts/verify", response_model=schemas.ReceiptCheck, tags=["public"])
async def verify_receipt(body: schemas.ReceiptIn, svc: Svc) -> schemas.ReceiptCheck:
    """Check that a receipt was issued by this server for exactly these fields (one HMAC: on
    the event loop, taking no thread)."""
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


def readable_submission(svc: Services, who: Caller, submission_id: str) -> Submission:
    sub = svc.store.get_submission(submission_id) if ID.fullmatch(submission_id) else None
    # Another team's submission is reported as missing, not forbidden: ids leak nothing.
    if sub is None or not who.may_read(sub) or _frozen_for(svc, who, sub):
        raise NotFound(f"no submission {submission_id[:64]!r}")
    return sub


def _frozen_for(svc: Services, who: Caller, sub: Submission) -> bool:
    """Whether a game log another team sent is one this team may not read now: its contest is
    frozen and the public may not see the log's live verdict (`core.freeze`), unless this team
    sent the log too. Other teams read a game log because its verdict is on the public
    standings; while frozen, it may not be."""
    if who.team is None or who.team.id == sub.team_id:
        return False
    contest = svc.store.get_contest(sub.contest_id)
    return (
        contest is not None
        and freeze.live_verdict_hidden(contest, sub.received_at, clock.now())
        and svc.store.copy_of(sub.id, who.team.id) is None
    )
