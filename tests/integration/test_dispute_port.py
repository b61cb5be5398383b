"""One behaviour suite for the dispute port (`core.disputes.DisputeStore`), run on every
implementation: the in-memory fake (`core.fake_disputes.InMemoryDisputes`), SQLite and
PostgreSQL (`infra.sql.store.SqlStore`). Each test states the disputes, settlements, errors and
events the SQL adapter gives. The sides are in `store_port_sides.py`."""

from __future__ import annotations

from typing import Any

import pytest

from core.disputes import Dispute, DisputedLog, Settlement
from core.errors import Conflict, Invalid, NotFound
from core.games.crosstiles import GameError, GameOutcome
from core.records import JudgedResult
from tests.integration.port_sides import LAYOUT, LEX2, SUITE, at, side_fixture
from tests.integration.store_port_sides import (
    ANN_WINS,
    BOB_WINS,
    MATCH,
    UNFINISHED,
    FakeStores,
    SqlStores,
    Stores,
)

pytestmark = SUITE
side = side_fixture(FakeStores, SqlStores)

OTHER = "n" * 64  # another game of the same contest


def judged_log(
    side: Stores, team: str, key: str, outcome: GameOutcome, hour: int, match: str = MATCH
) -> str:
    """A log of the game `match` the team sent first (its own identity `key`), judged."""
    sid, _ = side.game_log(team, key, match=match, received_at=at(hour))
    side.judge_log(sid, outcome)
    return sid


def settled(chosen: str, passed_over: list[str], match: str = MATCH) -> dict[str, Any]:
    return {"type": "dispute.settled", "contest": "g1", "submission": chosen, "match": match,
            "passed_over": passed_over, "by": "admin"}  # fmt: skip


def test_an_unfinished_log_neither_blocks_nor_disputes_a_valid_one(side: Stores) -> None:
    judged_log(side, "a", "k1", UNFINISHED, 1)
    judged_log(side, "b", "k2", ANN_WINS, 2)

    assert side.dispute_store.disputes(side.contest("g1")) == []


def test_rival_valid_logs_are_disputed_by_game_with_every_team_that_sent_each(
    side: Stores,
) -> None:
    a = judged_log(side, "a", "k1", ANN_WINS, 1)
    b = judged_log(side, "b", "k2", BOB_WINS, 2)
    copy, _ = side.game_log("b", "k1", received_at=at(3))  # b sends a's log too
    other_b = judged_log(side, "b", "k3", BOB_WINS, 4, match=OTHER)
    other_a = judged_log(side, "a", "k4", ANN_WINS, 5, match=OTHER)
    unjudged, _ = side.game_log("a", "k5", received_at=at(6))  # judged later: no verdict yet
    assert copy == a and unjudged not in (a, b)

    assert side.dispute_store.disputes(side.contest("g1")) == [
        Dispute("g1", MATCH, (
            DisputedLog(a, frozenset({"team-a", "team-b"}), at(1), ("ann",)),
            DisputedLog(b, frozenset({"team-b"}), at(2), ("bob",)),
        )),
        Dispute("g1", OTHER, (
            DisputedLog(other_b, frozenset({"team-b"}), at(4), ("bob",)),
            DisputedLog(other_a, frozenset({"team-a"}), at(5), ("ann",)),
        )),
    ]  # fmt: skip
    assert side.dispute_store.disputes(side.contest("c1")) == []


def test_a_settlement_passes_the_others_over_once_and_is_an_event(side: Stores) -> None:
    a = judged_log(side, "a", "k1", ANN_WINS, 1)
    b = judged_log(side, "b", "k2", BOB_WINS, 2)
    c = judged_log(side, "a", "k3", UNFINISHED, 3)
    disputes, contest = side.dispute_store, side.contest("g1")

    settlement = disputes.settle(contest, MATCH, b, by="admin")

    passed = tuple(sorted([a, c]))
    assert settlement == Settlement("g1", MATCH, b, passed, changed=True)
    assert disputes.disputes(contest) == []
    assert disputes.settle(contest, MATCH, b, by="admin") == Settlement(
        "g1", MATCH, b, passed, changed=False
    )
    assert disputes.settle(contest, MATCH, a, by="admin").changed  # the organiser changes it
    assert disputes.disputes(contest) == []
    assert side.events("dispute.") == [
        settled(b, list(passed)),
        settled(a, sorted([b, c])),
    ]


def test_a_settlement_is_refused_for_an_invalid_an_unjudged_or_a_foreign_log_or_a_lone_one(
    side: Stores,
) -> None:
    prefix = judged_log(side, "a", "k1", UNFINISHED, 1)
    lone = judged_log(side, "b", "k2", ANN_WINS, 2)
    waiting, _ = side.game_log("a", "k3", received_at=at(3))
    disputes, contest = side.dispute_store, side.contest("g1")

    with pytest.raises(Conflict, match="nothing to settle"):
        disputes.settle(contest, MATCH, lone, by="admin")
    with pytest.raises(Invalid, match="invalid log"):
        disputes.settle(contest, MATCH, prefix, by="admin")
    with pytest.raises(Conflict, match="not judged yet"):
        disputes.settle(contest, MATCH, waiting, by="admin")
    with pytest.raises(NotFound, match="not a log of game"):
        disputes.settle(contest, MATCH, "nope", by="admin")
    with pytest.raises(NotFound, match="no game"):
        disputes.settle(contest, OTHER, lone, by="admin")
    with pytest.raises(NotFound, match="no game"):
        disputes.settle(side.contest("c1"), MATCH, lone, by="admin")
    assert side.events("dispute.") == []


def test_a_later_valid_log_disputes_a_settled_game_again_with_the_chosen_one_alone(
    side: Stores,
) -> None:
    a = judged_log(side, "a", "k1", ANN_WINS, 1)
    b = judged_log(side, "b", "k2", BOB_WINS, 2)
    disputes, contest = side.dispute_store, side.contest("g1")
    disputes.settle(contest, MATCH, a, by="admin")

    c = judged_log(side, "b", "k3", BOB_WINS, 3)

    [dispute] = disputes.disputes(contest)
    assert [log.submission for log in dispute.logs] == [a, c]
    settlement = disputes.settle(contest, MATCH, c, by="admin")
    assert settlement.passed_over == tuple(sorted([a, b])) and settlement.changed
    assert disputes.disputes(contest) == []


def test_a_settlement_whose_chosen_log_a_rejudge_made_invalid_holds_no_longer(
    side: Stores,
) -> None:
    a = judged_log(side, "a", "k1", ANN_WINS, 1)
    b = judged_log(side, "b", "k2", BOB_WINS, 2)
    c = judged_log(side, "b", "k3", ANN_WINS, 3)
    disputes = side.dispute_store
    disputes.settle(side.contest("g1"), MATCH, a, by="admin")
    broken = GameOutcome((), GameError(4, "not_in_dictionary", "'ann' is not in the list"))
    run, _ = side.rejudges.start("g1", LEX2, LAYOUT, "full", "admin")
    under_fix = [
        (a, JudgedResult(LEX2, LAYOUT, "x", 0, "ka", broken)),
        (b, JudgedResult(LEX2, LAYOUT, "x", 0, "kb", BOB_WINS)),
        (c, JudgedResult(LEX2, LAYOUT, "x", 0, "kc", ANN_WINS)),
    ]
    assert side.rejudges.record_batch(run, under_fix) == 3
    side.rejudges.apply(run.id, "admin")
    contest = side.contest("g1")

    [dispute] = disputes.disputes(contest)  # b and c, passed over for a, are rivals again

    assert [log.submission for log in dispute.logs] == [b, c]
    with pytest.raises(Invalid):
        disputes.settle(contest, MATCH, a, by="admin")
    assert disputes.settle(contest, MATCH, c, by="admin").passed_over == tuple(sorted([a, b]))
    assert disputes.disputes(contest) == []
