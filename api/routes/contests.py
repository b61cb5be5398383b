"""Contests and their teams: create, list, read, close and thaw a contest; create, list, change
(the right to upload game logs) and delete teams."""

from __future__ import annotations

from functools import partial
from typing import Literal

from fastapi import APIRouter

from api import schemas
from api.lookups import ID, known_contest, well_formed
from api.public import FRESH_PER_WINDOW
from api.routes import standings
from api.services import Admin, ApiCaches, Svc
from core import clock, contests, freeze
from core.games import game, names
from core.records import Contest

router = APIRouter()


@router.post("/v1/contests", status_code=201, response_model=schemas.ContestOut, tags=["admin"])
def create_contest(body: schemas.ContestIn, svc: Svc, who: Admin) -> schemas.ContestOut:
    asked = contests.ContestAsked(
        id=body.id,
        title=body.title,
        # The schema has checked that the times parse.
        opens_at=clock.parse_time(body.opens_at),
        closes_at=clock.parse_time(body.closes_at),
        lexicon=body.lexicon,
        rules=body.layout,
        game=body.game,
        freeze_at=clock.parse_time(body.freeze_at) if body.freeze_at is not None else None,
        options=body.options,
    )
    created = contests.create_contest(
        asked, contests=svc.store, rulesets=svc.store, publisher=svc.intake.publisher
    )
    return _contest_out(created)


@router.get("/v1/games", tags=["public"])
async def list_games() -> dict[str, list[dict[str, object]]]:
    """The games a contest can be created for: each one's name, what its rules data beside the
    word list is called, and whether its uploads name players (shared by whoever sends them)."""
    return {
        "games": [
            {
                "name": name,
                "rules": game(name).rules_noun,
                "shared_uploads": game(name).shared_uploads,
            }
            for name in names()
        ]
    }


@router.get("/v1/contests", response_model=schemas.ContestList, tags=["public"])
async def list_contests(svc: Svc) -> schemas.ContestList:
    """Every contest, by id, with its window and whether it takes uploads now."""
    contests = await svc.public.get(("contests",), svc.store.list_contests, fresh=FRESH_PER_WINDOW)
    now = clock.now()
    return schemas.ContestList(contests=[_contest_out(c, now) for c in contests])


@router.get("/v1/contests/{contest}", response_model=schemas.ContestOut, tags=["public"])
async def get_contest(contest: str, svc: Svc) -> schemas.ContestOut:
    found = await svc.public.get(
        ("contest", well_formed(contest)),
        partial(known_contest, svc, contest),
        fresh=FRESH_PER_WINDOW,
    )
    return _contest_out(found)


@router.post("/v1/contests/{contest}/close", response_model=schemas.ContestClosed, tags=["admin"])
def close_contest(contest: str, svc: Svc, who: Admin) -> schemas.ContestClosed:
    """Close the contest now, in every API process at once: an upload received from now on is
    refused with 403, while a retry of bytes received in time still gets its submission back.
    Closing a contest that has closed already changes nothing (`was_open` false)."""
    closing, was_open = contests.close_contest(
        well_formed(contest), by="admin", contests=svc.store, caches=ApiCaches(svc, standings.views)
    )
    return schemas.ContestClosed(**_contest_out(closing).model_dump(), was_open=was_open)


@router.post("/v1/contests/{contest}/thaw", response_model=schemas.ContestThawed, tags=["admin"])
def thaw_contest(contest: str, svc: Svc, who: Admin) -> schemas.ContestThawed:
    """Reveal the frozen standings now: the public sees every verdict, under the live
    ruleset, in every API process within a second. Thawing again changes nothing (`thawed`
    false); thawing before `freeze_at` cancels the freeze. A contest created without a freeze
    has nothing to thaw: 409."""
    shown, now_thawed = contests.thaw_contest(
        well_formed(contest), by="admin", contests=svc.store, caches=ApiCaches(svc, standings.views)
    )
    return schemas.ContestThawed(**_contest_out(shown).model_dump(), thawed=now_thawed)


@router.post(
    "/v1/contests/{contest}/teams", status_code=201, response_model=schemas.TeamOut, tags=["admin"]
)
def create_team(contest: str, body: schemas.TeamIn, svc: Svc, who: Admin) -> schemas.TeamOut:
    """A team and its token (shown this once). `uploads_logs` grants it the right to upload
    game logs, which a Crosstiles contest takes only from teams that have it."""
    team, token = contests.create_team(
        well_formed(contest),
        body.name,
        uploads_logs=body.uploads_logs,
        contests=svc.store,
        teams=svc.store,
    )
    return schemas.TeamOut(id=team.id, name=team.name, token=token, uploads_logs=team.uploads_logs)


@router.get("/v1/contests/{contest}/teams", tags=["admin"])
def list_teams(contest: str, svc: Svc, who: Admin) -> dict[str, object]:
    found = known_contest(svc, contest)
    return {
        "contest": contest,
        "game": found.game,
        "teams": [
            {"id": team.id, "name": team.name, "uploads_logs": team.uploads_logs}
            for team in svc.store.contest_teams(contest)
        ],
    }


@router.patch("/v1/teams/{team_id}", response_model=schemas.TeamShown, tags=["admin"])
def change_team(team_id: str, body: schemas.TeamChange, svc: Svc, who: Admin) -> schemas.TeamShown:
    """Grant or take back a team's right to upload game logs. It holds for every upload
    committed from now on, in every API process."""
    if not ID.fullmatch(team_id):
        raise contests.no_team(team_id)
    team = contests.change_team(
        team_id,
        uploads_logs=body.uploads_logs,
        by="admin",
        teams=svc.store,
        caches=ApiCaches(svc, standings.views),
    )
    return schemas.TeamShown(
        id=team.id, name=team.name, contest=team.contest_id, uploads_logs=team.uploads_logs
    )


@router.delete("/v1/teams/{team_id}", tags=["admin"])
def delete_team(team_id: str, svc: Svc, who: Admin) -> dict[str, object]:
    """Delete a team with its uploads, results and reports (rows and S3 objects). A game
    another team uploaded too stays, passed to the earliest such team and judged again from
    its copy."""
    if not ID.fullmatch(team_id):
        raise contests.no_team(team_id)
    deleted = contests.delete_team(
        team_id,
        by="admin",
        teams=svc.store,
        blobs=svc.blobs,
        publisher=svc.intake.publisher,
        caches=ApiCaches(svc, standings.views),
    )
    return {
        "team": team_id,
        "deleted_objects": len(deleted.keys),
        "handed_on": deleted.handed_on,
    }


def _contest_out(contest: Contest, now: str | None = None) -> schemas.ContestOut:
    now = now or clock.now()
    if now < contest.opens_at:
        status: Literal["upcoming", "open", "closed"] = "upcoming"
    else:
        status = "open" if now <= contest.closes_at else "closed"
    return schemas.ContestOut(
        id=contest.id,
        title=contest.title,
        opens_at=contest.opens_at,
        closes_at=contest.closes_at,
        lexicon=contest.lexicon_id,
        layout=contest.rules_id,
        game=contest.game,
        status=status,
        freeze_at=contest.freeze_at,
        thawed_at=contest.thawed_at,
        options=contest.options_json() if contest.options else None,
        frozen=freeze.frozen(contest, now),
    )
