"""What a contest's judging has produced so far: the public leaderboard, and the event log."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from api import schemas
from api.lookups import known_contest
from api.services import Admin, Svc

router = APIRouter()


@router.get(
    "/v1/contests/{contest}/leaderboard", response_model=schemas.Leaderboard, tags=["public"]
)
def leaderboard(contest: str, svc: Svc) -> schemas.Leaderboard:
    known_contest(svc, contest)
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
