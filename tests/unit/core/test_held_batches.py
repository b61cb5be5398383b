"""Rejudge batches go where the bytes are: each batch holds uploads of one holder (the worker
host whose upload cache has them, as recorded when it judged them) and is published for that
host; judging a batch makes the judging host their holder (`core.rejudging`)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from core.fakes import (
    InMemoryBlobStore,
    InMemoryPublisher,
    InMemoryRejudgeStore,
    InMemoryRulesets,
    InMemorySubmissionStore,
    InMemoryUploadCache,
)
from core.judging import WorkerDeps, judge_group
from core.records import Submission
from core.rejudging import judge_batch, produce
from core.states import RejudgeMode
from tests.unit.core.conftest import LAYOUT, stored
from tests.unit.core.test_rejudging import WITHOUT_BAT


@pytest.fixture
def rulesets_with_fix(rulesets: InMemoryRulesets) -> None:
    """The fixed list, without "bat", known beside the live one."""
    rulesets.lexicons[WITHOUT_BAT.id] = WITHOUT_BAT


def on_host(deps: WorkerDeps, host: str | None) -> WorkerDeps:
    """The same store and broker, seen from the worker host `host` (None: one keeping none)."""
    return replace(deps, upload_cache=InMemoryUploadCache(host))


def judged_on(
    deps: WorkerDeps,
    store: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    hosts: list[str | None],
) -> dict[str, str | None]:
    """An upload judged live on each host given, in turn; each one's holder, by id."""
    holders = {}
    for n, host in enumerate(hosts):
        sub = stored(store, blobs, f"0 0 2 0 cat\n{n}\n".encode())
        judge_group(on_host(deps, host), [sub.id])
        holders[sub.id] = host
    return holders


def test_each_batch_holds_the_uploads_of_one_holder_and_is_published_for_it(
    deps: WorkerDeps,
    store: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    rejudges: InMemoryRejudgeStore,
    publisher: InMemoryPublisher,
    rulesets_with_fix: None,
) -> None:
    holders = judged_on(deps, store, blobs, ["h1", "h2", None, "h1", "h2", "h2", None] * 30)
    assert {sid: store.submissions[sid].held_on for sid in holders} == holders
    run, _ = rejudges.start("wt", WITHOUT_BAT.id, LAYOUT.id, RejudgeMode.FULL)

    produce(deps, run.id, publisher.publish_batch)

    batches = list(zip(publisher.batches, publisher.batch_hosts, strict=True))
    assert sorted(sid for (_, ids), _ in batches for sid in ids) == sorted(holders)
    for (_, ids), host in batches:
        assert {holders[sid] for sid in ids} == {host}
    assert {host for _, host in batches} == {"h1", "h2", None}


def test_judging_a_batch_makes_the_judging_host_the_holder_of_its_uploads(
    deps: WorkerDeps,
    store: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    rejudges: InMemoryRejudgeStore,
    publisher: InMemoryPublisher,
    rulesets_with_fix: None,
) -> None:
    holders = judged_on(deps, store, blobs, ["h1", "h1", None])
    run, _ = rejudges.start("wt", WITHOUT_BAT.id, LAYOUT.id, RejudgeMode.FULL)
    produce(deps, run.id, publisher.publish_batch)

    for run_id, ids in publisher.batches:  # h2 takes them all: h1 was busy, say
        assert judge_batch(on_host(deps, "h2"), run_id, ids) == len(ids)

    assert {sid: store.submissions[sid].held_on for sid in holders} == dict.fromkeys(holders, "h2")
    ended = rejudges.get(run.id)
    assert ended is not None and ended.state == "ready"


def test_a_batch_handed_back_for_a_live_upload_goes_to_the_judging_hosts_queue(
    deps: WorkerDeps,
    store: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    rejudges: InMemoryRejudgeStore,
    publisher: InMemoryPublisher,
    rulesets_with_fix: None,
) -> None:
    holders = judged_on(deps, store, blobs, [None, None, None])
    run, _ = rejudges.start("wt", WITHOUT_BAT.id, LAYOUT.id, RejudgeMode.FULL)
    ids = sorted(holders)

    judge_batch(on_host(deps, "h3"), run.id, ids, lambda: True, publisher.publish_batch)

    assert publisher.batches == [(run.id, ids[1:])]  # judged the first, then made way
    assert publisher.batch_hosts == ["h3"]


def test_a_live_upload_judged_during_a_run_is_published_for_its_host(
    deps: WorkerDeps,
    store: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    rejudges: InMemoryRejudgeStore,
    publisher: InMemoryPublisher,
    rulesets_with_fix: None,
) -> None:
    run, _ = rejudges.start("wt", WITHOUT_BAT.id, LAYOUT.id, RejudgeMode.FULL)
    late: Submission = stored(store, blobs, b"0 0 2 0 tea\n")

    judge_group(on_host(deps, "h4"), [late.id])

    assert publisher.batches[-1] == (run.id, [late.id])
    assert publisher.batch_hosts[-1] == "h4"
    assert store.submissions[late.id].held_on == "h4"
