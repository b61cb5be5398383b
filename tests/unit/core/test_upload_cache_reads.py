"""The host's upload cache in judging: what is judged live or read from the blob store is kept,
a rejudge reads it back without the blob store, live judging never reads it, and nothing that
fails its digest is judged or kept."""

from __future__ import annotations

from dataclasses import replace

import pytest

from core.errors import UploadCorrupt
from core.fakes import (
    InMemoryBlobStore,
    InMemoryPublisher,
    InMemoryRejudgeStore,
    InMemoryRulesets,
    InMemorySubmissionStore,
    InMemoryUploadCache,
)
from core.judging import Outcome, WorkerDeps, judge_group, rejudged_bytes, upload_bytes
from core.rejudging import judge_batch, produce
from core.states import RejudgeMode, RejudgeState
from judge import Lexicon
from tests.unit.core.conftest import LAYOUT, TINY, stored

WITHOUT_BAT = Lexicon.from_words(TINY.words - {"bat"})


@pytest.fixture
def cache() -> InMemoryUploadCache:
    return InMemoryUploadCache()


@pytest.fixture
def cached(deps: WorkerDeps, cache: InMemoryUploadCache) -> WorkerDeps:
    """The worker's dependencies with the host's upload cache."""
    return replace(deps, upload_cache=cache)


def test_a_rejudge_reads_the_uploads_judged_live_on_its_host_without_the_blob_store(
    cached: WorkerDeps,
    store: InMemorySubmissionStore,
    rejudges: InMemoryRejudgeStore,
    blobs: InMemoryBlobStore,
    rulesets: InMemoryRulesets,
    publisher: InMemoryPublisher,
    cache: InMemoryUploadCache,
) -> None:
    rulesets.lexicons[WITHOUT_BAT.id] = WITHOUT_BAT
    moves = {word: f"0 0 2 0 {word}\n".encode() for word in ("cat", "bat")}
    subs = [stored(store, blobs, data) for data in moves.values()]
    judge_group(cached, [s.id for s in subs], inline={s.id: moves[w] for s, w in zip(subs, moves)})
    assert sorted(cache.kept.values()) == sorted(moves.values())
    blobs.down = True  # any read of the blob store would fail the batch as an outage

    run, _ = rejudges.start("wt", WITHOUT_BAT.id, LAYOUT.id, RejudgeMode.FULL)
    produce(cached, run.id, publisher.publish_batch)
    for run_id, ids in publisher.batches:
        judge_batch(cached, run_id, ids)

    ended = rejudges.get(run.id)
    assert ended is not None
    assert (ended.state, ended.done) == (RejudgeState.READY, 2)
    assert store.results[(subs[1].id, WITHOUT_BAT.id, LAYOUT.id)].result.score == 0


def test_an_upload_read_from_the_blob_store_is_kept_and_a_rejudge_reads_it_from_the_cache(
    cached: WorkerDeps,
    store: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    cache: InMemoryUploadCache,
) -> None:
    data = b"0 0 2 0 cat\n"
    sub = stored(store, blobs, data)

    assert rejudged_bytes(cached, sub) == data
    blobs.down = True

    assert rejudged_bytes(cached, sub) == data
    assert cache.kept == {sub.sha256: data}


def test_live_judging_never_reads_the_cache_so_an_upload_whose_object_is_gone_fails_as_missing(
    cached: WorkerDeps,
    store: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    cache: InMemoryUploadCache,
) -> None:
    data = b"0 0 2 0 cat\n"
    sub = stored(store, blobs, data)
    cache.put(sub.sha256, data)  # the same bytes, judged here for another team
    blobs.delete(sub.blob_key)

    assert judge_group(cached, [sub.id]) == {sub.id: Outcome.FAILED}
    assert cache.reads == 0


def test_a_damaged_copy_in_the_cache_is_read_again_from_the_blob_store_and_replaced(
    cached: WorkerDeps,
    store: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    cache: InMemoryUploadCache,
) -> None:
    data = b"0 0 2 0 cat\n"
    sub = stored(store, blobs, data)
    cache.kept[sub.sha256] = b"0 0 2 0 bat\n"

    assert rejudged_bytes(cached, sub) == data
    assert cache.kept[sub.sha256] == data


def test_bytes_that_do_not_match_their_digest_are_neither_judged_nor_kept(
    cached: WorkerDeps,
    store: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    cache: InMemoryUploadCache,
) -> None:
    sub = stored(store, blobs, b"0 0 2 0 cat\n")
    blobs.objects[sub.blob_key] = b"0 0 2 0 bat\n"  # the stored object damaged too

    with pytest.raises(UploadCorrupt):
        upload_bytes(cached, sub, b"0 0 2 0 tab\n")
    with pytest.raises(UploadCorrupt):
        rejudged_bytes(cached, sub)
    assert cache.kept == {}
