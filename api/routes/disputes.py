"""Disputed games (`core.disputes`): the games whose rival valid logs count for nothing until the
organiser chooses one, listed to the organiser and to the clubs that sent them, and settled by
the organiser (here, or with the form on the dashboard's leaderboard page, `api.routes.dashboard`)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path
from fastapi.concurrency import run_in_threadpool

from api import schemas
from api.lookups import known_contest
from api.routes import standings
from api.services import Admin, AnyCaller, Services, Svc
from core.disputes import Dispute, Settlement, visible

router = APIRouter()

MatchKey = Annotated[
    str, Path(pattern=r"^[0-9a-f]{64}$", description="the game's match key (its seed and players)")
]


@router.get(
    "/v1/contests/{contest}/disputes", response_model=schemas.DisputeList, tags=["admin", "team"]
)
def list_disputes(contest: str, svc: Svc, who: AnyCaller) -> dict[str, Any]:
    """The contest's disputed games: each game with rival valid logs (the same seed and
    players, other turns) none of which counts until the organiser settles it, with each
    log's uploaders, receipt time and winners. The organiser sees every one; a team those it
    sent one of the logs of (403 for another contest's)."""
    found = known_contest(svc, contest)
    shown = visible(svc.store.disputes(found), found, None if who.admin else who.team)
    return {"contest": contest, "disputes": as_json(svc, contest, shown)}


@router.post(
    "/v1/contests/{contest}/disputes/{match}/settle",
    response_model=schemas.SettlementOut,
    tags=["admin"],
)
async def settle_dispute(
    contest: str, match: MatchKey, body: schemas.SettleIn, svc: Svc, who: Admin
) -> dict[str, Any]:
    """Settle a disputed game: the log named counts, every other log of the game is passed
    over in its favour (a `dispute.settled` event and a `settled` entry in the contest's
    transparency log). Allowed after the close: settling is no upload. 404 for a log not of
    this game, 422 for an invalid log, 409 for a log not judged yet or a game with no other
    valid log. A game settled so already answers `changed` false and records nothing."""
    settled = await run_in_threadpool(settle, svc, contest, match, body.submission, "admin")
    return settlement_json(settled)


def settle(svc: Services, contest: str, match: str, chosen: str, by: str) -> Settlement:
    """Settle the game, and forget the standings this process shares (they change)."""
    found = known_contest(svc, contest)
    settled = svc.store.settle(found, match, chosen, by)
    if settled.changed:
        svc.public.forget(*standings.views(contest))
    return settled


def as_json(svc: Services, contest: str, disputes: list[Dispute]) -> list[dict[str, Any]]:
    """Disputes as the API shows them, each log's teams by name."""
    names = svc.store.team_names(contest) if disputes else {}
    return [
        {
            "match": dispute.match,
            "logs": [
                {
                    "submission": log.submission,
                    "teams": sorted(names.get(team, team) for team in log.teams),
                    "received_at": log.received_at,
                    "winners": list(log.winners),
                }
                for log in dispute.logs
            ],
        }
        for dispute in disputes
    ]


def settlement_json(settled: Settlement) -> dict[str, Any]:
    return {
        "contest": settled.contest_id,
        "match": settled.match,
        "chosen": settled.chosen,
        "passed_over": list(settled.passed_over),
        "changed": settled.changed,
    }
