"""Rejudge work: a producer pages through a contest's submissions and publishes batches to the
`bulk` queue (no chord: progress lives in SQL); each batch is judged and recorded in one
transaction. Everything is idempotent, so redelivered or republished work never counts twice.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import structlog

from infra.sql.rejudges import RejudgeStore, Run
from infra.sql.results import JudgedResult
from workers.judging import WorkerDeps, judge_only, store_report, upload_bytes
from workers.word_hashes import changed_hashes, touches

log = structlog.get_logger("tilejudge.rejudge")
T = TypeVar("T")

BULK_NICENESS = 10
PAGE = 500
BATCH = 16  # a live upload never waits behind a batch: judge_batch hands the rest back for it


def changed_words(deps: WorkerDeps, run: Run) -> frozenset[int] | None:
    """Hashes of the words whose membership the run changes (see `workers.word_hashes`); None
    when every submission is affected."""
    if run.mode != "affected" or run.layout_id != run.from_layout_id:
        return None  # a layout change can move any score
    added, removed = deps.rulesets.diff(run.from_lexicon_id, run.lexicon_id)
    return changed_hashes(added | removed)


def produce(deps: WorkerDeps, run_id: str, publish_batch: Callable[[str, list[str]], None]) -> int:
    """Page from the run's cursor to the end: publish what must be judged as the page streams
    in (the pool starts on the first batch while the rest is read), then carry what the fix
    cannot touch and move the cursor past the page."""
    rejudges = RejudgeStore(deps.store)
    run = rejudges.get(run_id)
    if run is None or run.state not in ("running", "ready"):
        return 0
    changed = changed_words(deps, run)
    # Affected-only work is a few submissions spread thin: bigger pages (fewer transactions).
    page_size = PAGE if changed is None else 4 * PAGE
    batch = BATCH
    published = 0
    while True:
        last = None
        to_judge: list[str] = []
        to_carry: list[str] = []
        for sid, recorded in rejudges.page(run, page_size):
            last = sid
            if changed is None or touches(recorded, changed):
                to_judge.append(sid)
                if len(to_judge) == batch:
                    publish_batch(run.id, to_judge)
                    published, to_judge = published + batch, []
            else:
                to_carry.append(sid)
        if last is None:
            return published
        if to_judge:
            publish_batch(run.id, to_judge)
            published += len(to_judge)
        rejudges.carry(run, to_carry)
        if not rejudges.advance(run.id, last):
            return published  # cancelled meanwhile
        run = rejudges.get(run.id) or run


def judge_batch(
    deps: WorkerDeps,
    run_id: str,
    submission_ids: list[str],
    live_waiting: Callable[[], bool] = lambda: False,
    hand_back: Callable[[str, list[str]], None] | None = None,
    heavy: Callable[[Callable[[], Any]], Any] = lambda work: work(),
) -> int:
    """Judge a batch under the run's ruleset; one transaction records them and the progress.

    S3 reads and report writes overlap the judging on a few threads (they wait on the network
    and release the GIL), which is what makes bulk work cheaper per submission than live work.
    Between submissions, if a live upload is waiting, the rest of the batch is handed back to
    the bulk queue so this process is free for it at once.

    `heavy` runs the judging (`run_niced` in the worker); the recording transaction runs on
    the calling thread, so a niced thread never holds the SQL write lock a live upload's
    transaction waits for."""
    rejudges = RejudgeStore(deps.store)
    run = rejudges.get(run_id)
    if run is None or run.state not in ("running", "ready"):
        return 0  # cancelled or applied: queued work just stops
    todo = rejudges.without_result(run, submission_ids)

    def judge_all() -> list[tuple[str, JudgedResult]]:
        done: list[tuple[str, JudgedResult]] = []
        with ThreadPoolExecutor(max_workers=4) as io:
            uploads = [io.submit(upload_bytes, deps, sub) for sub in todo]
            writes = []
            for n, sub in enumerate(todo):
                if n and hand_back is not None and live_waiting():
                    for pending in uploads[n:]:
                        pending.cancel()
                    hand_back(run.id, [later.id for later in todo[n:]])
                    break
                result, report = judge_only(
                    deps, sub, uploads[n].result(), run.lexicon_id, run.layout_id
                )
                writes.append(io.submit(store_report, deps, result, sub, report))
                done.append((sub.id, result))
            for write in writes:
                write.result()  # a failed report write fails the batch: nothing recorded, retried
        return done

    done: list[tuple[str, JudgedResult]] = heavy(judge_all)
    return rejudges.record_batch(run, done)


def run_niced(work: Callable[[], T]) -> T:
    """Run bulk work on a thread that gets the CPU only when nothing else wants it: Linux's
    SCHED_IDLE policy, per thread, which needs no privilege and which the threads it starts
    inherit. A live upload (its judging, and SeaweedFS, Redis and the API serving it) then
    takes the CPU from bulk work at once on every wakeup, where a nice value only shrinks bulk
    work's share and still lets it finish its time slice first. Where SCHED_IDLE is missing, a
    nice value."""
    outcome: dict[str, Any] = {}

    def niced() -> None:
        tid = threading.get_native_id()
        try:
            os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
        except (OSError, AttributeError):
            with contextlib.suppress(OSError, AttributeError):
                os.setpriority(os.PRIO_PROCESS, tid, BULK_NICENESS)
        try:
            outcome["value"] = work()
        except BaseException as exc:  # handed to the calling thread as is
            outcome["error"] = exc

    thread = threading.Thread(target=niced, name="tilejudge-bulk")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    value: T = outcome["value"]
    return value
