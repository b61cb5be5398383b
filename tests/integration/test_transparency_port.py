"""One behaviour suite for the contests' transparency logs (`core.ports.TransparencyLogs`), run
on the in-memory fake (`core.fake_logs.InMemoryTransparencyLogs`), SQLite and PostgreSQL
(`infra.sql.transparency`): each test states the entries, leaves, heads and stored hashes the
SQL adapter gives for the facts the other ports write, so a fake that drifts fails here. The
sides are in `log_port_sides.py`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from core import transparency
from core.games.crosstiles import GameError, GameOutcome, GamePlayer
from core.log_signing import LogSigner
from core.records import JudgedResult, Submission
from core.tlog import check_record, generate_key, leaf_hash, prove_record, root, stored_hash_count
from core.transparency import LogHead
from core.word_hashes import signature
from tests.integration.log_port_sides import FakeLogSide, LogSide, SqlLogSide
from tests.integration.port_sides import (
    CLOSES,
    HOUR,
    LAYOUT,
    LEX1,
    LEX2,
    SUITE,
    judged,
    new_upload,
    side_fixture,
)

pytestmark = SUITE
side = side_fixture(FakeLogSide, SqlLogSide)
BEFORE_FREEZE = "2030-01-01T05:00:00.000000Z"  # `f1` froze at 06:00


@pytest.fixture(scope="module")
def signer() -> LogSigner:
    return LogSigner(generate_key("judge.example")[0])


def entries(side: LogSide, contest_id: str) -> list[dict[str, Any]]:
    """Every entry of the contest's log, signed or not, decoded."""
    found, _ = side.logs.log_entries(contest_id, 0, 1000)
    return [transparency.decode(entry) for entry in found]


def upload(sub: Submission) -> dict[str, Any]:
    return {
        "v": 1, "type": "upload", "submission": sub.id, "team": sub.team_id,
        "sha256": sub.sha256, "size": sub.size, "received_at": sub.received_at,
    }  # fmt: skip


def verdict(sub: Submission, score: int, lexicon: str = LEX1, **more: Any) -> dict[str, Any]:
    result = {"score": score, "legal": 1, "illegal": 0, "tiles": 3}
    return {
        "v": 1, "type": "verdict", "submission": sub.id, "lexicon": lexicon, "layout": LAYOUT,
        "judge_version": "test", "result": result, **more,
    }  # fmt: skip


def test_every_contest_gets_a_first_empty_head_signed_once(
    side: LogSide, signer: LogSigner
) -> None:
    assert side.logs.log_head("c1") is None
    assert side.logs.log_entries("c1", 0, 10) == ([], None)

    assert side.logs.sequence(signer.sign) == 0  # no leaf, but a head for each contest

    for contest_id in ("c1", "g1", "f1"):
        empty = root([])
        assert side.logs.log_head(contest_id) == LogHead(
            0, empty, signer.sign(contest_id, 0, empty)
        )
    assert side.logs.sequence(signer.sign) == 0
    with pytest.raises(LookupError):
        side.logs.log_hashes("c1", [0])


def test_uploads_and_live_verdicts_are_leaves_in_commit_order_hashed_by_the_sequencer(
    side: LogSide, signer: LogSigner
) -> None:
    alpha, beta = side.upload("alpha"), side.upload("beta", size=200)
    side.judge_live(alpha, 10)

    logged = [upload(alpha), upload(beta), verdict(alpha, 10)]
    assert entries(side, "c1") == logged  # numbered at once, hashed by the next round
    assert side.logs.log_head("c1") is None
    assert side.logs.log_leaves(alpha.id) == [(0, "upload", alpha.team_id), (2, "verdict", None)]
    assert side.logs.log_leaves(beta.id) == [(1, "upload", beta.team_id)]
    # A listing's read of many at once: the same leaves, none for an id without any.
    assert side.logs.log_leaves_of([beta.id, "no-such-upload", alpha.id, beta.id]) == {
        alpha.id: side.logs.log_leaves(alpha.id),
        beta.id: side.logs.log_leaves(beta.id),
    }
    assert [transparency.decode(e) for e in side.logs.log_entries("c1", -5, 7)[0]] == logged[:2]

    assert side.logs.sequence(signer.sign) == 3
    assert side.logs.sequence(signer.sign) == 0

    leaves = [
        leaf_hash(transparency.encode({k: v for k, v in e.items() if k != "v"})) for e in logged
    ]
    head = side.logs.log_head("c1")
    assert head == LogHead(3, root(leaves), signer.sign("c1", 3, root(leaves)))
    proof = prove_record(3, 1, lambda ids: side.logs.log_hashes("c1", ids))
    check_record(proof, 3, head.root, 1, leaves[1])
    assert len(side.logs.log_hashes("c1", range(stored_hash_count(3)))) == stored_hash_count(3)
    with pytest.raises(LookupError):
        side.logs.log_hashes("c1", [stored_hash_count(3)])


def test_a_verdict_on_an_upload_sent_during_the_freeze_is_sealed_with_a_nonce(
    side: LogSide,
) -> None:
    early = side.upload("gamma", received_at=BEFORE_FREEZE)
    late = side.upload("gamma")  # at START, after `f1` froze
    side.judge_live(early, 10)
    side.judge_live(late, 20)

    found, sealed = side.logs.log_entries("f1", 0, 10)
    logged = [transparency.decode(entry) for entry in found]
    nonce = logged[3].pop("nonce")
    assert len(nonce) == 32 and int(nonce, 16) >= 0
    assert logged == [upload(early), upload(late), verdict(early, 10), verdict(late, 20)]
    assert sealed == 3
    assert side.logs.log_entries("f1", 0, 3)[1] is None


def test_a_contest_closes_in_its_log_once_by_its_organiser_or_else_by_the_clock(
    side: LogSide, signer: LogSigner
) -> None:
    closed = side.organiser.close_contest("c1", "admin")
    assert closed is not None
    assert entries(side, "c1") == [{"v": 1, "type": "close", "closes_at": closed[0].closes_at}]
    side.clock.advance(13 * HOUR)  # past every contest's closing time

    assert side.logs.sequence(signer.sign) == 1  # c1's close; the clock's closes are logged
    by_clock = [e for e in side.events("contest.closed") if e["by"] == "clock"]
    assert sorted(by_clock, key=lambda e: e["contest"]) == [
        {"type": "contest.closed", "contest": contest_id, "closes_at": CLOSES, "by": "clock"}
        for contest_id in ("f1", "g1")
    ]
    assert entries(side, "g1") == [{"v": 1, "type": "close", "closes_at": CLOSES}]
    assert side.logs.sequence(signer.sign) == 2  # hashed at the next round
    assert side.logs.sequence(signer.sign) == 0
    assert len(entries(side, "c1")) == 1
    assert len(side.events("contest.closed")) == 3


def test_an_apply_logs_its_run_each_verdict_it_changed_and_each_failure(side: LogSide) -> None:
    alpha, beta, lost = side.upload("alpha"), side.upload("beta"), side.upload("alpha")
    for sub, score in ((alpha, 10), (beta, 20), (lost, 5)):
        side.judge_live(sub, score)
    run, _ = side.rejudges.start("c1", LEX2, LAYOUT, "full", "admin")
    batch = [(alpha.id, judged(alpha, LEX2, 30)), (beta.id, judged(beta, LEX2, 20))]
    side.rejudges.record_batch(run, batch, failed={lost.id: "upload_missing"})
    side.rejudges.apply(run.id, "admin")
    side.judge_live(side.upload("beta"), 40)  # under the new ruleset, after the apply

    failed = {"v": 1, "type": "failed", "submission": lost.id, "reason": "upload_missing"}
    assert entries(side, "c1")[6:9] == [
        {**failed, "rejudge": run.id},  # its event comes first in the apply's transaction
        {"v": 1, "type": "rejudge", "run": run.id, "lexicon": LEX2, "layout": LAYOUT},
        verdict(alpha, 30, LEX2, rejudge=run.id),  # beta's result is the same: no entry
    ]
    assert side.logs.log_leaves(lost.id) == [
        (2, "upload", lost.team_id), (5, "verdict", None), (6, "failed", None)
    ]  # fmt: skip
    assert [e["type"] for e in entries(side, "c1")[9:]] == ["upload", "verdict"]


def test_a_deleted_teams_game_log_passes_to_the_team_that_sent_it_too(side: LogSide) -> None:
    first = new_upload(side.teams["a"], size=120, game_key="g" * 64)
    again = new_upload(side.teams["b"], size=130, game_key="g" * 64)
    assert side.store.store_submissions([first]) == [first]
    assert side.store.store_submissions([again]) == [None]  # a copy of the same game

    side.organiser.delete_team(first.team_id, "admin")

    b = again.team_id
    copied = {"sha256": again.sha256, "received_at": again.received_at}
    assert entries(side, "g1") == [
        upload(first),
        {**upload(first), "team": b, "size": 130, **copied},
        {"v": 1, "type": "owner", "submission": first.id, "team": b, **copied},
        {"v": 1, "type": "team_deleted", "team": first.team_id},
    ]
    assert side.logs.log_leaves(first.id) == [
        (0, "upload", first.team_id), (1, "upload", b), (2, "owner", b)
    ]  # fmt: skip


def test_an_apply_during_the_freeze_seals_its_run_its_verdicts_and_later_live_ones(
    side: LogSide,
) -> None:
    early = side.upload("gamma", received_at=BEFORE_FREEZE)
    side.judge_live(early, 10)  # sent before the freeze, judged under its ruleset: public
    run, _ = side.rejudges.start("f1", LEX2, LAYOUT, "full", "admin")
    side.rejudges.record_batch(run, [(early.id, judged(early, LEX2, 30))])
    side.rejudges.apply(run.id, "admin")
    later = side.upload("gamma", received_at=BEFORE_FREEZE)
    side.judge_live(later, 20)  # under the ruleset the freeze hides

    found, sealed = side.logs.log_entries("f1", 0, 10)
    logged = [transparency.decode(entry) for entry in found]
    assert [("nonce" in entry) for entry in logged] == [False, False, True, True, False, True]
    assert [{k: v for k, v in e.items() if k != "nonce"} for e in logged] == [
        upload(early),
        verdict(early, 10),
        {"v": 1, "type": "rejudge", "run": run.id, "lexicon": LEX2, "layout": LAYOUT},
        verdict(early, 30, LEX2, rejudge=run.id),
        upload(later),
        verdict(later, 20, LEX2),
    ]
    assert sealed == 2
    assert side.logs.log_entries("f1", 4, 1) == ([found[4]], None)


MATCH = "m" * 64
ANN_WINS = GameOutcome(
    (GamePlayer(1, "ann", 300, False, 12, 40), GamePlayer(2, "bob", 260, False, 0, -40)), None
)
BOB_WINS = GameOutcome(
    (GamePlayer(1, "ann", 250, False, 0, -30), GamePlayer(2, "bob", 280, False, 12, 30)), None
)
UNFINISHED = GameOutcome((), GameError(9, "unfinished", "the game has not ended"), turns=4)


def judged_game(side: LogSide, team: str, n: int, game: GameOutcome, score: int) -> Submission:
    """A game log of MATCH (its own key `n`) from the team, judged live to `game`."""
    sub = replace(new_upload(side.teams[team], game_key=f"{n:064x}"), match_key=MATCH)
    assert side.store.store_submissions([sub]) == [sub]
    [claim] = side.store.claim_many([sub.id], HOUR)
    result = JudgedResult(LEX1, LAYOUT, "x", score, f"k{n}", game)
    assert side.store.record_results([(claim, result, signature(["ann"]))]) == {sub.id}
    return sub


def test_a_game_logs_verdict_states_its_game_and_match_and_a_settlement_is_logged(
    side: LogSide,
) -> None:
    first = judged_game(side, "a", 1, ANN_WINS, 300)
    rival = judged_game(side, "b", 2, BOB_WINS, 280)
    broken = judged_game(side, "a", 3, UNFINISHED, 0)

    side.disputes.settle(side.contest("g1"), MATCH, rival.id, "admin")

    players = [
        {"seat": 1, "nick": "ann", "score": 250, "removed": False, "win_twelfths": 0,
         "spread": -30},
        {"seat": 2, "nick": "bob", "score": 280, "removed": False, "win_twelfths": 12,
         "spread": 30},
    ]  # fmt: skip
    game = {"valid": True, "turns": 0, "winning_score": 280, "error": None, "players": players}
    unfinished = {
        "valid": False, "turns": 4, "winning_score": 0,
        "error": {"line": 9, "reason": "unfinished"}, "players": [],
    }  # fmt: skip
    logged = entries(side, "g1")
    assert [(e["type"], e["submission"]) for e in logged] == [
        ("upload", first.id), ("verdict", first.id), ("upload", rival.id), ("verdict", rival.id),
        ("upload", broken.id), ("verdict", broken.id), ("settled", rival.id),
    ]  # fmt: skip
    about = {"v": 1, "type": "verdict", "lexicon": LEX1, "layout": LAYOUT, "judge_version": "x"}
    assert logged[3] == {**about, "submission": rival.id, "result": game, "match": MATCH}
    assert logged[5] == {**about, "submission": broken.id, "result": unfinished, "match": MATCH}
    assert logged[6] == {"v": 1, "type": "settled", "submission": rival.id, "match": MATCH}
