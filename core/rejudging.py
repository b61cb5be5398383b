"""Rejudge work: a producer pages through a contest's submissions and publishes batches to the
`bulk` queue (no chord: progress lives in SQL); each batch is judged and recorded in one
transaction. Everything is idempotent, so redelivered or republished work never counts twice.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from core import tuning
from core.games import game
from core.judging import (
    WorkerDeps,
    drop_reports_of_deleted,
    judge_only,
    store_report,
    upload_bytes,
)
from core.records import JudgedResult, Run
from core.states import RejudgeMode
from core.word_hashes import changed_hashes, signature, touches


def changed_words(deps: WorkerDeps, run: Run) -> frozenset[int] | None:
    """Hashes of the words whose membership the run changes (see `core.word_hashes`); None
    when every submission is affected."""
    if run.mode is not RejudgeMode.AFFECTED or run.layout_id != run.from_layout_id:
        return None  # a layout change can move any score
    added, removed = deps.rulesets.diff(run.from_lexicon_id, run.lexicon_id)
    return changed_hashes(added | removed)


def produce(deps: WorkerDeps, run_id: str, publish_batch: Callable[[str, list[str]], None]) -> int:
    """Page from the run's cursor to the end: publish what must be judged as the page streams
    in (the pool starts on the first batch while the rest is read), then carry what the fix
    cannot touch and move the cursor past the page."""
    rejudges = deps.rejudges
    run = rejudges.get(run_id)
    if run is None or not run.open:
        return 0
    changed = changed_words(deps, run)
    # Affected-only work is a few submissions spread thin: bigger pages (fewer transactions).
    page_size = tuning.REJUDGE_PAGE if changed is None else 4 * tuning.REJUDGE_PAGE
    batch = tuning.REJUDGE_BATCH
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

    `heavy` runs the judging (`workers.scheduling.run_niced` in the worker); the recording transaction runs on
    the calling thread, so a niced thread never holds the SQL write lock a live upload's
    transaction waits for."""
    rejudges = deps.rejudges
    run = rejudges.get(run_id)
    if run is None or not run.open:
        return 0  # cancelled or applied: queued work just stops
    contest = deps.store.get_contest(run.contest_id)
    if contest is None:
        return 0
    todo = rejudges.without_result(run, submission_ids)
    played = game(contest.game)
    # An upload judged under another list may look up words its recorded signature lacks (a
    # game log stops at its first failing line): they are added to it.
    words: dict[str, bytes] = {}

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
                judged = judge_only(
                    deps, sub, uploads[n].result(), contest.game, run.lexicon_id, run.layout_id
                )
                writes.append(io.submit(store_report, deps, sub, judged))
                done.append((sub.id, judged.result))
                if played.words_vary:
                    words[sub.id] = signature(judged.words)
            for write in writes:
                write.result()  # a failed report write fails the batch: nothing recorded, retried
        return done

    done: list[tuple[str, JudgedResult]] = heavy(judge_all)
    recorded = rejudges.record_batch(run, done, words)
    if recorded < len(done):  # some may be gone: their team deleted during the batch
        drop_reports_of_deleted(deps, [(sid, result.report_key) for sid, result in done])
    return recorded
