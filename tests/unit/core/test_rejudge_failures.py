"""A rejudge that meets uploads it cannot judge (the object gone, the bytes damaged, the report
over the cap) fails each of them on its own with a reason code: the run still becomes ready,
can be applied, and nothing is retried for ever."""

from __future__ import annotations

from dataclasses import replace

import pytest

from core.errors import BlobStoreUnavailable, FailureReason, RulesetUnavailable, failure_text
from core.fakes import (
    InMemoryBlobStore,
    InMemoryPublisher,
    InMemoryRejudgeStore,
    InMemoryRulesets,
    InMemorySubmissionStore,
)
from core.judging import Outcome, RetryLater, WorkerDeps, judge_group
from core.records import Run, Submission
from core.rejudging import judge_batch, produce
from core.states import RejudgeMode, RejudgeState, SubmissionState
from judge import Lexicon
from tests.unit.core.conftest import LAYOUT, TINY, stored

WITHOUT_BAT = Lexicon.from_words(TINY.words - {"bat"})
LONG = b"a\n" * 5000  # its report is past REPORT_CAP; a one-line upload's is far below
REPORT_CAP = 100_000


class FlakyBlobStore(InMemoryBlobStore):
    """Hands back damaged bytes for the keys in `damaged_once`, the first time each is read."""

    def __init__(self) -> None:
        super().__init__()
        self.damaged_once: set[str] = set()

    def get(self, key: str) -> bytes:
        data = super().get(key)
        if key in self.damaged_once:
            self.damaged_once.discard(key)
            return data[::-1] + b"?"
        return data


@pytest.fixture
def contest(
    deps: WorkerDeps,
    store: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    rulesets: InMemoryRulesets,
) -> dict[str, Submission]:
    """Five uploads judged under TINY; then one's object deleted, one's bytes damaged in
    storage, and one whose report is over the cap the rejudge runs with."""
    rulesets.lexicons[WITHOUT_BAT.id] = WITHOUT_BAT
    uploads = {
        "cat": b"0 0 2 0 cat\n",
        "bat": b"0 0 2 0 bat\n",
        "missing": b"0 0 2 0 tea\n",
        "corrupt": b"0 0 2 0 tab\n",
        "oversized": LONG,
    }
    subs = {name: stored(store, blobs, data) for name, data in uploads.items()}
    assert set(judge_group(deps, [s.id for s in subs.values()]).values()) == {Outcome.JUDGED}
    blobs.delete(subs["missing"].blob_key)
    blobs.objects[subs["corrupt"].blob_key] = b"0 0 2 0 eat\n"
    return subs


def rejudge(deps: WorkerDeps, publisher: InMemoryPublisher, run: Run) -> Run:
    produce(deps, run.id, publisher.publish_batch)
    for run_id, ids in publisher.batches:
        judge_batch(deps, run_id, ids)
    found = deps.rejudges.get(run.id)
    assert found is not None
    return found


def assert_nothing_counted(rejudges: InMemoryRejudgeStore, run: Run) -> None:
    """The batch failed whole: no submission of the run done, none failed."""
    found = rejudges.get(run.id)
    assert found is not None and found.done == 0
    assert rejudges.failures(found, limit=10) == (0, [])


def test_a_run_over_a_missing_a_corrupt_and_an_oversized_upload_fails_those_three_and_is_ready(
    deps: WorkerDeps,
    rejudges: InMemoryRejudgeStore,
    publisher: InMemoryPublisher,
    contest: dict[str, Submission],
) -> None:
    run, _ = rejudges.start("wt", WITHOUT_BAT.id, LAYOUT.id, RejudgeMode.FULL)

    ended = rejudge(replace(deps, max_report_bytes=REPORT_CAP), publisher, run)

    assert (ended.state, ended.done, ended.total) == (RejudgeState.READY, 5, 5)
    count, failures = rejudges.failures(ended, limit=10)
    assert count == 3
    by_id = {f.submission_id: f.reason for f in failures}
    assert by_id == {
        contest["missing"].id: FailureReason.UPLOAD_MISSING,
        contest["corrupt"].id: FailureReason.UPLOAD_CORRUPT,
        contest["oversized"].id: FailureReason.REPORT_TOO_LARGE,
    }
    assert {f.team for f in failures} == {"ravens"}


def test_a_failed_upload_is_not_judged_again_when_its_batch_comes_back(
    deps: WorkerDeps,
    store: InMemorySubmissionStore,
    rejudges: InMemoryRejudgeStore,
    publisher: InMemoryPublisher,
    contest: dict[str, Submission],
) -> None:
    run, _ = rejudges.start("wt", WITHOUT_BAT.id, LAYOUT.id, RejudgeMode.FULL)
    capped = replace(deps, max_report_bytes=REPORT_CAP)
    rejudge(capped, publisher, run)
    events = len(store.events)

    for run_id, ids in publisher.batches:  # redelivered, or republished by the sweeper
        assert judge_batch(capped, run_id, ids) == 0

    assert store.runs[run.id].done == 5
    assert len(store.events) == events


def test_applying_such_a_run_switches_the_contest_and_marks_those_three_failed_with_their_reason(
    deps: WorkerDeps,
    store: InMemorySubmissionStore,
    rejudges: InMemoryRejudgeStore,
    publisher: InMemoryPublisher,
    contest: dict[str, Submission],
) -> None:
    run, _ = rejudges.start("wt", WITHOUT_BAT.id, LAYOUT.id, RejudgeMode.FULL)
    rejudge(replace(deps, max_report_bytes=REPORT_CAP), publisher, run)

    applied = rejudges.apply(run.id)

    assert applied.state == RejudgeState.APPLIED
    assert store.contests["wt"].lexicon_id == WITHOUT_BAT.id
    for name, reason in (
        ("missing", FailureReason.UPLOAD_MISSING),
        ("corrupt", FailureReason.UPLOAD_CORRUPT),
        ("oversized", FailureReason.REPORT_TOO_LARGE),
    ):
        sub = store.submissions[contest[name].id]
        assert (sub.state, sub.failure) == (SubmissionState.FAILED, failure_text(reason))
        assert store.live_result(sub.id) is None
    for name in ("cat", "bat"):
        sub = store.submissions[contest[name].id]
        assert sub.state == SubmissionState.JUDGED
        assert store.live_result(sub.id) is not None
    assert store.live_result(contest["bat"].id).score == 0  # type: ignore[union-attr]


def test_a_blob_store_outage_still_fails_the_batch_for_a_bounded_retry(
    deps: WorkerDeps,
    blobs: InMemoryBlobStore,
    rejudges: InMemoryRejudgeStore,
    publisher: InMemoryPublisher,
    contest: dict[str, Submission],
) -> None:
    run, _ = rejudges.start("wt", WITHOUT_BAT.id, LAYOUT.id, RejudgeMode.FULL)
    produce(deps, run.id, publisher.publish_batch)
    blobs.down = True

    with pytest.raises(BlobStoreUnavailable):
        judge_batch(deps, run.id, publisher.batches[0][1])

    assert_nothing_counted(rejudges, run)


def test_live_judging_fails_bytes_damaged_in_storage_for_good_with_its_reason(
    deps: WorkerDeps, store: InMemorySubmissionStore, blobs: InMemoryBlobStore
) -> None:
    damaged = stored(store, blobs, b"0 0 2 0 cat\n")
    fine = stored(store, blobs, b"0 0 2 0 tea\n")
    blobs.objects[damaged.blob_key] = b"0 0 2 0 eat\n"

    outcomes = judge_group(deps, [damaged.id, fine.id])  # raises no RetryLater

    assert outcomes == {damaged.id: Outcome.FAILED, fine.id: Outcome.JUDGED}
    failed = store.submissions[damaged.id]
    assert failed.failure == failure_text(FailureReason.UPLOAD_CORRUPT)
    assert failed.attempts == 1


def test_a_read_damaged_once_on_the_way_is_read_again_and_judged(
    store: InMemorySubmissionStore,
    rejudges: InMemoryRejudgeStore,
    rulesets: InMemoryRulesets,
    publisher: InMemoryPublisher,
) -> None:
    flaky = FlakyBlobStore()
    deps = WorkerDeps(store, rejudges, flaky, rulesets, 3, 60.0, publisher.publish_batch)
    sub = stored(store, flaky, b"0 0 2 0 cat\n")
    flaky.damaged_once.add(sub.blob_key)

    assert judge_group(deps, [sub.id]) == {sub.id: Outcome.JUDGED}


def test_an_outage_is_still_retried_and_the_submission_keeps_only_a_reason_code(
    deps: WorkerDeps, store: InMemorySubmissionStore, blobs: InMemoryBlobStore
) -> None:
    sub = stored(store, blobs, b"0 0 2 0 cat\n")
    blobs.down = True

    with pytest.raises(RetryLater) as raised:
        judge_group(deps, [sub.id])

    assert raised.value.submission_ids == [sub.id]
    released = store.submissions[sub.id]
    assert released.state == SubmissionState.QUEUED
    assert released.failure == failure_text(FailureReason.STORAGE_UNAVAILABLE)


def test_a_run_whose_word_list_cannot_be_loaded_fails_its_batch_for_a_retry_not_its_uploads(
    deps: WorkerDeps,
    rulesets: InMemoryRulesets,
    rejudges: InMemoryRejudgeStore,
    publisher: InMemoryPublisher,
    contest: dict[str, Submission],
) -> None:
    run, _ = rejudges.start("wt", WITHOUT_BAT.id, LAYOUT.id, RejudgeMode.FULL)
    produce(deps, run.id, publisher.publish_batch)
    del rulesets.lexicons[WITHOUT_BAT.id]  # the run's list gone, as if its object were deleted

    with pytest.raises(RulesetUnavailable):
        judge_batch(deps, run.id, publisher.batches[0][1])

    assert_nothing_counted(rejudges, run)


def test_live_judging_under_a_word_list_that_cannot_be_loaded_retries_and_fails_no_upload(
    deps: WorkerDeps,
    store: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    rulesets: InMemoryRulesets,
) -> None:
    sub = stored(store, blobs, b"0 0 2 0 cat\n")
    live_list = rulesets.lexicons.pop(TINY.id)

    with pytest.raises(RetryLater):
        judge_group(deps, [sub.id])

    found = store.get_submission(sub.id)
    assert found is not None and found.state is SubmissionState.QUEUED
    rulesets.lexicons[TINY.id] = live_list
    assert judge_group(deps, [sub.id]) == {sub.id: Outcome.JUDGED}
