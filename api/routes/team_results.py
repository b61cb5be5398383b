"""A contest's submissions with their results as their readers are served them, a page at a
time: a team's own, or with the admin token all of them. What `tilejudge audit --token`
compares with the transparency log: a result that is no team's best is on no standings, so
only its readers can check what they are served (docs/transparency.md)."""

from __future__ import annotations

import base64
from typing import Annotated, Any

from fastapi import APIRouter, Query

from api import schemas
from api.lookups import known_contest, shown
from api.routes.submissions import OUTCOMES
from api.services import AnyCaller, Services, Svc
from core import clock
from core.errors import NotFound, read_failure
from core.freeze import frozen
from core.records import Contest, ResultLine
from core.states import SubmissionState

router = APIRouter()
# A page: each row costs a read of its log leaves, so a page stays a few hundred reads.
PAGE, PAGE_MOST = 100, 500


@router.get(
    "/v1/contests/{contest}/submissions",
    response_model=schemas.SubmissionsPage,
    tags=["teams"],
)
def list_submissions(
    contest: str,
    svc: Svc,
    who: AnyCaller,
    after: Annotated[
        str, Query(pattern=r"^[A-Za-z0-9_-]{0,64}$", description="the last id of the page before")
    ] = "",
    limit: Annotated[int, Query(ge=1, le=PAGE_MOST)] = PAGE,
) -> schemas.SubmissionsPage:
    """The calling team's own submissions in the contest (the organiser: every submission),
    in id order, each as `GET /v1/submissions/{id}` shows it, with its entries the public log
    withholds while the contest is frozen; follow `next` until it is null. A team's token
    reads its own contest alone (404 for another)."""
    found = known_contest(svc, contest)
    team = who.team
    if team is not None and team.contest_id != found.id:
        raise NotFound(f"no contest {contest[:64]!r} for this team")
    lines = svc.store.results_page(found.id, after, limit, team.id if team else None)
    fields = svc.store.result_fields(
        found.game, [line.result_id for line in lines if line.result_id is not None]
    )
    leaves = svc.store.log_leaves_of([line.submission for line in lines])
    sealing = frozen(found, clock.now())
    rows = [
        _row(svc, found, line, fields, leaves.get(line.submission, []), sealing) for line in lines
    ]
    return schemas.SubmissionsPage(
        contest=found.id,
        team=team.id if team else None,
        submissions=rows,
        next=lines[-1].submission if len(lines) == limit else None,
    )


def _row(
    svc: Services,
    contest: Contest,
    line: ResultLine,
    fields: dict[int, dict[str, Any]],
    leaves: list[tuple[int, str, str | None]],
    sealing: bool,
) -> schemas.OwnSubmission:
    """The row `GET /v1/submissions/{id}` answers, from the page's reads: its result's
    fields and its log leaves (and, while frozen, its outcome entries the public bundles
    withhold)."""
    outcomes = [leaf for leaf, kind, _ in leaves if kind in OUTCOMES]
    failure: str | None = None
    if line.state == SubmissionState.FAILED:
        sub = svc.store.get_submission(line.submission)
        failure = sub.failure if sub is not None else None
    read = read_failure(failure)
    row = {
        "id": line.submission,
        "contest": contest.id,
        "team": line.team_id,
        "state": line.state,
        "received_at": line.received_at,
        "judged_at": line.judged_at,
        "lexicon": line.lexicon,
        "layout": line.layout,
        "failure": read[1] if read else None,
        "reason": read[0].value if read else None,
        "log_leaf": outcomes[-1] if outcomes else None,
        "sealed": _sealed(svc, contest.id, outcomes) if sealing else [],
    }
    own = fields.get(line.result_id) if line.result_id is not None else None
    return shown(contest.game, schemas.OwnSubmission, row, own)


def _sealed(svc: Services, contest_id: str, leaves: list[int]) -> list[dict[str, Any]]:
    """The outcome entries among `leaves` that are sealed: the public may not read them until
    the thaw, the submission's readers may (its team is served the verdict anyway)."""
    found = []
    for leaf in leaves:
        entries, sealed = svc.store.log_entries(contest_id, leaf, 1)
        if sealed == leaf and entries:
            found.append({"leaf": leaf, "entry": base64.b64encode(entries[0]).decode()})
    return found
