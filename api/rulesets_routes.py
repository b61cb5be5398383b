"""Word-list and layout versions, and rejudge runs: start, watch, preview, apply, cancel."""

from __future__ import annotations

import contextlib
from typing import Any, Literal

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

from api.services import Admin, Svc
from core.errors import Conflict, Invalid, NotFound, PublishFailed, RejudgeRefused
from core.records import Run
from infra.sql.rejudges import RejudgeStore
from judge import Layout, Lexicon

router = APIRouter()


class RejudgeIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    lexicon: str = Field(min_length=1, max_length=200, description="lexicon id or name")
    layout: str | None = Field(
        default=None, max_length=200, description="layout id or name; default: unchanged"
    )
    mode: Literal["full", "affected"] = "full"


@router.get("/v1/lexicons", tags=["admin"])
def list_lexicons(svc: Svc, who: Admin) -> dict[str, Any]:
    return {
        "lexicons": [
            {
                k: row[k]
                for k in ("id", "name", "words", "size", "source", "created_by", "created_at")
            }
            for row in svc.store.all_lexicons()
        ]
    }


@router.get("/v1/lexicons/{a}/diff/{b}", tags=["admin"])
def lexicon_diff(a: str, b: str, svc: Svc, who: Admin) -> dict[str, Any]:
    """Words added and removed going from lexicon `a` to `b` (ids or names)."""
    old, new = _load_lexicon(svc, a), _load_lexicon(svc, b)
    added, removed = old.diff(new)
    return {"from": old.id, "to": new.id, "added": sorted(added), "removed": sorted(removed)}


@router.get("/v1/layouts", tags=["admin"])
def list_layouts(svc: Svc, who: Admin) -> dict[str, Any]:
    rows = svc.store.all_layouts()
    return {
        "layouts": [{k: row[k] for k in ("id", "name", "created_by", "created_at")} for row in rows]
    }


@router.get("/v1/layouts/{a}/diff/{b}", tags=["admin"])
def layout_diff(a: str, b: str, svc: Svc, who: Admin) -> dict[str, Any]:
    """Squares and letters that differ between two layouts."""
    old, new = _load_layout(svc, a), _load_layout(svc, b)
    squares = [
        {"row": r, "column": c, "from": old.bonus[r][c], "to": new.bonus[r][c]}
        for r in range(min(old.period, new.period))
        for c in range(min(old.period, new.period))
        if old.bonus[r][c] != new.bonus[r][c]
    ]
    letters = [
        {"letter": x, "from": [old.points[x], old.bag[x]], "to": [new.points[x], new.bag[x]]}
        for x in sorted(old.points)
        if (old.points[x], old.bag[x]) != (new.points[x], new.bag[x])
    ]
    return {
        "from": old.id,
        "to": new.id,
        "period": [old.period, new.period],
        "squares": squares,
        "letters": letters,
    }


@router.post("/v1/contests/{contest}/rejudges", status_code=202, tags=["admin"])
def start_rejudge(contest: str, body: RejudgeIn, svc: Svc, who: Admin) -> dict[str, Any]:
    """Judge the contest again under another lexicon (and layout); nothing visible changes
    until `apply`. Asking again for the same ruleset returns the open run."""
    found = svc.store.get_contest(contest)
    if found is None:
        raise NotFound(f"no contest {contest[:64]!r}")
    lexicon = svc.store.find_lexicon(body.lexicon)
    if lexicon is None:
        raise Invalid(f"no lexicon with id or name {body.lexicon!r}")
    layout_id = found.layout_id
    if body.layout is not None:
        row = svc.store.find_layout(body.layout)
        if row is None:
            raise Invalid(f"no layout with id or name {body.layout!r}")
        layout_id = row["id"]
    try:
        run, created = RejudgeStore(svc.store).start(
            contest, lexicon["id"], layout_id, body.mode, by="admin"
        )
    except RejudgeRefused as exc:
        raise Conflict(str(exc)) from exc
    if created:
        # If the broker is down, the sweeper restarts producers of runs that make no progress.
        with contextlib.suppress(PublishFailed):
            svc.intake.publisher.start_rejudge(run.id)
    return {"id": run.id, "created": created, **_summary(run)}


@router.get("/v1/contests/{contest}/rejudges", tags=["admin"])
def list_rejudges(contest: str, svc: Svc, who: Admin) -> dict[str, Any]:
    return {
        "rejudges": [
            {"id": run.id, **_summary(run)} for run in RejudgeStore(svc.store).list_runs(contest)
        ]
    }


@router.get("/v1/rejudges/{run_id}", tags=["admin"])
def show_rejudge(run_id: str, svc: Svc, who: Admin) -> dict[str, Any]:
    """Progress, and once the run is no longer running its preview: the scores and ranks that
    change. While it runs, `changed` and `rank_changes` are empty and `preview` is false: ranks
    over a half-judged contest would mislead, and a progress bar polls this often."""
    rejudges = RejudgeStore(svc.store)
    run = _run(rejudges, run_id)
    return {"id": run.id, **_summary(run), **_preview(rejudges, run)}


_PREVIEWS: dict[str, tuple[tuple[object, ...], dict[str, Any]]] = {}


def _preview(rejudges: RejudgeStore, run: Run) -> dict[str, Any]:
    """Computed once per state of the run (a result added under either ruleset moves `done`,
    `total` or `updated_at`), however often it is asked for."""
    if run.state == "running":
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
    if len(_PREVIEWS) > 64:
        _PREVIEWS.clear()
    _PREVIEWS[run.id] = (key, preview)
    return preview


@router.post("/v1/rejudges/{run_id}/apply", tags=["admin"])
async def apply_rejudge(run_id: str, svc: Svc, who: Admin) -> dict[str, Any]:
    rejudges = RejudgeStore(svc.store)
    try:
        run = await run_in_threadpool(rejudges.apply, run_id, "admin")
    except RejudgeRefused as exc:
        raise Conflict(str(exc)) from exc
    return {"id": run.id, **_summary(run)}


@router.post("/v1/rejudges/{run_id}/cancel", tags=["admin"])
def cancel_rejudge(run_id: str, svc: Svc, who: Admin) -> dict[str, Any]:
    try:
        run = RejudgeStore(svc.store).cancel(run_id, "admin")
    except RejudgeRefused as exc:
        raise Conflict(str(exc)) from exc
    return {"id": run.id, **_summary(run)}


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


def _run(rejudges: RejudgeStore, run_id: str) -> Run:
    run = rejudges.get(run_id) if len(run_id) <= 64 else None
    if run is None:
        raise NotFound(f"no rejudge run {run_id[:64]!r}")
    return run


def _load_lexicon(svc: Svc, id_or_name: str) -> Lexicon:
    row = svc.store.find_lexicon(id_or_name)
    if row is None:
        raise NotFound(f"no lexicon {id_or_name[:64]!r}")
    return Lexicon.from_bytes(svc.blobs.get(row["blob_key"]))


def _load_layout(svc: Svc, id_or_name: str) -> Layout:
    row = svc.store.find_layout(id_or_name)
    if row is None:
        raise NotFound(f"no layout {id_or_name[:64]!r}")
    return Layout.from_json(row["content"])
