"""Rejudge runs: start one under another word list (and layout), watch it and its preview,
then apply or cancel it."""

from __future__ import annotations

import contextlib
from typing import Any

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool

from api import schemas
from api.lookups import known_contest
from api.services import Admin, Svc
from core.errors import Invalid, NotFound, PublishFailed
from core.ports import RejudgeRuns
from core.records import Run
from core.states import RejudgeMode, RejudgeState

router = APIRouter()
PREVIEWS_KEPT = 64  # runs whose preview is remembered; more open at once is not expected


@router.post("/v1/contests/{contest}/rejudges", status_code=202, tags=["admin"])
def start_rejudge(contest: str, body: schemas.RejudgeIn, svc: Svc, who: Admin) -> dict[str, Any]:
    """Judge the contest again under another lexicon (and layout); nothing visible changes
    until `apply`. Asking again for the same ruleset returns the open run."""
    found = known_contest(svc, contest)
    lexicon = svc.store.find_lexicon(body.lexicon)
    if lexicon is None:
        raise Invalid(f"no lexicon with id or name {body.lexicon!r}")
    layout_id = found.layout_id
    if body.layout is not None:
        row = svc.store.find_layout(body.layout, found.game)
        if row is None:
            raise Invalid(f"no layout with id or name {body.layout!r} for a {found.game} contest")
        layout_id = row.id
    run, created = svc.rejudges.start(
        contest, lexicon.id, layout_id, RejudgeMode(body.mode), by="admin"
    )
    if created:
        # If the broker is down, the sweeper restarts producers of runs that make no progress.
        with contextlib.suppress(PublishFailed):
            svc.intake.publisher.start_rejudge(run.id)
    return {"id": run.id, "created": created, **_summary(run)}


@router.get("/v1/contests/{contest}/rejudges", tags=["admin"])
def list_rejudges(contest: str, svc: Svc, who: Admin) -> dict[str, Any]:
    return {
        "rejudges": [{"id": run.id, **_summary(run)} for run in svc.rejudges.list_runs(contest)]
    }


@router.get("/v1/rejudges/{run_id}", tags=["admin"])
def show_rejudge(run_id: str, svc: Svc, who: Admin) -> dict[str, Any]:
    """Progress, and once the run is no longer running its preview: the scores and ranks that
    change (a Crosstiles contest: the games whose verdict or winners change, and the players
    whose standing does). While it runs, `changed` and `rank_changes` are empty and `preview`
    is false: ranks over a half-judged contest would mislead, and a progress bar polls this
    often."""
    rejudges = svc.rejudges
    run = _run(rejudges, run_id)
    return {"id": run.id, **_summary(run), **_preview(rejudges, run)}


@router.post("/v1/rejudges/{run_id}/apply", tags=["admin"])
async def apply_rejudge(run_id: str, svc: Svc, who: Admin) -> dict[str, Any]:
    run = await run_in_threadpool(svc.rejudges.apply, run_id, "admin")
    return {"id": run.id, **_summary(run)}


@router.post("/v1/rejudges/{run_id}/cancel", tags=["admin"])
def cancel_rejudge(run_id: str, svc: Svc, who: Admin) -> dict[str, Any]:
    run = svc.rejudges.cancel(run_id, "admin")
    return {"id": run.id, **_summary(run)}


_PREVIEWS: dict[str, tuple[tuple[object, ...], dict[str, Any]]] = {}


def _preview(rejudges: RejudgeRuns, run: Run) -> dict[str, Any]:
    """Computed once per state of the run (a result added under either ruleset moves `done`,
    `total` or `updated_at`), however often it is asked for."""
    if run.state == RejudgeState.RUNNING:
        return {"preview": False, "changed": [], "rank_changes": []}
    key = (run.state, run.total, run.done, run.carried, run.updated_at)
    cached = _PREVIEWS.get(run.id)
    if cached is not None and cached[0] == key:
        return cached[1]
    preview = {
        "preview": True,
        "changed": rejudges.changes(run),
        "rank_changes": rejudges.rank_changes(run),
    }
    if len(_PREVIEWS) > PREVIEWS_KEPT:
        _PREVIEWS.clear()
    _PREVIEWS[run.id] = (key, preview)
    return preview


def _summary(run: Run) -> dict[str, Any]:
    return {
        "contest": run.contest_id,
        "state": run.state,
        "mode": run.mode,
        "total": run.total,
        "done": run.done,
        "carried": run.carried,
        "lexicon": run.lexicon_id,
        "layout": run.layout_id,
        "from_lexicon": run.from_lexicon_id,
        "from_layout": run.from_layout_id,
        "created_at": run.created_at,
        "updated_at": run.updated_at,
        "finished_at": run.finished_at,
    }


def _run(rejudges: RejudgeRuns, run_id: str) -> Run:
    run = rejudges.get(run_id) if len(run_id) <= 64 else None
    if run is None:
        raise NotFound(f"no rejudge run {run_id[:64]!r}")
    return run
