"""Rejudge work: a producer pages through a contest's submissions and publishes batches to the
`bulk` queue (no chord: progress lives in SQL); each batch is judged and recorded in one
transaction. Everything is idempotent, so redelivered or republished work never counts twice.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import structlog

from core import tuning
from core.errors import FailureReason
from core.games import game
from core.judging import (
    WorkerDeps,
    drop_reports_of_deleted,
    judge_only,
    reason_for,
    rejudged_bytes,
    report_deferred,
    ruleset_ready,
    store_report,
    upload_errors,
)
from core.ports import PublishBatch
from core.records import JudgedResult, Run
from core.states import RejudgeMode
from core.word_hashes import changed_hashes, signature, touches

log = structlog.get_logger("tilejudge.worker")


def changed_words(deps: WorkerDeps, run: Run) -> frozenset[int] | None:
    """Hashes of the words whose membership the run changes (see `core.word_hashes`); None
    when every submission is affected."""
    if run.mode is not RejudgeMode.AFFECTED or run.rules_id != run.from_rules_id:
        return None  # a change of rules data can move any score
    added, removed = deps.rulesets.diff(run.from_lexicon_id, run.lexicon_id)
    return changed_hashes(added | removed)


def produce(deps: WorkerDeps, run_id: str, publish_batch: PublishBatch) -> int:
    """Page from the run's cursor to the end: publish what must be judged as the page streams
    in (the pool starts on the first batch while the rest is read), then carry what the fix
    cannot touch and move the cursor past the page. A batch ends at `batch_size` submissions,
    or sooner once its uploads reach REJUDGE_BATCH_BYTES (large uploads: fewer a batch).

    Each batch holds uploads of one holder, the worker host whose upload cache has their bytes
    (`Paged.held_on`; None where none is known), and goes to that host's queue where it can
    (`Publisher.publish_batch`): on several worker hosts, each judges what it holds."""
    rejudges = deps.rejudges
    run = rejudges.get(run_id)
    if run is None or not run.open:
        return 0
    changed = changed_words(deps, run)
    # Affected-only work is a few submissions spread thin: bigger pages (fewer transactions).
    page_size = tuning.REJUDGE_PAGE if changed is None else 4 * tuning.REJUDGE_PAGE
    done_before = run.done  # judged (or carried) before this producer started
    published = 0
    while True:
        last = None
        to_judge: dict[str | None, _Batch] = {}  # by holder
        to_carry: list[str] = []
        for row in rejudges.page(run, page_size):
            last = row.id
            if changed is not None and not touches(row.words, changed):
                to_carry.append(row.id)
                continue
            batch = to_judge.setdefault(row.held_on, _Batch())
            batch.ids.append(row.id)
            batch.size += row.size
            left = run.total - done_before - published
            if (
                len(batch.ids) >= batch_size(left, every=changed is None)
                or batch.size >= tuning.REJUDGE_BATCH_BYTES
            ):
                publish_batch(run.id, batch.ids, row.held_on)
                published += len(batch.ids)
                del to_judge[row.held_on]
        if last is None:
            return published
        for holder, batch in to_judge.items():
            publish_batch(run.id, batch.ids, holder)
            published += len(batch.ids)
        rejudges.carry(run, to_carry)
        if not rejudges.advance(run.id, last):
            return published  # cancelled meanwhile
        run = rejudges.get(run.id) or run


@dataclass
class _Batch:
    ids: list[str] = field(default_factory=list)
    size: int = 0  # bytes of its uploads


def batch_size(left: int, every: bool) -> int:
    """Submissions in the next batch of a run with about `left` more to publish. Where `every`
    submission is judged (a full rejudge): REJUDGE_BATCH_MOST, halved while fewer than
    REJUDGE_SPREAD batches of that size are left, down to REJUDGE_BATCH (see `core.tuning`).
    Each size divides the larger ones and the page, so every page splits into whole batches.
    Else (a few submissions, spread thin): REJUDGE_BATCH."""
    size = tuning.REJUDGE_BATCH_MOST if every else tuning.REJUDGE_BATCH
    while size > tuning.REJUDGE_BATCH and left < size * tuning.REJUDGE_SPREAD:
        size //= 2
    return size


def judge_batch(
    deps: WorkerDeps,
    run_id: str,
    submission_ids: list[str],
    live_waiting: Callable[[], bool] = lambda: False,
    hand_back: PublishBatch | None = None,
    heavy: Callable[[Callable[[], Any]], Any] = lambda work: work(),
) -> int:
    """Judge a batch under the run's ruleset; one transaction records them and the progress.

    S3 reads and report writes (of heavy uploads: a light one's is made when first read,
    `core.reports`) overlap the judging on a few threads (they wait on the network
    and release the GIL), which is what makes bulk work cheaper per submission than live work.
    Between submissions, if a live upload is waiting, the rest of the batch is handed back to
    the bulk queue so this process is free for it at once.

    An upload that cannot be judged for good (its object gone, its bytes damaged, its report
    over the cap: `upload_errors`) fails on its own: recorded as failed for the run with its
    reason code, counted as done, so the run still reaches ready. Only an outage fails the
    batch, which is then retried a bounded number of times.

    `heavy` runs the judging (`workers.scheduling.run_niced` in the worker); the recording
    transaction runs on the calling thread, so a niced thread never holds the SQL write lock a
    live upload's transaction waits for."""
    rejudges = deps.rejudges
    run = rejudges.get(run_id)
    if run is None or not run.open:
        return 0  # cancelled or applied: queued work just stops
    contest = deps.store.get_contest(run.contest_id)
    if contest is None:
        return 0
    todo = rejudges.without_result(run, submission_ids)
    if todo:  # the run's own list or rules data gone fails the batch, never its uploads
        ruleset_ready(deps, contest.game, run.lexicon_id, run.rules_id)
    played = game(contest.game)
    for_good = upload_errors()
    # An upload judged under another list may look up words its recorded signature lacks (a
    # game log stops at its first failing line): they are added to it.
    words: dict[str, bytes] = {}
    failed: dict[str, FailureReason] = {}

    def fail(sid: str, exc: BaseException) -> None:
        failed[sid] = reason_for(exc)
        log.warning(
            "worker.rejudge_upload_failed", rejudge=run.id, submission=sid,
            reason=failed[sid].value, error=f"{type(exc).__name__}: {exc}",
        )  # fmt: skip

    def judge_all() -> list[tuple[str, JudgedResult]]:
        judged: dict[str, JudgedResult] = {}
        with ThreadPoolExecutor(max_workers=4) as io:
            uploads = [io.submit(rejudged_bytes, deps, sub) for sub in todo]
            writes: list[tuple[str, Future[None]]] = []
            for n, sub in enumerate(todo):
                if n and hand_back is not None and live_waiting():
                    for pending in uploads[n:]:
                        pending.cancel()
                    hand_back(run.id, [later.id for later in todo[n:]], deps.upload_cache.host)
                    break
                try:
                    one = judge_only(
                        deps, sub, uploads[n].result(), contest.game, run.lexicon_id, run.rules_id
                    )
                except for_good as exc:
                    fail(sub.id, exc)
                    continue
                if not report_deferred(deps, sub):
                    writes.append((sub.id, io.submit(store_report, deps, sub, one)))
                judged[sub.id] = one.result
                if played.words_vary:
                    words[sub.id] = signature(one.words)
            for sid, write in writes:
                try:
                    write.result()  # an outage fails the batch: nothing recorded, retried
                except for_good as exc:
                    fail(sid, exc)
                    del judged[sid]
        return list(judged.items())

    done: list[tuple[str, JudgedResult]] = heavy(judge_all)
    recorded = rejudges.record_batch(run, done, words, failed, deps.upload_cache.host)
    if recorded < len(done) + len(failed):  # some may be gone: their team deleted meanwhile
        drop_reports_of_deleted(deps, [(sid, result.report_key) for sid, result in done])
    return recorded
