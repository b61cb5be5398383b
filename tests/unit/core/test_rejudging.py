"""Rejudging against the fakes: the producer pages a contest's submissions into batches (or
carries the ones a word-list fix cannot touch), each batch is judged under the run's ruleset,
and the run is ready once every submission has a result under it."""

from __future__ import annotations

import pytest

from core import tuning
from core.events import EventType
from core.fakes import (
    InMemoryBlobStore,
    InMemoryPublisher,
    InMemoryRejudgeStore,
    InMemoryRulesets,
    InMemorySubmissionStore,
)
from core.judging import WorkerDeps, judge_group
from core.records import Run, Submission
from core.rejudging import batch_size, judge_batch, produce
from core.states import RejudgeMode, RejudgeState
from judge import Lexicon
from tests.unit.core.conftest import LAYOUT, TINY, stored

WITHOUT_BAT = Lexicon.from_words(TINY.words - {"bat"})


@pytest.fixture
def judged(
    deps: WorkerDeps,
    store: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    rulesets: InMemoryRulesets,
) -> dict[str, Submission]:
    """ "cat", "tea" and "bat" judged under the live list TINY; the list without "bat" known."""
    rulesets.lexicons[WITHOUT_BAT.id] = WITHOUT_BAT
    subs = {
        word: stored(store, blobs, f"0 0 2 0 {word}\n".encode()) for word in ("cat", "tea", "bat")
    }
    judge_group(deps, [s.id for s in subs.values()])
    return subs


def run_all(deps: WorkerDeps, publisher: InMemoryPublisher, run: Run) -> Run:
    """Produce the run, judge every batch it published; the run as it ends."""
    produce(deps, run.id, publisher.publish_batch)
    for run_id, ids in publisher.batches:
        judge_batch(deps, run_id, ids)
    found = deps.rejudges.get(run.id)
    assert found is not None
    return found


def score_under(store: InMemorySubmissionStore, sub: Submission, lexicon: Lexicon) -> int:
    return store.results[(sub.id, lexicon.id, LAYOUT.id)].result.score


def test_a_full_rejudge_judges_every_submission_again_and_the_run_becomes_ready(
    deps: WorkerDeps,
    store: InMemorySubmissionStore,
    rejudges: InMemoryRejudgeStore,
    publisher: InMemoryPublisher,
    judged: dict[str, Submission],
) -> None:
    run, _ = rejudges.start("wt", WITHOUT_BAT.id, LAYOUT.id, RejudgeMode.FULL)

    ended = run_all(deps, publisher, run)

    assert publisher.batches == [(run.id, sorted(s.id for s in judged.values()))]
    assert (ended.state, ended.done, ended.total, ended.carried) == (RejudgeState.READY, 3, 3, 0)
    assert score_under(store, judged["bat"], WITHOUT_BAT) == 0
    assert score_under(store, judged["cat"], WITHOUT_BAT) == score_under(store, judged["cat"], TINY)
    assert [e["type"] for e in store.events][-1] == EventType.REJUDGE_READY


def test_a_full_rejudges_batches_are_large_at_first_and_shrink_towards_its_end(
    deps: WorkerDeps,
    store: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    rejudges: InMemoryRejudgeStore,
    publisher: InMemoryPublisher,
) -> None:
    subs = [stored(store, blobs, f"0 0 2 0 cat\n{n}\n".encode()) for n in range(3000)]
    run, _ = rejudges.start("wt", WITHOUT_BAT.id, LAYOUT.id, RejudgeMode.FULL)

    produce(deps, run.id, publisher.publish_batch)

    sizes = [len(ids) for _, ids in publisher.batches]
    assert [sid for _, ids in publisher.batches for sid in ids] == sorted(s.id for s in subs)
    assert sizes[0] == tuning.REJUDGE_BATCH_MOST
    assert sizes == sorted(sizes, reverse=True)  # never larger again, a page's end included
    assert set(sizes[:-1]) <= {64, 32, 16} and sizes[-1] <= 16  # the last: what is left
    # The last REJUDGE_SPREAD batches or so are of the smallest size.
    assert sizes[-tuning.REJUDGE_SPREAD :][:-1] == [tuning.REJUDGE_BATCH] * (
        tuning.REJUDGE_SPREAD - 1
    )


def test_a_batch_of_large_uploads_ends_at_its_byte_budget(
    deps: WorkerDeps,
    store: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    rejudges: InMemoryRejudgeStore,
    publisher: InMemoryPublisher,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    line = b"0 0 2 0 cat\n"
    subs = [
        stored(store, blobs, line + b"\n" * (1000 - len(line)) + str(n).encode()) for n in range(40)
    ]
    monkeypatch.setattr(tuning, "REJUDGE_BATCH_BYTES", 10_000)  # ten of these uploads
    run, _ = rejudges.start("wt", WITHOUT_BAT.id, LAYOUT.id, RejudgeMode.FULL)

    produce(deps, run.id, publisher.publish_batch)

    assert [len(ids) for _, ids in publisher.batches] == [10, 10, 10, 10]
    assert [sid for _, ids in publisher.batches for sid in ids] == sorted(s.id for s in subs)


def test_the_batch_size_follows_what_is_left_of_a_full_rejudge_only() -> None:
    most, spread = tuning.REJUDGE_BATCH_MOST, tuning.REJUDGE_SPREAD
    assert batch_size(most * spread, every=True) == most
    assert batch_size(most * spread - 1, every=True) == most // 2
    assert batch_size(tuning.REJUDGE_BATCH * spread, every=True) == tuning.REJUDGE_BATCH
    assert batch_size(0, every=True) == tuning.REJUDGE_BATCH
    assert batch_size(10 * most * spread, every=False) == tuning.REJUDGE_BATCH
    # Every size divides the page and the larger sizes: a page splits into whole batches.
    assert most % tuning.REJUDGE_BATCH == 0 and (most // tuning.REJUDGE_BATCH).bit_count() == 1
    assert tuning.REJUDGE_PAGE % most == 0


def test_an_affected_only_rejudge_judges_the_submissions_using_a_changed_word_and_carries_the_rest(
    deps: WorkerDeps,
    store: InMemorySubmissionStore,
    rejudges: InMemoryRejudgeStore,
    publisher: InMemoryPublisher,
    judged: dict[str, Submission],
) -> None:
    run, _ = rejudges.start("wt", WITHOUT_BAT.id, LAYOUT.id, RejudgeMode.AFFECTED)

    ended = run_all(deps, publisher, run)

    assert publisher.batches == [(run.id, [judged["bat"].id])]
    assert (ended.state, ended.done, ended.total, ended.carried) == (RejudgeState.READY, 3, 3, 2)
    for word in ("cat", "tea"):
        carried = store.results[(judged[word].id, WITHOUT_BAT.id, LAYOUT.id)]
        assert carried.carried
        assert carried.result.score == score_under(store, judged[word], TINY)
    assert score_under(store, judged["bat"], WITHOUT_BAT) == 0


def test_an_upload_stored_while_a_run_is_open_keeps_it_from_being_ready_until_judged_for_it(
    deps: WorkerDeps,
    store: InMemorySubmissionStore,
    rejudges: InMemoryRejudgeStore,
    blobs: InMemoryBlobStore,
    publisher: InMemoryPublisher,
    judged: dict[str, Submission],
) -> None:
    run, _ = rejudges.start("wt", WITHOUT_BAT.id, LAYOUT.id, RejudgeMode.FULL)
    assert run_all(deps, publisher, run).state == RejudgeState.READY

    late = stored(store, blobs, b"0 0 2 0 tab\n")
    reopened = store.runs[run.id]
    assert (reopened.state, reopened.total) == (RejudgeState.RUNNING, 4)
    judge_group(deps, [late.id])
    assert publisher.batches[-1] == (run.id, [late.id])
    judge_batch(deps, run.id, [late.id])

    ended = store.runs[run.id]
    assert (ended.state, ended.done) == (RejudgeState.READY, 4)


def test_a_batch_delivered_twice_is_counted_once(
    deps: WorkerDeps,
    store: InMemorySubmissionStore,
    rejudges: InMemoryRejudgeStore,
    publisher: InMemoryPublisher,
    judged: dict[str, Submission],
) -> None:
    run, _ = rejudges.start("wt", WITHOUT_BAT.id, LAYOUT.id, RejudgeMode.FULL)
    produce(deps, run.id, publisher.publish_batch)
    [(_, ids)] = publisher.batches

    first = judge_batch(deps, run.id, ids)
    again = judge_batch(deps, run.id, ids)

    assert (first, again) == (3, 0)
    assert store.runs[run.id].done == 3


def test_a_producer_started_again_pages_from_the_start_and_counts_nothing_twice(
    deps: WorkerDeps,
    store: InMemorySubmissionStore,
    rejudges: InMemoryRejudgeStore,
    publisher: InMemoryPublisher,
    judged: dict[str, Submission],
) -> None:
    run, _ = rejudges.start("wt", WITHOUT_BAT.id, LAYOUT.id, RejudgeMode.AFFECTED)
    produce(deps, run.id, publisher.publish_batch)  # its batch is lost
    rejudges.restart_producer(run.id)

    ended = run_all(deps, publisher, run)

    assert publisher.batches == [(run.id, [judged["bat"].id])] * 2
    assert (ended.state, ended.done, ended.carried) == (RejudgeState.READY, 3, 2)
