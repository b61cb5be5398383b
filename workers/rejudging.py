"""Rejudge work: a producer pages through a contest's submissions and publishes batches to the
`bulk` queue (no chord: progress lives in SQL); each batch is judged and recorded in one
transaction. Everything is idempotent, so redelivered or republished work never counts twice.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog

from infra.sql.rejudges import RejudgeStore, Run
from infra.sql.store import JudgedResult
from workers.judging import WorkerDeps, judge_and_store_report, upload_bytes

log = structlog.get_logger("tilejudge.rejudge")

PAGE = 500
BATCH = 10  # about a tenth of a second of judging: a live upload never waits long behind one


def changed_words(deps: WorkerDeps, run: Run) -> frozenset[str] | None:
    """Words whose membership the run changes; None when every submission is affected."""
    if run.mode != "affected" or run.layout_id != run.from_layout_id:
        return None  # a layout change can move any score
    added, removed = deps.rulesets.lexicon(run.from_lexicon_id).diff(
        deps.rulesets.lexicon(run.lexicon_id)
    )
    return added | removed


def produce(deps: WorkerDeps, run_id: str, publish_batch: Callable[[str, list[str]], None]) -> int:
    """Page from the run's cursor to the end: carry what the fix cannot touch, publish the rest."""
    rejudges = RejudgeStore(deps.store)
    run = rejudges.get(run_id)
    if run is None or run.state not in ("running", "ready"):
        return 0
    changed = changed_words(deps, run)
    published = 0
    while True:
        page = rejudges.next_page(run, PAGE)
        if not page:
            return published
        if changed is None:
            to_judge = [sid for sid, _ in page]
        else:
            # No recorded words (never judged yet): judge it rather than guess.
            to_judge = [
                sid for sid, words in page if words is None or not changed.isdisjoint(words.split())
            ]
            rejudges.carry(run, [sid for sid, words in page if sid not in set(to_judge)])
        for start in range(0, len(to_judge), BATCH):
            publish_batch(run.id, to_judge[start : start + BATCH])
        published += len(to_judge)
        if not rejudges.advance(run.id, page[-1][0]):
            return published  # cancelled meanwhile
        run = rejudges.get(run.id) or run


def judge_batch(deps: WorkerDeps, run_id: str, submission_ids: list[str]) -> int:
    """Judge a batch under the run's ruleset; one transaction records them and the progress."""
    rejudges = RejudgeStore(deps.store)
    run = rejudges.get(run_id)
    if run is None or run.state not in ("running", "ready"):
        return 0  # cancelled or applied: queued work just stops
    done: list[tuple[str, JudgedResult]] = []
    for submission_id in submission_ids:
        sub = deps.store.get_submission(submission_id)
        if sub is None or rejudges.has_result(run, submission_id):
            continue
        result, _ = judge_and_store_report(
            deps, sub, upload_bytes(deps, sub), run.lexicon_id, run.layout_id
        )
        done.append((submission_id, result))
    return rejudges.record_batch(run, done)
