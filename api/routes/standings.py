"""What a contest's judging has produced so far: the public leaderboard, every submission's
result for an export, and the event log."""

from __future__ import annotations

from dataclasses import asdict
from functools import partial
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Query

from api import schemas
from api.lookups import known_contest, shown, well_formed
from api.public import FRESH_PER_WINDOW
from api.routes.games import leaderboard_model
from api.services import Admin, Organiser, Services, Svc
from core import clock, freeze
from core.records import ResultLine

router = APIRouter()
# An export's page: a few hundred KB of JSON, so the memory a request holds stays bounded.
RESULTS_PAGE, RESULTS_PAGE_MOST = 1000, 5000
# A leaderboard's page: what a screen shows; a client wanting all follows `next`.
BOARD_PAGE, BOARD_PAGE_MOST = 100, 1000


@router.get(
    "/v1/contests/{contest}/leaderboard",
    response_model=leaderboard_model(),
    tags=["public"],
)
async def leaderboard(
    contest: str,
    svc: Svc,
    organiser: Organiser,
    offset: Annotated[int, Query(ge=0, le=10**9, description="entries to skip")] = 0,
    limit: Annotated[int, Query(ge=1, le=BOARD_PAGE_MOST)] = BOARD_PAGE,
) -> dict[str, Any]:
    """A Wordytaire contest: each team's best judged score, ranked. A Crosstiles contest: the
    players named in its valid game logs, ranked by wins (a k-way tie for the win counts 1/k),
    then spread, then nick; and its invalid logs, each with its first failing line and why.

    While the contest is frozen, only the verdicts of uploads received before its freeze
    time count, under the ruleset its standings had then (`pending` counts the others), until
    the organiser thaws it; with the admin token, everything counts.

    A page at a time (`limit` entries of each list from `offset`; follow `next` until it is
    null). Computed once for every caller asking meanwhile, and at most a second old when
    many ask."""
    board = await svc.public.get(
        ("leaderboard", well_formed(contest), organiser),
        partial(full_board, contest, svc, public=not organiser),
        fresh=FRESH_PER_WINDOW,
    )
    return page_of(board, offset, limit)


def views(contest: str) -> tuple[tuple[object, ...], ...]:
    """The shared reads' keys of everything that shows the contest's standings or ruleset:
    its leaderboards (the public's and the organiser's), its page, the contests' list and the
    Contest API's view of both. A route that changes them here forgets these, so this process
    answers the change at once (the others within a window)."""
    return (
        ("leaderboard", contest, False),
        ("leaderboard", contest, True),
        ("contest", contest),
        ("contests",),
        ("clics", contest),
        ("clics", "contests"),
    )


def full_board(contest: str, svc: Services, public: bool = False) -> dict[str, Any]:
    """The whole leaderboard, every entry of every list: the organiser's (the dashboard's
    page shows it), or, `public`, the one the public sees (`core.freeze`)."""
    found = known_contest(svc, contest)
    now = clock.now()
    cut = freeze.public_cut(found, now) if public else None
    standings = svc.store.standings(found, *cut) if cut else svc.store.standings(found)
    return {
        "contest": contest,
        "game": found.game,
        **standings,
        "frozen": freeze.frozen(found, now),
        "pending": standings.get("pending", 0),
    }


def page_of(board: dict[str, Any], offset: int, limit: int) -> dict[str, Any]:
    """`limit` entries of each of the board's lists from `offset`, and the next page's URL."""
    lists = {key: value for key, value in board.items() if isinstance(value, list)}
    more = any(len(value) > offset + limit for value in lists.values())
    path = f"/v1/contests/{quote(board['contest'], safe='')}/leaderboard"
    return {
        **board,
        **{key: value[offset : offset + limit] for key, value in lists.items()},
        "next": f"{path}?offset={offset + limit}&limit={limit}" if more else None,
    }


@router.get("/v1/contests/{contest}/results", response_model=schemas.ResultsPage, tags=["admin"])
def list_results(
    contest: str,
    svc: Svc,
    who: Admin,
    after: Annotated[
        str, Query(pattern=r"^[A-Za-z0-9_-]{0,64}$", description="the last id of the page before")
    ] = "",
    limit: Annotated[int, Query(ge=1, le=RESULTS_PAGE_MOST)] = RESULTS_PAGE,
) -> schemas.ResultsPage:
    """Every submission of the contest, in id order, a page at a time, with its team's name
    and its result under the live ruleset (null until judged); follow `next` until it is
    null."""
    found = known_contest(svc, contest)
    lines = svc.store.results_page(contest, after, limit)
    ids = [line.result_id for line in lines if line.result_id is not None]
    fields = svc.store.result_fields(found.game, ids)
    last = lines[-1].submission if len(lines) == limit else None
    return schemas.ResultsPage(
        contest=contest,
        results=[
            shown(found.game, schemas.ResultRow, _listed(line), _of(fields, line)) for line in lines
        ],
        next=last,
    )


def _listed(line: ResultLine) -> dict[str, Any]:
    return {k: v for k, v in asdict(line).items() if k != "result_id"}


def _of(fields: dict[int, dict[str, Any]], line: ResultLine) -> dict[str, Any] | None:
    return fields.get(line.result_id) if line.result_id is not None else None


@router.get("/v1/events", tags=["admin"])
def list_events(
    svc: Svc,
    who: Admin,
    after: Annotated[int, Query(ge=0, le=2**62)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> dict[str, object]:
    found = svc.store.events_after(after, limit)
    return {"events": found, "next": found[-1]["id"] if found else after}
