"""One behaviour suite for the rejudge runs port (`core.ports.RejudgeRuns`), run on every
implementation: the in-memory fake (`core.fake_rejudges` over the submission store's fake),
SQLite and PostgreSQL (`infra.sql.rejudges`). Each test states the runs, counts, failures,
summaries and events (types and fields) the SQL adapter gives, so a fake that drifts from its
adapter fails here. The sides are in `port_sides.py`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from core.errors import FailureReason, NotFound, RejudgeRefused, failure_text
from core.records import Paged, Run, RunSummary, Submission
from core.states import RejudgeState
from core.word_hashes import signature
from tests.integration.port_sides import (
    LAYOUT,
    LEX1,
    LEX2,
    LEX3,
    SUITE,
    FakeSide,
    Side,
    SqlSide,
    at,
    judged,
    new_upload,
    side_fixture,
)

pytestmark = SUITE
side = side_fixture(FakeSide, SqlSide)


def started(run: Run, total: int) -> dict[str, Any]:
    return {
        "type": "rejudge.started", "rejudge": run.id, "contest": run.contest_id,
        "lexicon": run.lexicon_id, "layout": run.rules_id, "mode": run.mode,
        "from_lexicon": LEX1, "from_layout": LAYOUT, "total": total, "by": "admin",
    }  # fmt: skip


def progressed(kind: str, run: Run, done: int, total: int, **more: Any) -> dict[str, Any]:
    about = {"rejudge": run.id, "contest": run.contest_id, "done": done, "total": total}
    return {"type": f"rejudge.{kind}", **about, **more}


def judged_uploads(side: Side, count: int) -> list[Submission]:
    """`count` uploads of alpha's, received an hour apart and judged live to 10, 11..."""
    subs = [side.upload("alpha", received_at=at(n)) for n in range(count)]
    for n, sub in enumerate(subs):
        side.judge_live(sub, 10 + n)
    return subs


def test_a_run_starts_once_beside_the_live_ruleset_and_is_listed_with_its_contests_runs(
    side: Side,
) -> None:
    for team in ("alpha", "beta"):
        side.upload(team)
    rejudges = side.rejudges

    run, created = rejudges.start("c1", LEX2, LAYOUT, "full", "admin")
    again, created_again = rejudges.start("c1", LEX2, LAYOUT, "affected", "someone")
    empty, _ = rejudges.start("g1", LEX2, LAYOUT, "affected", "admin")  # nothing to judge

    assert created and not created_again and again == run
    assert (run.state, run.total, run.done, run.carried, run.cursor) == ("running", 2, 0, 0, "")
    assert (run.from_lexicon_id, run.from_rules_id, run.mode) == (LEX1, LAYOUT, "full")
    assert (run.created_by, run.finished_at) == ("admin", None)
    assert (empty.state, empty.total, empty.finished_at) == ("ready", 0, empty.created_at)
    assert rejudges.get(run.id) == run and rejudges.get("nope") is None
    assert rejudges.open_runs() == [run, empty] and rejudges.open_runs("c1") == [run]
    assert rejudges.list_runs("g1") == [empty] and rejudges.list_runs("nope") == []
    for contest_id, lexicon_id in (("c1", LEX1), ("nope", LEX2)):  # its own ruleset; no contest
        with pytest.raises(RejudgeRefused):
            rejudges.start(contest_id, lexicon_id, LAYOUT, "full", "admin")
    assert side.events("rejudge.") == [started(run, 2), started(empty, 0)]


def test_the_producer_pages_from_the_cursor_with_each_signature_size_and_holder_and_restarts(
    side: Side,
) -> None:
    subs = [side.upload("alpha", size=300), side.upload("beta", size=200), side.upload("alpha")]
    side.judge_live(subs[0], 10, words=("cat", "tea"), held_on="host1")
    side.judge_live(subs[1], 10)  # on a host keeping no uploads: no holder
    rejudges = side.rejudges
    run, _ = rejudges.start("c1", LEX2, LAYOUT, "affected", "admin")
    words = {subs[0].id: signature(["cat", "tea"]), subs[1].id: signature(["cat"])}
    holders = {subs[0].id: "host1"}
    rows = sorted(Paged(s.id, words.get(s.id), s.size, holders.get(s.id)) for s in subs)

    assert list(rejudges.page(run, 2)) == rows[:2]
    assert rejudges.advance(run.id, rows[1][0])
    moved = rejudges.get(run.id)
    assert moved is not None and moved.cursor == rows[1][0]
    assert list(rejudges.page(moved, 10)) == rows[2:]
    rejudges.restart_producer(run.id)
    restarted = rejudges.get(run.id)
    assert restarted is not None and restarted.cursor == ""
    assert list(rejudges.page(restarted, 10)) == rows

    rejudges.cancel(run.id, "admin")
    assert not rejudges.advance(run.id, rows[0][0])  # a closed run takes no more pages


def test_carrying_copies_each_current_result_once_and_counts_it_as_carried(side: Side) -> None:
    subs = [side.upload("alpha", received_at=at(n)) for n in range(3)]
    for n, sub in enumerate(subs):
        side.judge_live(sub, 10 * (n + 1))
    unjudged = side.upload("beta")
    rejudges = side.rejudges
    run, _ = rejudges.start("c1", LEX2, LAYOUT, "affected", "admin")
    ids = [s.id for s in (*subs, unjudged)]

    assert rejudges.carry(run, ids) == 3  # the upload not judged yet has nothing to carry
    assert rejudges.carry(run, ids) == 0  # a page carried again (a restarted producer)
    assert rejudges.carry(run, []) == 0
    carried = rejudges.get(run.id)
    assert carried is not None
    assert (carried.state, carried.done, carried.carried) == ("running", 3, 3)
    assert [s.id for s in rejudges.without_result(carried, ids)] == [unjudged.id]
    assert rejudges.record_batch(carried, [(unjudged.id, judged(unjudged, LEX2, 5))]) == 1

    ready = rejudges.get(run.id)
    assert ready is not None and (ready.state, ready.done, ready.carried) == ("ready", 4, 3)
    assert ready.finished_at is not None
    assert rejudges.summary(ready) == RunSummary(
        (), ({"team": "beta", "old_rank": None, "new_rank": 2},)
    )
    assert side.events("rejudge.") == [
        started(run, 4),
        progressed("progress", run, 3, 4),
        progressed("ready", run, 4, 4, carried=3),
    ]


def test_a_batch_counts_only_what_is_new_and_a_failure_counts_as_done_once(side: Side) -> None:
    subs = judged_uploads(side, 3)
    rejudges = side.rejudges
    run, _ = rejudges.start("c1", LEX2, LAYOUT, "full", "admin")
    ids = [s.id for s in subs]
    failed = {subs[1].id: "upload_missing", subs[2].id: "upload_corrupt"}
    first = [(subs[0].id, judged(subs[0], LEX2, 20))]
    words = {subs[0].id: signature(["bat"])}

    assert [s.id for s in rejudges.without_result(run, ids)] == sorted(ids)
    assert rejudges.record_batch(run, first, words=words, failed=failed) == 3
    assert rejudges.record_batch(run, first, failed=failed) == 0  # delivered twice
    assert rejudges.without_result(run, ids) == []

    ready = rejudges.get(run.id)
    assert ready is not None and (ready.state, ready.done, ready.total) == ("ready", 3, 3)
    count, listed = rejudges.failures(ready, limit=1)
    first_failed = min(failed)
    assert count == 2
    assert [(f.submission_id, f.team, f.reason) for f in listed] == [
        (first_failed, "alpha", failed[first_failed])
    ]
    [widened] = [row.words for row in rejudges.page(run, 10) if row.id == subs[0].id]
    assert widened == signature(["cat", "bat"])  # the judging's words added to the live ones
    assert side.events("rejudge.") == [started(run, 3), progressed("ready", run, 3, 3, carried=0)]


def test_a_batch_recorded_on_a_host_makes_it_the_holder_of_the_judged_ones_alone(
    side: Side,
) -> None:
    subs = judged_uploads(side, 3)
    rejudges = side.rejudges
    run, _ = rejudges.start("c1", LEX2, LAYOUT, "full", "admin")
    judged_now = [(sub.id, judged(sub, LEX2, 30)) for sub in subs[:2]]
    failed = {subs[2].id: "upload_missing"}
    assert rejudges.record_batch(run, judged_now, failed=failed, held_on="h2") == 3

    holders = {sub.id: holder for sub, holder in zip(subs, ["h2", "h2", None], strict=True)}
    assert {row.id: row.held_on for row in rejudges.page(run, 10)} == holders
    assert {sub.id: side.submission(sub.id).held_on for sub in subs} == holders


def test_an_upload_judged_after_its_failure_was_counted_is_not_counted_again(side: Side) -> None:
    subs = judged_uploads(side, 2)
    rejudges = side.rejudges
    run, _ = rejudges.start("c1", LEX2, LAYOUT, "full", "admin")
    lost, found = subs
    assert rejudges.record_batch(run, [], failed={lost.id: "upload_missing"}) == 1
    # A restarted producer republishes it and S3 reads it now: judged, but done already.
    assert rejudges.record_batch(run, [(lost.id, judged(lost, LEX2, 30))]) == 0
    still = rejudges.get(run.id)
    assert still is not None and (still.state, still.done, still.total) == ("running", 1, 2)
    assert rejudges.failures(still, limit=5) == (0, [])  # judged since: no longer failed

    assert rejudges.record_batch(run, [(found.id, judged(found, LEX2, 31))]) == 1
    ready = rejudges.get(run.id)
    assert ready is not None and (ready.state, ready.done) == ("ready", 2)


def test_apply_switches_the_contest_fails_what_was_not_judged_and_cancels_the_other_runs(
    side: Side,
) -> None:
    alpha = side.upload("alpha", received_at=at(1))
    beta = side.upload("beta", received_at=at(2))
    lost = side.upload("alpha", received_at=at(3))
    for sub, score in ((alpha, 10), (beta, 20), (lost, 5)):
        side.judge_live(sub, score)
    rejudges = side.rejudges
    run, _ = rejudges.start("c1", LEX2, LAYOUT, "full", "admin")
    other, _ = rejudges.start("c1", LEX3, LAYOUT, "full", "admin")
    batch = [(alpha.id, judged(alpha, LEX2, 30)), (beta.id, judged(beta, LEX2, 20))]
    assert rejudges.record_batch(run, batch, failed={lost.id: "upload_missing"}) == 3
    ready = rejudges.get(run.id)
    assert ready is not None and ready.state == "ready"
    with pytest.raises(RejudgeRefused):
        rejudges.apply(other.id, "admin")  # still running

    applied = rejudges.apply(run.id, "admin")

    assert applied == replace(ready, state=RejudgeState.APPLIED, updated_at=applied.updated_at)
    assert rejudges.get(run.id) == applied
    contest = side.contest("c1")
    assert (contest.lexicon_id, contest.rules_id, contest.frozen_lexicon_id) == (
        LEX2,
        LAYOUT,
        None,
    )
    cancelled = rejudges.get(other.id)
    assert cancelled is not None and cancelled.state == "cancelled"
    failed = side.submission(lost.id)
    reason = failure_text(FailureReason.UPLOAD_MISSING)
    assert (failed.state, failed.failure) == ("failed", reason)
    for again in (run.id, other.id):
        with pytest.raises(RejudgeRefused):
            rejudges.apply(again, "admin")
    with pytest.raises(NotFound):
        rejudges.apply("nope", "admin")
    assert side.events("rejudge.", "submission.failed") == [
        started(run, 3),
        started(other, 3),
        progressed("ready", run, 3, 3, carried=0),
        {"type": "submission.failed", "submission": lost.id, "contest": "c1",
         "team": lost.team_id, "reason": reason, "rejudge": run.id},
        {"type": "rejudge.cancelled", "rejudge": other.id, "contest": "c1", "by": "admin",
         "reason": f"superseded by {run.id}"},
        {"type": "rejudge.applied", "rejudge": run.id, "contest": "c1", "lexicon": LEX2,
         "layout": LAYOUT, "from_lexicon": LEX1, "from_layout": LAYOUT, "by": "admin"},
    ]  # fmt: skip


def test_a_preview_follows_the_data_until_apply_records_it_as_the_runs_summary(
    side: Side,
) -> None:
    alpha = side.upload("alpha", received_at=at(1))
    beta = side.upload("beta", received_at=at(2))
    side.judge_live(alpha, 10)
    rejudges = side.rejudges
    run, _ = rejudges.start("c1", LEX2, LAYOUT, "full", "admin")
    assert rejudges.summary(run) is None  # running: ranks over half a contest would mislead
    batch = [(alpha.id, judged(alpha, LEX2, 30)), (beta.id, judged(beta, LEX2, 20))]
    rejudges.record_batch(run, batch)
    ready = rejudges.get(run.id)
    assert ready is not None
    changed = ({"submission": alpha.id, "team": "alpha", "old_score": 10, "new_score": 30},)
    assert rejudges.summary(ready) == RunSummary(
        changed, ({"team": "beta", "old_rank": None, "new_rank": 2},)
    )

    side.judge_live(beta, 50)  # judged live meanwhile, under the list the run replaces
    moved = (
        {"team": "alpha", "old_rank": 2, "new_rank": 1},
        {"team": "beta", "old_rank": 1, "new_rank": 2},
    )
    now_changed = (
        *changed,
        {"submission": beta.id, "team": "beta", "old_score": 50, "new_score": 20},
    )
    previewed = RunSummary(tuple(sorted(now_changed, key=lambda row: row["submission"])), moved)
    assert rejudges.summary(ready) == previewed
    assert (rejudges.changes(ready), rejudges.rank_changes(ready)) == (
        list(previewed.changed),
        list(moved),
    )
    applied = rejudges.apply(run.id, "admin")
    late = side.upload("beta", received_at=at(3))
    side.judge_live(late, 99)  # under the list now live alone

    assert rejudges.summary(applied) == replace(previewed, frozen_at=applied.updated_at)
    assert rejudges.rank_changes(applied) == []  # beta's 99 leads under both lists now


def test_a_run_applied_while_frozen_keeps_the_ruleset_it_replaced_for_the_public_standings(
    side: Side,
) -> None:
    sub = side.upload("gamma")
    side.judge_live(sub, 10)
    rejudges = side.rejudges
    # A second run applied during the freeze leaves the kept ruleset as the first recorded it.
    for lexicon_id in (LEX2, LEX3):
        run, _ = rejudges.start("f1", lexicon_id, LAYOUT, "full", "admin")
        assert rejudges.record_batch(run, [(sub.id, judged(sub, lexicon_id, 12))]) == 1
        rejudges.apply(run.id, "admin")
        frozen = side.contest("f1")
        assert (frozen.lexicon_id, frozen.frozen_lexicon_id) == (lexicon_id, LEX1)
        assert frozen.frozen_rules_id == LAYOUT


def test_a_cancelled_run_stops_counting_and_a_new_run_counts_what_it_judged(side: Side) -> None:
    sub = side.upload("alpha")
    side.judge_live(sub, 10)
    rejudges = side.rejudges
    run, _ = rejudges.start("c1", LEX2, LAYOUT, "full", "admin")

    cancelled = rejudges.cancel(run.id, "admin")

    assert cancelled == replace(run, state=RejudgeState.CANCELLED, updated_at=cancelled.updated_at)
    assert rejudges.get(run.id) == cancelled
    assert rejudges.open_runs("c1") == [] and rejudges.list_runs("c1") == [cancelled]
    with pytest.raises(RejudgeRefused):
        rejudges.cancel(run.id, "admin")
    with pytest.raises(NotFound):
        rejudges.cancel("nope", "admin")
    assert rejudges.record_batch(cancelled, [(sub.id, judged(sub, LEX2, 12))]) == 1
    assert rejudges.get(run.id) == cancelled  # a closed run's progress stays
    assert rejudges.summary(cancelled) == RunSummary(
        ({"submission": sub.id, "team": "alpha", "old_score": 10, "new_score": 12},), ()
    )
    fresh, created = rejudges.start("c1", LEX2, LAYOUT, "full", "admin")
    assert created and (fresh.state, fresh.done, fresh.total) == ("ready", 1, 1)
    assert side.events("rejudge.") == [
        started(run, 1),
        {"type": "rejudge.cancelled", "rejudge": run.id, "contest": "c1", "by": "admin"},
        started(fresh, 1),
        progressed("ready", fresh, 1, 1, carried=0),
    ]


def test_a_running_run_without_progress_for_a_while_is_stalled_and_a_ready_one_never(
    side: Side,
) -> None:
    sub = side.upload("alpha")
    rejudges = side.rejudges
    run, _ = rejudges.start("c1", LEX2, LAYOUT, "full", "admin")
    rejudges.start("g1", LEX2, LAYOUT, "full", "admin")  # ready at once: nothing to judge
    assert rejudges.stalled(60) == []

    side.clock.advance(61)
    assert [r.id for r in rejudges.stalled(60)] == [run.id]
    assert rejudges.advance(run.id, sub.id)  # progress
    assert rejudges.stalled(60) == []


def test_an_upload_stored_while_a_run_is_open_reopens_it_until_judged_for_it(side: Side) -> None:
    sub = side.upload("alpha")
    side.judge_live(sub, 10)
    rejudges = side.rejudges
    run, _ = rejudges.start("c1", LEX2, LAYOUT, "full", "admin")
    rejudges.record_batch(run, [(sub.id, judged(sub, LEX2, 11))])

    late = side.upload("beta")

    reopened = rejudges.get(run.id)
    assert reopened is not None
    assert (reopened.state, reopened.total, reopened.finished_at) == ("running", 2, None)
    assert rejudges.without_result(reopened, [sub.id, late.id]) == [side.submission(late.id)]
    with pytest.raises(RejudgeRefused):
        rejudges.apply(run.id, "admin")
    assert rejudges.record_batch(reopened, [(late.id, judged(late, LEX2, 3))]) == 1
    ready = rejudges.get(run.id)
    assert ready is not None and (ready.state, ready.done) == ("ready", 2)
    assert side.events("rejudge.") == [
        started(run, 1),
        progressed("ready", run, 1, 1, carried=0),
        progressed("ready", run, 2, 2, carried=0),
    ]


def test_a_game_log_sent_again_by_another_team_keeps_its_copy_and_says_its_size(
    side: Side,
) -> None:
    first = new_upload(side.teams["a"], size=120, game_key="g" * 64)
    again = new_upload(side.teams["b"], size=130, game_key="g" * 64)

    assert side.store.store_submissions([first]) == [first]
    assert side.store.store_submissions([again]) == [None]  # the same game: one submission

    about = {"submission": first.id, "contest": "g1"}
    assert side.events("submission.") == [
        {"type": "submission.stored", **about, "team": first.team_id, "sha256": first.sha256,
         "size": 120, "received_at": first.received_at},
        {"type": "submission.copied", **about, "team": again.team_id, "sha256": again.sha256,
         "size": 130, "received_at": again.received_at},
    ]  # fmt: skip
