"""One behaviour suite for the submission store (`core.ports.SubmissionStore`), run on every
implementation: the in-memory fake (`core.fake_store`), SQLite and PostgreSQL
(`infra.sql.store.SqlStore`). Here: storing uploads and copies of shared ones, queueing them,
and word lists; judging's moves and the sweeper's reads are in `test_submission_judging_port.py`.
Each test states the records, errors and events (types and fields) the SQL adapter gives, so a
fake that drifts from its adapter fails. The sides are in `submission_port_sides.py`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from core.errors import Closed, Duplicate, NotAllowed, StoreUnavailable
from core.ports import SubmissionStore
from core.records import Claim, Submission, WordList
from core.states import SubmissionState
from tests.integration.port_sides import (
    CLOSES,
    LEX1,
    START,
    SUITE,
    contest,
    judged,
    new_upload,
    side_fixture,
)
from tests.integration.submission_port_sides import FakeSubmissions, SqlSubmissions, Submissions

pytestmark = SUITE
side = side_fixture(FakeSubmissions, SqlSubmissions)

LATE = "2030-01-02T00:00:00.000001Z"  # a microsecond after the contests close


def stored(sub: Submission) -> dict[str, Any]:
    return {
        "type": "submission.stored", "submission": sub.id, "contest": sub.contest_id,
        "team": sub.team_id, "sha256": sub.sha256, "size": sub.size,
        "received_at": sub.received_at,
    }  # fmt: skip


def queued(sub: Submission, **more: Any) -> dict[str, Any]:
    ids = {"submission": sub.id, "contest": sub.contest_id, "team": sub.team_id}
    return {"type": "submission.queued", **ids, **more}


def copied(sub: Submission, upload: Submission) -> dict[str, Any]:
    return {
        "type": "submission.copied", "submission": sub.id, "contest": sub.contest_id,
        "team": upload.team_id, "sha256": upload.sha256, "size": upload.size,
        "received_at": upload.received_at,
    }  # fmt: skip


def test_an_upload_is_stored_as_sent_and_found_again_by_its_teams_bytes(side: Submissions) -> None:
    store = side.store
    sub = new_upload(side.teams["alpha"], size=321)

    assert store.store_submissions([sub]) == [sub]

    assert store.get_submission(sub.id) == sub
    assert store.get_submission("nope") is None
    assert store.find_same("c1", sub.team_id, sub.sha256) == sub
    assert store.find_same("c1", side.teams["beta"].id, sub.sha256) is None  # its own bytes
    assert store.find_same("g1", sub.team_id, sub.sha256) is None
    assert store.get_contest("c1") == contest("c1")
    assert store.get_contest("nope") is None
    assert store.get_team("team-alpha") == side.teams["alpha"]
    assert store.get_team("nope") is None
    assert side.events() == [stored(sub)]


def test_the_same_bytes_again_are_the_submission_there_even_after_the_close(
    side: Submissions,
) -> None:
    store = side.store
    first = new_upload(side.teams["alpha"])
    retry = replace(new_upload(side.teams["alpha"]), sha256=first.sha256)  # its id is new
    theirs = replace(new_upload(side.teams["beta"]), sha256=first.sha256)
    late_retry = replace(retry, id="late-retry", received_at=LATE, state_at=LATE)
    late = new_upload(side.teams["alpha"], received_at=LATE)
    on_time = new_upload(side.teams["alpha"], received_at=CLOSES)

    assert store.store_submissions([first, retry, theirs]) == [first, None, theirs]
    answers = store.store_submissions([late_retry, late, on_time])

    assert answers[0] is None and answers[2] == on_time
    refused = answers[1]
    assert isinstance(refused, Closed)
    assert str(refused) == f"contest c1 closed at {CLOSES}; received at {LATE}"
    for absent in (retry.id, late_retry.id, late.id):
        assert store.get_submission(absent) is None
    assert side.events() == [stored(first), stored(theirs), stored(on_time)]


def test_a_game_log_is_one_submission_whoever_sends_it_each_later_sender_keeping_a_copy(
    side: Submissions,
) -> None:
    store = side.store
    key = "g" * 64
    first = new_upload(side.teams["a"], size=120, game_key=key)
    again = new_upload(side.teams["b"], size=130, game_key=key)  # the same game, other bytes
    within = new_upload(side.teams["a"], size=140, game_key=key)  # its sender's other bytes
    later = new_upload(side.teams["b"], size=150, game_key=key)  # b's second copy

    assert store.store_submissions([first, again, within]) == [first, None, None]
    assert store.store_submissions([later]) == [None]

    assert store.copy_of(first.id, again.team_id) == again.blob_key  # the first copy stays
    assert store.copy_of(first.id, first.team_id) is None  # its sender keeps no copy
    assert store.copy_of("nope", again.team_id) is None
    assert store.find_same("g1", again.team_id, again.sha256, key) == first  # by its game
    assert store.find_same("g1", again.team_id, again.sha256) is None
    assert store.find_same("g1", first.team_id, first.sha256) == first
    assert side.events() == [stored(first), copied(first, again)]


def test_a_game_log_from_a_team_without_the_right_is_refused_even_when_sent_already(
    side: Submissions,
) -> None:
    store = side.store
    key = "k" * 64
    sent = side.upload("a", game_key=key)
    refused = new_upload(side.teams["c"], game_key=key)
    fresh = new_upload(side.teams["c"], game_key="f" * 64)
    own = new_upload(side.teams["c"])  # not a game log: no right needed

    answers = store.store_submissions([refused, fresh, own])

    assert answers[2] == own
    for answer in answers[:2]:
        assert isinstance(answer, NotAllowed) and not isinstance(answer, Closed)
        assert str(answer).startswith("team team-c may not upload game logs to contest g1")
    assert store.copy_of(sent.id, "team-c") is None
    assert side.events() == [stored(sent), stored(own)]


def test_an_upload_whose_team_or_contest_is_gone_refuses_the_whole_group(side: Submissions) -> None:
    store = side.store
    fine = new_upload(side.teams["alpha"])
    key = "h" * 64
    shared = side.upload("a", game_key=key)
    copy = new_upload(side.teams["b"], game_key=key)
    orphans = [
        replace(new_upload(side.teams["alpha"]), team_id="ghost"),
        replace(new_upload(side.teams["alpha"]), contest_id="gone"),
    ]
    for orphan in orphans:
        with pytest.raises(Duplicate):
            store.store_submissions([fine, copy, orphan], queued=[shared])

    assert store.get_submission(fine.id) is None
    assert store.copy_of(shared.id, copy.team_id) is None
    assert side.submission(shared.id).state == SubmissionState.STORED
    assert side.events() == [stored(shared)]


def test_uploads_published_before_their_group_commits_are_queued_in_it(side: Submissions) -> None:
    store = side.store
    claimed = side.upload("beta")
    [claim] = store.claim_many([claimed.id], 3600)
    a, b = new_upload(side.teams["alpha"]), new_upload(side.teams["beta"])

    assert store.store_submissions([a, b], queued=[a, a, claimed]) == [a, b]  # a listed twice
    assert store.store_submissions([], queued=[b, a]) == []

    marked = side.submission(a.id)
    assert (marked.state, marked.attempts) == (SubmissionState.QUEUED, 0)
    assert marked.state_at > a.state_at
    assert side.submission(b.id).state == SubmissionState.QUEUED
    still = side.submission(claimed.id)  # a worker claimed it first: left judging
    assert (still.state, still.attempts, claim.attempt) == (SubmissionState.JUDGING, 1, 1)
    assert side.events("submission.stored", "submission.queued") == [
        stored(claimed), stored(a), stored(b), queued(a), queued(b),
    ]  # fmt: skip


def test_marking_queued_moves_only_the_stored_ones_and_answers_them_in_the_order_asked(
    side: Submissions,
) -> None:
    store = side.store
    first, second, third = (side.upload("alpha", size=n) for n in (1, 2, 3))
    store.claim_many([second.id], 3600)

    assert store.mark_queued_many([third.id, "nope", second.id, first.id]) == [third.id, first.id]
    assert store.mark_queued_many([]) == []
    assert not store.mark_queued(first.id)
    assert not store.mark_queued("nope")
    fourth = side.upload("beta")
    assert store.mark_queued(fourth.id)

    for sub in (first, third, fourth):
        marked = side.submission(sub.id)
        assert marked.state == SubmissionState.QUEUED and marked.state_at > START
    assert side.events("submission.queued") == [queued(third), queued(first), queued(fourth)]


def test_a_writer_turn_is_held_across_writes_and_taken_again_within_them(side: Submissions) -> None:
    store = side.store
    sub = new_upload(side.teams["alpha"])

    with store.writer_turn(), store.writer_turn():
        assert store.store_submissions([sub], queued=[sub]) == [sub]
        assert store.mark_queued_many([sub.id]) == []

    assert side.submission(sub.id).state == SubmissionState.QUEUED
    assert side.events() == [stored(sub), queued(sub)]


def test_a_word_list_is_registered_once_and_named_again_under_each_new_name(
    side: Submissions,
) -> None:
    store = side.store
    row: dict[str, Any] = {
        "id": "lex-new", "words": 5, "size": 30, "blob_key": "lexicons/lex-new.txt",
        "source": "upload", "created_by": "alice",
    }  # fmt: skip

    first = store.add_lexicon(**row, name="small")
    # The same list again (content-addressed), by someone else and with other figures.
    again = store.add_lexicon(**{**row, "words": 9, "created_by": "bob"}, name="tiny")
    repeated = store.add_lexicon(**row, name="small")
    seeded = store.add_lexicon(**{**row, "id": LEX1}, name=LEX1)

    assert isinstance(first, WordList)
    assert first == WordList(**row, name="small", created_at=first.created_at)
    assert first.created_at > START and first.names == ()
    assert again == replace(first, name="tiny")
    assert repeated == first
    assert (seeded.id, seeded.name, seeded.words, seeded.source) == (LEX1, LEX1, 3, "test")
    assert side.events("lexicon.") == [
        {"type": "lexicon.added", "lexicon": "lex-new", "name": "small", "words": 5,
         "by": "alice"},
        {"type": "lexicon.named", "lexicon": "lex-new", "name": "tiny", "by": "bob"},
    ]  # fmt: skip


def test_in_an_outage_every_call_fails_as_unavailable_and_nothing_is_written(
    side: Submissions,
) -> None:
    sub = side.upload("alpha")
    seen = side.submission(sub.id)
    claim = Claim(seen, 1)
    calls: list[Callable[[SubmissionStore], object]] = [
        lambda store: store.get_contest("c1"),
        lambda store: store.get_team("team-alpha"),
        lambda store: store.get_submission(sub.id),
        lambda store: store.find_same("c1", sub.team_id, sub.sha256),
        lambda store: store.copy_of(sub.id, sub.team_id),
        lambda store: store.store_submissions([new_upload(side.teams["beta"])], queued=[sub]),
        lambda store: store.mark_queued(sub.id),
        lambda store: store.mark_queued_many([sub.id]),
        lambda store: store.needing_attention(stored_for=0, queued_for=0, judging_for=0),
        lambda store: store.requeue(seen),
        lambda store: store.claim_many([sub.id], 0),
        lambda store: store.record_results([(claim, judged(sub, LEX1, 1), b"")]),
        lambda store: store.release(claim, "error", give_up=True),
        lambda store: store.add_lexicon(
            id="lex-x", name="x", words=1, size=2, blob_key="x", source="test", created_by="admin"
        ),
    ]

    with side.unanswering() as down:
        for call in calls:
            with pytest.raises(StoreUnavailable):
                call(down)

    assert side.submission(sub.id) == seen
    assert side.events() == [stored(sub)]
