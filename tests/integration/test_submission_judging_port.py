"""The submission store's behaviour suite (`test_submission_port.py`), continued: judging's moves
(claiming, recording results, releasing a failed attempt) and the sweeper's (what needs
attention, requeueing), on the in-memory fake, SQLite and PostgreSQL. Each test states the
records, results, word signatures and events the SQL adapter gives."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from core.records import Claim, Submission
from core.states import SubmissionState
from core.word_hashes import hashes_in, signature
from tests.integration.port_sides import HOUR, LAYOUT, LEX1, SUITE, judged, side_fixture
from tests.integration.submission_port_sides import FakeSubmissions, SqlSubmissions, Submissions

pytestmark = SUITE
side = side_fixture(FakeSubmissions, SqlSubmissions)


def event(kind: str, sub: Submission, **more: Any) -> dict[str, Any]:
    ids = {"submission": sub.id, "contest": sub.contest_id, "team": sub.team_id}
    return {"type": f"submission.{kind}", **ids, **more}


def judged_event(sub: Submission, score: int) -> dict[str, Any]:
    return event(
        "judged", sub, score=score, legal=1, illegal=0, received_at=sub.received_at,
        lexicon=LEX1, layout=LAYOUT,
    )  # fmt: skip


def test_a_claim_takes_each_free_submission_once_as_read_in_the_order_asked(
    side: Submissions,
) -> None:
    store = side.store
    stored, queued, done = (side.upload("alpha", size=n) for n in (1, 2, 3))
    assert store.mark_queued(queued.id)
    [earlier] = store.claim_many([done.id], HOUR)
    store.record_results([(earlier, judged(done, LEX1, 7), signature(["cat"]))])
    read = {sub.id: side.submission(sub.id) for sub in (stored, queued)}

    claims = store.claim_many([queued.id, "nope", stored.id, done.id, stored.id], HOUR)

    assert claims == [Claim(read[queued.id], 1), Claim(read[stored.id], 1)]
    for sub in (stored, queued):
        taken = side.submission(sub.id)
        assert (taken.state, taken.attempts) == (SubmissionState.JUDGING, 1)
        assert taken.state_at > read[sub.id].state_at
    assert store.claim_many([stored.id, queued.id], HOUR) == []  # taken a moment ago
    assert store.claim_many([], HOUR) == []
    assert side.events("submission.judging") == [
        event("judging", done, attempt=1),
        event("judging", queued, attempt=1),
        event("judging", stored, attempt=1),
    ]


def test_a_recorded_result_judges_the_submission_with_its_words_and_event(
    side: Submissions,
) -> None:
    store = side.store
    sub, other = side.upload("alpha"), side.upload("beta")
    [flaky] = store.claim_many([other.id], HOUR)
    store.release(flaky, "flaky", give_up=False)  # the other one judged at its second attempt
    [claim, other_claim] = store.claim_many([sub.id, other.id], HOUR)
    result = judged(sub, LEX1, 42)

    recorded = store.record_results(
        [(claim, result, signature(["cat", "tea"])), (other_claim, judged(other, LEX1, 9), b"")]
    )

    assert recorded == {sub.id, other.id}
    done = side.submission(sub.id)
    assert (done.state, done.attempts, done.failure) == (SubmissionState.JUDGED, 1, None)
    assert done.judged_at == done.state_at and done.state_at > claim.submission.state_at
    assert side.live_result(sub.id) == {
        **{k: v for k, v in result.__dict__.items() if k != "game"},
        "judged_at": done.judged_at,
        "carried": 0,
    }
    assert side.words(sub.id) == signature(["cat", "tea"])
    assert side.words(other.id) == b""
    again = side.submission(other.id)
    assert (again.state, again.attempts, again.failure) == (SubmissionState.JUDGED, 2, None)
    kept = side.live_result(sub.id)
    assert store.record_results([(claim, judged(sub, LEX1, 1), b"")]) == set()  # done already
    assert side.live_result(sub.id) == kept and side.submission(sub.id) == done
    assert side.events("submission.judged") == [judged_event(sub, 42), judged_event(other, 9)]
    assert store.record_results([]) == set()  # nothing to record, nothing written
    assert len(side.events("submission.judged")) == 2


def test_judging_again_replaces_the_result_kept_under_the_ruleset_and_widens_the_words(
    side: Submissions,
) -> None:
    store = side.store
    sub = side.upload("alpha")
    [first] = store.claim_many([sub.id], HOUR)
    store.record_results([(first, judged(sub, LEX1, 10), signature(["cat"]))])
    judged_once = side.submission(sub.id)
    assert store.requeue(judged_once)  # any submission unchanged since seen, judged too
    [second] = store.claim_many([sub.id], HOUR)

    assert store.record_results([(second, judged(sub, LEX1, 12), signature(["tea"]))]) == {sub.id}

    again = side.submission(sub.id)
    kept = side.live_result(sub.id)
    assert second.attempt == 2 and again.attempts == 2
    assert kept is not None and (kept["score"], kept["judged_at"]) == (12, again.judged_at)
    assert again.judged_at is not None and again.judged_at > str(judged_once.judged_at)
    widened = side.words(sub.id)
    assert widened is not None and hashes_in(widened) == hashes_in(signature(["cat", "tea"]))
    assert side.events("submission.judged", "submission.requeued") == [
        judged_event(sub, 10),
        event("requeued", sub, was="judged"),
        judged_event(sub, 12),
    ]


def test_a_failed_attempt_is_retried_then_failed_for_good_with_its_error_cut(
    side: Submissions,
) -> None:
    store = side.store
    sub = side.upload("alpha")
    error = "x" * 1500 + "y" * 1000
    [first] = store.claim_many([sub.id], HOUR)

    store.release(first, error, give_up=False)
    retried = side.submission(sub.id)
    store.release(first, "late", give_up=True)  # released already: nothing changes
    assert side.submission(sub.id) == retried
    assert (retried.state, retried.failure) == (SubmissionState.QUEUED, error[:2000])
    [second] = store.claim_many([sub.id], HOUR)
    assert store.record_results([(first, judged(sub, LEX1, 1), b"")]) == set()
    store.release(second, "gone", give_up=True)

    failed = side.submission(sub.id)
    assert (failed.state, failed.attempts, failed.failure) == (SubmissionState.FAILED, 2, "gone")
    assert failed.judged_at is None and side.live_result(sub.id) is None
    assert store.claim_many([sub.id], 0) == []  # failed is not free, however long ago
    assert side.events("submission.retrying", "submission.failed") == [
        event("retrying", sub, attempt=1, reason=error[:500]),
        event("failed", sub, attempt=2, reason="gone"),
    ]


def test_a_claim_abandoned_for_longer_than_allowed_is_taken_over_by_a_new_attempt(
    side: Submissions,
) -> None:
    store = side.store
    sub = side.upload("alpha")
    [abandoned] = store.claim_many([sub.id], HOUR)
    assert store.claim_many([sub.id], 60) == []
    side.clock.advance(61)
    before = side.submission(sub.id)

    [taken_over] = store.claim_many([sub.id], 60)

    assert taken_over == Claim(before, 2) and before.attempts == abandoned.attempt == 1
    store.release(abandoned, "too late", give_up=True)  # its attempt no longer holds it
    assert store.record_results([(abandoned, judged(sub, LEX1, 1), b"")]) == set()
    assert side.submission(sub.id).state == SubmissionState.JUDGING
    assert store.record_results([(taken_over, judged(sub, LEX1, 5), b"")]) == {sub.id}
    assert side.events("submission.judging", "submission.judged", "submission.failed") == [
        event("judging", sub, attempt=1),
        event("judging", sub, attempt=2),
        judged_event(sub, 5),
    ]


def test_the_sweeper_sees_what_is_stuck_in_each_state_the_earliest_received_first(
    side: Submissions,
) -> None:
    store = side.store
    # Received in another order than stored: queued, stored, done, judging, young.
    judging, stored, queued, done, young = (
        side.upload("alpha", size=n, received_at=f"2030-01-01T0{hour}:00:00.000000Z")
        for n, hour in enumerate((3, 1, 0, 2, 4))
    )
    assert store.mark_queued(queued.id)
    store.claim_many([judging.id], HOUR)
    [claim] = store.claim_many([done.id], HOUR)
    store.record_results([(claim, judged(done, LEX1, 3), b"")])
    side.clock.advance(100)
    assert store.mark_queued(young.id)  # queued just now

    def stuck(stored_for: float, queued_for: float | None, judging_for: float) -> list[str]:
        found = store.needing_attention(
            stored_for=stored_for, queued_for=queued_for, judging_for=judging_for
        )
        return [s.id for s in found]

    # A stored upload's time is its receipt's (hours before the clock's); the others', their
    # last move's.
    assert stuck(10, 50, 99) == [queued.id, stored.id, judging.id]
    assert stuck(10, None, 99) == [stored.id, judging.id]
    assert stuck(0, 0, 0) == [queued.id, stored.id, judging.id, young.id]
    assert stuck(10, 101, 101) == [stored.id]
    assert stuck(12 * HOUR, None, HOUR) == []
    assert side.submission(stored.id).state == SubmissionState.STORED  # reading moves nothing


def test_requeueing_moves_back_to_queued_only_what_is_as_the_sweeper_saw_it(
    side: Submissions,
) -> None:
    store = side.store
    stored, judging = side.upload("alpha", size=1), side.upload("beta", size=2)
    [claim] = store.claim_many([judging.id], HOUR)
    seen = {sub.id: side.submission(sub.id) for sub in (stored, judging)}

    assert store.requeue(seen[stored.id])
    assert not store.requeue(seen[stored.id])  # moved since it was seen
    assert store.requeue(seen[judging.id])
    assert not store.requeue(replace(seen[judging.id], id="nope"))

    for sub in (stored, judging):
        requeued = side.submission(sub.id)
        assert requeued == replace(
            seen[sub.id], state=SubmissionState.QUEUED, state_at=requeued.state_at
        )
        assert requeued.state_at > seen[sub.id].state_at
    assert store.record_results([(claim, judged(judging, LEX1, 1), b"")]) == set()
    [again] = store.claim_many([judging.id], HOUR)
    assert again.attempt == 2
    assert side.events("submission.queued", "submission.requeued") == [
        event("queued", stored, was="stored"),
        event("requeued", judging, was="judging"),
    ]
