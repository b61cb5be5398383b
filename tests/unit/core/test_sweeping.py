"""The sweeper against the fakes: uploads stuck stored, queued or judging are published again,
and a rejudge run that stopped moving has its producer started again."""

from __future__ import annotations

from core import tuning
from core.events import EventType
from core.fakes import (
    InMemoryBlobStore,
    InMemoryPublisher,
    InMemoryRejudgeStore,
    InMemorySubmissionStore,
)
from core.messages import HEAVY_PRIORITIES, LIGHT_PRIORITY
from core.states import RejudgeState, SubmissionState
from core.sweeping import SweeperThread, sweep
from tests.unit.core.conftest import LAYOUT, Clock, stored

STORED_FOR, QUEUED_FOR, JUDGING_FOR = 30.0, 120.0, 300.0


def sweep_once(
    store: InMemorySubmissionStore,
    rejudges: InMemoryRejudgeStore,
    publisher: InMemoryPublisher,
    backlog: int | None = None,
) -> int:
    return sweep(
        store,
        rejudges,
        publisher,
        stored_for=STORED_FOR,
        queued_for=QUEUED_FOR,
        judging_for=JUDGING_FOR,
        backlog=lambda: backlog,
    )


def test_uploads_stuck_in_stored_or_queued_are_published_again_and_a_fresh_one_is_left(
    store: InMemorySubmissionStore,
    rejudges: InMemoryRejudgeStore,
    blobs: InMemoryBlobStore,
    publisher: InMemoryPublisher,
    fake_clock: Clock,
) -> None:
    stuck_stored = stored(store, blobs, b"0 0 2 0 cat\n", state_at=fake_clock.ago(600))
    stuck_queued = stored(store, blobs, b"0 0 2 0 tea\n", state_at=fake_clock.ago(600))
    store.mark_queued(stuck_queued.id)
    fake_clock.advance(QUEUED_FOR + 1)
    fresh = stored(store, blobs, b"0 0 2 0 bat\n", state_at=fake_clock())

    published = sweep_once(store, rejudges, publisher)

    assert published == 2
    assert sorted(publisher.published) == sorted([stuck_stored.id, stuck_queued.id])
    assert store.submissions[stuck_stored.id].state == SubmissionState.QUEUED
    assert store.submissions[fresh.id].state == SubmissionState.STORED
    kinds = {e["submission"]: e["type"] for e in store.events if e.get("was")}
    assert kinds == {
        stuck_stored.id: EventType.SUBMISSION_QUEUED,
        stuck_queued.id: EventType.SUBMISSION_REQUEUED,
    }


def test_a_queued_upload_is_not_published_again_while_the_live_queue_has_a_backlog(
    store: InMemorySubmissionStore,
    rejudges: InMemoryRejudgeStore,
    blobs: InMemoryBlobStore,
    publisher: InMemoryPublisher,
    fake_clock: Clock,
) -> None:
    late = stored(store, blobs, b"0 0 2 0 tea\n")
    store.mark_queued(late.id)
    lost = stored(store, blobs, b"0 0 2 0 cat\n")
    fake_clock.advance(QUEUED_FOR + 1)

    published = sweep_once(store, rejudges, publisher, backlog=40)

    assert published == 1
    assert publisher.published == [lost.id]  # never published: a backlog does not explain it


def test_a_judging_attempt_stuck_past_its_time_is_handed_on_to_another_worker(
    store: InMemorySubmissionStore,
    rejudges: InMemoryRejudgeStore,
    blobs: InMemoryBlobStore,
    publisher: InMemoryPublisher,
    fake_clock: Clock,
) -> None:
    sub = stored(store, blobs, b"0 0 2 0 cat\n")
    [claim] = store.claim_many([sub.id], stale_after=JUDGING_FOR)
    fake_clock.advance(JUDGING_FOR + 1)

    assert sweep_once(store, rejudges, publisher) == 1

    assert publisher.published == [sub.id]
    requeued = store.submissions[sub.id]
    assert (requeued.state, requeued.attempts) == (SubmissionState.QUEUED, claim.attempt)


def test_with_the_broker_down_nothing_counts_as_published_and_the_upload_waits_its_turn_queued(
    store: InMemorySubmissionStore,
    rejudges: InMemoryRejudgeStore,
    blobs: InMemoryBlobStore,
    publisher: InMemoryPublisher,
    fake_clock: Clock,
) -> None:
    sub = stored(store, blobs, b"0 0 2 0 cat\n")
    fake_clock.advance(STORED_FOR + 1)
    publisher.down = True

    assert sweep_once(store, rejudges, publisher) == 0

    assert store.submissions[sub.id].state == SubmissionState.QUEUED
    publisher.down = False
    assert sweep_once(store, rejudges, publisher) == 0  # queued just now: not yet
    fake_clock.advance(QUEUED_FOR + 1)
    assert sweep_once(store, rejudges, publisher) == 1
    assert publisher.published == [sub.id]


def test_a_rejudge_run_without_progress_has_its_producer_started_again_from_the_start(
    store: InMemorySubmissionStore,
    rejudges: InMemoryRejudgeStore,
    blobs: InMemoryBlobStore,
    publisher: InMemoryPublisher,
    fake_clock: Clock,
) -> None:
    stored(store, blobs, b"0 0 2 0 cat\n")
    run, _ = rejudges.start("wt", "a-fixed-list", LAYOUT.id)
    rejudges.advance(run.id, "f" * 32)  # paged to the end; its batches were lost
    fake_clock.advance(JUDGING_FOR + 1)

    sweep_once(store, rejudges, publisher)

    restarted = store.runs[run.id]
    assert publisher.rejudges == [run.id]
    assert (restarted.state, restarted.cursor) == (RejudgeState.RUNNING, "")
    assert rejudges.stalled(JUDGING_FOR) == []  # moved just now


def test_a_heavy_upload_is_published_again_at_a_heavy_priority_and_a_light_one_at_zero(
    store: InMemorySubmissionStore,
    rejudges: InMemoryRejudgeStore,
    blobs: InMemoryBlobStore,
    publisher: InMemoryPublisher,
    fake_clock: Clock,
) -> None:
    big = b"0 0 2 0 cat\n" * (tuning.HEAVY_BYTES // 12 + 1)
    heavy = [stored(store, blobs, big + bytes([n]), state_at=fake_clock.ago(600)) for n in (1, 2)]
    light = stored(store, blobs, b"0 0 2 0 tea\n", state_at=fake_clock.ago(600))

    assert sweep_once(store, rejudges, publisher) == 3

    assert publisher.priorities[light.id] == LIGHT_PRIORITY
    # Alone in its message, judged only in a heavy slot; a team's second waits behind others'
    # first, as intake sends them.
    assert [publisher.priorities[s.id] for s in heavy] == list(HEAVY_PRIORITIES[:2])
    assert [heavy[0].id] in publisher.groups and [heavy[1].id] in publisher.groups


def test_after_the_broker_changes_every_queued_upload_is_published_again_at_once(
    store: InMemorySubmissionStore,
    rejudges: InMemoryRejudgeStore,
    blobs: InMemoryBlobStore,
    publisher: InMemoryPublisher,
    fake_clock: Clock,
) -> None:
    """A Redis failover may lose the newest messages: they are not left for `queued_for`, nor
    behind a backlog (some messages survived, which says nothing of the lost ones)."""
    queued = stored(store, blobs, b"0 0 2 0 cat\n", state_at=fake_clock())
    store.mark_queued(queued.id)
    fake_clock.advance(1)
    epochs = iter(["run-a", None, "run-a", "run-b", "run-b"])
    sweeper = SweeperThread(
        store, rejudges, publisher, interval=5.0, stored_for=STORED_FOR,
        queued_for=QUEUED_FOR, judging_for=JUDGING_FOR, backlog=lambda: 40,
        broker_epoch=lambda: next(epochs),
    )  # fmt: skip

    for _ in range(3):  # the same server, once unknown: nothing is due yet
        sweeper.tick()
    assert publisher.published == []
    sweeper.tick()  # another server: published again, backlog or not
    assert publisher.published == [queued.id]
    sweeper.tick()  # once
    assert publisher.published == [queued.id]
