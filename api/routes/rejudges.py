"""Rejudge runs: start one under another word list (and layout), watch it and its preview,
then apply or cancel it."""

from __future__ import annotations

from functools import partial
from typing import Any

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool

from api import schemas
from api.lookups import well_formed
from api.routes import standings
from api.services import Admin, ApiCaches, Svc
from core import rejudge_orders
from core.errors import FAILURE_SENTENCES, NotFound, as_reason
from core.ports import RejudgeRuns
from core.records import Run, RunSummary
from core.states import RejudgeMode

router = APIRouter()

# A run's failures listed in full up to this many; `failed` counts them all.
FAILURES_LISTED = 100


@router.post("/v1/contests/{contest}/rejudges", status_code=202, tags=["admin"])
def start_rejudge(contest: str, body: schemas.RejudgeIn, svc: Svc, who: Admin) -> dict[str, Any]:
    """Judge the contest again under another lexicon (and layout); nothing visible changes
    until `apply`. Asking again for the same ruleset returns the open run."""
    started = rejudge_orders.start_rejudge(
        well_formed(contest),
        lexicon=body.lexicon,
        rules=body.layout,
        mode=RejudgeMode(body.mode),
        by="admin",
        contests=svc.store,
        rulesets=svc.store,
        runs=svc.rejudges,
        publisher=svc.intake.publisher,
    )
    return {"id": started.run.id, "created": started.created, **_summary(started.run)}


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
    often.

    An applied run shows what it changed as `apply` recorded it (`summary_recorded` true,
    `frozen_at` the moment), the same however the contest changes later. A run applied before
    summaries were recorded has none to show: `preview` and `summary_recorded` false.

    `failed` counts the submissions the run could not judge (the upload's object gone, its
    bytes damaged, its report over the cap), `failures` lists the first of them with their
    team, reason code and a sentence. They count as done, so the run can be applied; applying
    it marks each of them failed with its reason, with no result under the new ruleset."""
    rejudges = svc.rejudges
    run = _run(rejudges, run_id)
    return {
        "id": run.id,
        **_summary(run),
        **_preview(rejudges.summary(run)),
        **_failures(rejudges, run),
    }


@router.post("/v1/rejudges/{run_id}/apply", tags=["admin"])
async def apply_rejudge(run_id: str, svc: Svc, who: Admin) -> dict[str, Any]:
    run = await run_in_threadpool(
        partial(
            rejudge_orders.apply_rejudge,
            run_id,
            by="admin",
            runs=svc.rejudges,
            caches=ApiCaches(svc, standings.views),
        )
    )
    return {"id": run.id, **_summary(run)}


@router.post("/v1/rejudges/{run_id}/cancel", tags=["admin"])
def cancel_rejudge(run_id: str, svc: Svc, who: Admin) -> dict[str, Any]:
    run = rejudge_orders.cancel_rejudge(run_id, by="admin", runs=svc.rejudges)
    return {"id": run.id, **_summary(run)}


def _failures(rejudges: RejudgeRuns, run: Run) -> dict[str, Any]:
    count, listed = rejudges.failures(run, FAILURES_LISTED)
    return {
        "failed": count,
        "failures": [
            {
                "submission": failure.submission_id,
                "team": failure.team,
                "reason": failure.reason,
                "message": FAILURE_SENTENCES[as_reason(failure.reason)],
            }
            for failure in listed
        ],
    }


def _preview(summary: RunSummary | None) -> dict[str, Any]:
    if summary is None:
        return {
            "preview": False,
            "changed": [],
            "rank_changes": [],
            "summary_recorded": False,
            "frozen_at": None,
        }
    return {
        "preview": True,
        "changed": list(summary.changed),
        "rank_changes": list(summary.rank_changes),
        "summary_recorded": summary.frozen_at is not None,
        "frozen_at": summary.frozen_at,
    }


def _summary(run: Run) -> dict[str, Any]:
    return {
        "contest": run.contest_id,
        "state": run.state,
        "mode": run.mode,
        "total": run.total,
        "done": run.done,
        "carried": run.carried,
        "lexicon": run.lexicon_id,
        "layout": run.rules_id,
        "from_lexicon": run.from_lexicon_id,
        "from_layout": run.from_rules_id,
        "created_at": run.created_at,
        "updated_at": run.updated_at,
        "finished_at": run.finished_at,
    }


def _run(rejudges: RejudgeRuns, run_id: str) -> Run:
    run = rejudges.get(run_id) if len(run_id) <= 64 else None
    if run is None:
        raise NotFound(f"no rejudge run {run_id[:64]!r}")
    return run
