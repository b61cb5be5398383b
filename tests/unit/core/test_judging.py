"""Judging a group against the fakes: claims, bytes, verdicts, reports and results; what fails
for good, what is retried after an outage, and what is out of attempts."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from core import report_blobs
from core.errors import FailureReason, failure_text
from core.events import EventType
from core.fakes import (
    InMemoryBlobStore,
    InMemoryPublisher,
    InMemoryRejudgeStore,
    InMemoryRulesets,
    InMemorySubmissionStore,
)
from core.games.wordytaire import LineCounts
from core.judging import Outcome, RetryLater, WorkerDeps, judge_group
from core.report_blobs import report_key
from core.states import SubmissionState
from judge.wordytaire import JUDGE_VERSION
from tests.unit.core.conftest import LAYOUT, MAX_ATTEMPTS, TINY, Clock, stored


def events_of(store: InMemorySubmissionStore, submission_id: str) -> list[str]:
    return [e["type"] for e in store.events if e.get("submission") == submission_id]


@pytest.mark.parametrize("deferred", [True, False])
def test_an_upload_is_judged_its_result_recorded_and_its_report_stored_unless_deferred(
    deps: WorkerDeps, store: InMemorySubmissionStore, blobs: InMemoryBlobStore, deferred: bool
) -> None:
    sub = stored(store, blobs, b"0 0 2 0 cat\n2 0 2 2 tab\n0 5 2 5 dog\n")
    deps.defer_reports = deferred

    outcomes = judge_group(deps, [sub.id])

    assert outcomes == {sub.id: Outcome.JUDGED}
    judged = store.submissions[sub.id]
    assert (judged.state, judged.attempts, judged.failure) == (SubmissionState.JUDGED, 1, None)
    result = store.live_result(sub.id)
    assert result is not None
    assert (result.score, result.game) == (22, LineCounts(legal=2, illegal=1, tiles=5))
    assert result.judge_version == JUDGE_VERSION
    assert result.report_key == report_key(sub.id, TINY.id, LAYOUT.id)
    if deferred:  # a light upload's report is made when first read (core.reports)
        assert result.report_key not in blobs.objects
    else:
        report = json.loads(report_blobs.unpack(blobs.objects[result.report_key]))
        assert (report["submission"], report["contest"]) == (sub.id, "wt")
    assert sub.id in store.words  # its word signature, for affected-only rejudges
    assert events_of(store, sub.id)[-2:] == [
        EventType.SUBMISSION_JUDGING,
        EventType.SUBMISSION_JUDGED,
    ]


def test_a_group_is_claimed_in_one_call_and_each_upload_gets_its_own_result(
    deps: WorkerDeps, store: InMemorySubmissionStore, blobs: InMemoryBlobStore
) -> None:
    cat = stored(store, blobs, b"0 0 2 0 cat\n")
    tea = stored(store, blobs, b"0 0 2 0 tea\n")

    outcomes = judge_group(deps, [cat.id, tea.id])

    assert outcomes == {cat.id: Outcome.JUDGED, tea.id: Outcome.JUDGED}
    scores = [store.live_result(s.id) for s in (cat, tea)]
    assert [r.score if r else None for r in scores] == [9, 5]


def test_the_bytes_carried_in_the_message_are_judged_without_reading_the_blob_store(
    deps: WorkerDeps, store: InMemorySubmissionStore, blobs: InMemoryBlobStore
) -> None:
    data = b"0 0 2 0 cat\n"
    sub = stored(store, blobs, data)
    blobs.delete(sub.blob_key)

    outcomes = judge_group(deps, [sub.id], inline={sub.id: data})

    assert outcomes == {sub.id: Outcome.JUDGED}


def test_an_upload_judged_already_is_skipped_when_its_message_comes_again(
    deps: WorkerDeps, store: InMemorySubmissionStore, blobs: InMemoryBlobStore
) -> None:
    sub = stored(store, blobs, b"0 0 2 0 cat\n")
    judge_group(deps, [sub.id])

    again = judge_group(deps, [sub.id])

    assert again == {sub.id: Outcome.SKIPPED}
    assert store.submissions[sub.id].attempts == 1


def test_an_upload_whose_bytes_are_missing_fails_for_good_without_a_retry(
    deps: WorkerDeps, store: InMemorySubmissionStore, blobs: InMemoryBlobStore
) -> None:
    sub = stored(store, blobs, b"0 0 2 0 cat\n")
    blobs.delete(sub.blob_key)

    outcomes = judge_group(deps, [sub.id])  # raises no RetryLater

    assert outcomes == {sub.id: Outcome.FAILED}
    failed = store.submissions[sub.id]
    assert failed.state == SubmissionState.FAILED
    assert failed.failure == failure_text(FailureReason.UPLOAD_MISSING)
    assert store.live_result(sub.id) is None


def test_a_word_list_that_cannot_be_loaded_retries_the_upload_until_it_is_out_of_attempts(
    deps: WorkerDeps,
    store: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    rulesets: InMemoryRulesets,
) -> None:
    sub = stored(store, blobs, b"0 0 2 0 cat\n")
    del rulesets.lexicons[TINY.id]

    tries, outcomes = 0, {}
    while not outcomes and tries <= deps.max_attempts:
        tries += 1
        try:
            outcomes = judge_group(deps, [sub.id])
        except RetryLater:
            assert store.submissions[sub.id].state is SubmissionState.QUEUED

    assert (tries, outcomes) == (deps.max_attempts, {sub.id: Outcome.FAILED})
    assert store.submissions[sub.id].failure is not None
    assert store.submissions[sub.id].failure == failure_text(FailureReason.RULES_UNAVAILABLE)


def test_a_blob_store_outage_asks_for_a_retry_and_releases_every_claim(
    deps: WorkerDeps, store: InMemorySubmissionStore, blobs: InMemoryBlobStore
) -> None:
    subs = [stored(store, blobs, data) for data in (b"0 0 2 0 cat\n", b"0 0 2 0 tea\n")]
    blobs.down = True

    with pytest.raises(RetryLater) as retry:
        judge_group(deps, [s.id for s in subs])

    assert retry.value.submission_ids == [s.id for s in subs]
    for sub in subs:
        released = store.submissions[sub.id]
        assert (released.state, released.attempts) == (SubmissionState.QUEUED, 1)
        assert released.failure == failure_text(FailureReason.STORAGE_UNAVAILABLE)
        assert events_of(store, sub.id)[-1] == EventType.SUBMISSION_RETRYING


def test_a_store_outage_while_recording_asks_for_a_retry_and_releases_the_claims(
    deps: WorkerDeps, store: InMemorySubmissionStore, blobs: InMemoryBlobStore
) -> None:
    sub = stored(store, blobs, b"0 0 2 0 cat\n")
    store.failing.add("record_results")

    with pytest.raises(RetryLater) as retry:
        judge_group(deps, [sub.id])

    assert retry.value.submission_ids == [sub.id]
    assert store.submissions[sub.id].state == SubmissionState.QUEUED
    assert store.live_result(sub.id) is None

    store.failing.clear()
    assert judge_group(deps, [sub.id]) == {sub.id: Outcome.JUDGED}  # the retry
    assert store.submissions[sub.id].attempts == 2


def test_an_outage_on_the_last_attempt_fails_the_upload_instead_of_asking_for_a_retry(
    deps: WorkerDeps, store: InMemorySubmissionStore, blobs: InMemoryBlobStore
) -> None:
    sub = stored(store, blobs, b"0 0 2 0 cat\n", attempts=MAX_ATTEMPTS - 1)
    blobs.down = True

    outcomes = judge_group(deps, [sub.id])  # raises no RetryLater: nothing left to retry

    assert outcomes == {sub.id: Outcome.FAILED}
    assert store.submissions[sub.id].state == SubmissionState.FAILED


def test_an_upload_past_its_attempts_fails_without_being_judged(
    deps: WorkerDeps, store: InMemorySubmissionStore, blobs: InMemoryBlobStore
) -> None:
    sub = stored(store, blobs, b"0 0 2 0 cat\n", attempts=MAX_ATTEMPTS)

    outcomes = judge_group(deps, [sub.id])

    assert outcomes == {sub.id: Outcome.FAILED}
    failed = store.submissions[sub.id]
    assert failed.failure == failure_text(FailureReason.OUT_OF_ATTEMPTS)
    assert not any(key.startswith("reports/") for key in blobs.objects)


def test_a_judging_abandoned_past_its_time_is_taken_over_and_the_old_attempt_cannot_record(
    deps: WorkerDeps,
    store: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    fake_clock: Clock,
) -> None:
    sub = stored(store, blobs, b"0 0 2 0 cat\n")
    [abandoned] = store.claim_many([sub.id], stale_after=60)  # its worker died
    assert judge_group(deps, [sub.id]) == {sub.id: Outcome.SKIPPED}  # still fresh
    fake_clock.advance(61)

    outcomes = judge_group(deps, [sub.id])

    assert outcomes == {sub.id: Outcome.JUDGED}
    assert store.submissions[sub.id].attempts == abandoned.attempt + 1
    result = store.live_result(sub.id)
    assert result is not None
    assert store.record_results([(abandoned, result, b"")]) == set()


def test_an_attempt_whose_claim_was_handed_on_meanwhile_records_nothing(
    deps: WorkerDeps, store: InMemorySubmissionStore, blobs: InMemoryBlobStore
) -> None:
    sub = stored(store, blobs, b"0 0 2 0 cat\n")

    def handed_on_while_judging(work: Callable[[], Any]) -> Any:
        judging = store.submissions[sub.id]
        assert store.requeue(judging)  # the sweeper found it stuck...
        store.claim_many([sub.id], stale_after=0)  # ...and another worker took it
        return work()

    outcomes = judge_group(deps, [sub.id], judging=handed_on_while_judging)

    assert outcomes == {sub.id: Outcome.LOST_CLAIM}
    current = store.submissions[sub.id]
    assert (current.state, current.attempts) == (SubmissionState.JUDGING, 2)
    assert store.live_result(sub.id) is None


def test_a_judged_upload_is_handed_to_each_open_rejudge_run_of_its_contest(
    deps: WorkerDeps,
    store: InMemorySubmissionStore,
    rejudges: InMemoryRejudgeStore,
    blobs: InMemoryBlobStore,
    publisher: InMemoryPublisher,
) -> None:
    run, _ = rejudges.start("wt", "another-list", LAYOUT.id)
    sub = stored(store, blobs, b"0 0 2 0 cat\n")

    judge_group(deps, [sub.id])

    assert publisher.batches == [(run.id, [sub.id])]
