"""A result the database refuses fails its own upload, once, and never its group's others."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from core.errors import FailureReason, Invalid, failure_text
from core.judging import Outcome, RetryLater, judge_group
from core.records import Claim, JudgedResult
from core.states import SubmissionState
from devstack.testing.pipeline import Pipeline, open_pipeline, worker_deps
from infra.sql.store import SqlStore


class RefusingStore(SqlStore):
    """The SQL store, refusing (as PostgreSQL refuses an out-of-range value) any transaction
    that would record the result of `refused`."""

    def __init__(self, store: SqlStore, refused: str) -> None:
        super().__init__(store.engine)
        self.refused = refused
        self.calls: list[list[str]] = []

    def record_results(
        self, judged: Sequence[tuple[Claim, JudgedResult, bytes]], held_on: str | None = None
    ) -> set[str]:
        ids = [claim.submission.id for claim, _, _ in judged]
        self.calls.append(ids)
        if self.refused in ids:
            raise Invalid("a value cannot be stored: score out of range for type bigint")
        return super().record_results(judged, held_on)


@pytest.fixture
def pipe(tmp_path: Path) -> Iterator[Pipeline]:
    with open_pipeline(tmp_path) as pipeline:
        pipeline.add_contest("open")
        yield pipeline


def three_uploads(pipe: Pipeline) -> list[str]:
    team = pipe.add_team("ravens")
    moves = (b"0 0 2 0 cat\n", b"0 0 2 0 tea\n", b"0 0 2 0 bat\n")
    return [pipe.accepted(team, data)["id"] for data in moves]


def test_a_result_the_database_refuses_fails_only_its_upload_and_the_others_are_recorded(
    pipe: Pipeline,
) -> None:
    first, bad, last = three_uploads(pipe)
    deps = worker_deps(pipe.services)
    store = RefusingStore(pipe.store, refused=bad)
    deps.store = store

    outcomes = judge_group(deps, [first, bad, last])  # raises no RetryLater

    assert outcomes == {first: Outcome.JUDGED, bad: Outcome.FAILED, last: Outcome.JUDGED}
    assert pipe.state(first) == pipe.state(last) == SubmissionState.JUDGED
    failed = pipe.submission(bad)
    assert failed["state"] == SubmissionState.FAILED
    kept = pipe.store.get_submission(bad)
    assert kept is not None and kept.failure == failure_text(FailureReason.NOT_RECORDED)
    assert "bigint" not in str(failed) and "Invalid" not in str(failed)  # the driver's words
    assert store.calls[0] == [first, bad, last]  # one transaction first, then one each


def test_an_upload_failed_at_recording_is_not_judged_again_by_a_redelivered_message(
    pipe: Pipeline,
) -> None:
    first, bad, last = three_uploads(pipe)
    deps = worker_deps(pipe.services)
    deps.store = RefusingStore(pipe.store, refused=bad)
    judge_group(deps, [first, bad, last])

    again = judge_group(deps, [bad])

    assert again == {bad: Outcome.SKIPPED}
    assert pipe.state(bad) == SubmissionState.FAILED


def test_an_outage_while_recording_still_asks_for_a_retry(pipe: Pipeline) -> None:
    first, second, third = three_uploads(pipe)
    deps = worker_deps(pipe.services)

    class Down(SqlStore):
        def record_results(
            self, judged: Sequence[tuple[Claim, JudgedResult, bytes]], held_on: str | None = None
        ) -> set[str]:
            raise ConnectionError("the database went away")

    deps.store = Down(pipe.store.engine)
    with pytest.raises(RetryLater) as caught:
        judge_group(deps, [first, second, third])
    assert caught.value.submission_ids == [first, second, third]
    assert {pipe.state(s) for s in (first, second, third)} == {SubmissionState.QUEUED}
