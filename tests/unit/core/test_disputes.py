"""Rival logs of one game (`core.disputes`): which counts, which are disputed, what a settlement
passes over, who sees a dispute; and the in-memory store's disputes and settlements."""

from __future__ import annotations

from dataclasses import replace

import pytest

from core import transparency
from core.disputes import check_settlement, counting, disputed, visible
from core.errors import Conflict, Invalid, NotAllowed, NotFound
from core.events import EventType
from core.fakes import InMemorySubmissionStore
from core.games.crosstiles import Crosstiles, GameError, GameOutcome, GamePlayer
from core.records import Contest, JudgedResult, Submission
from core.states import SubmissionState
from tests.unit.core.conftest import IN_TIME, Clock, make_contest, make_team

MATCH = "m" * 64
ANN_WINS = GameOutcome(
    (GamePlayer(1, "ann", 300, False, 12, 40), GamePlayer(2, "bob", 260, False, 0, -40)), None
)
BOB_WINS = GameOutcome(
    (GamePlayer(1, "ann", 250, False, 0, -30), GamePlayer(2, "bob", 280, False, 12, 30)), None
)
UNFINISHED = GameOutcome((), GameError(9, "unfinished", "the game has not ended"))


def test_an_invalid_log_never_stands_in_the_way_of_the_one_valid_log() -> None:
    valid = {"prefix": False, "real": True, "waiting": None}

    assert counting(valid, {}) == {"real"}
    assert disputed(valid, {}) == set()


def test_two_valid_logs_count_for_no_one_until_one_is_chosen_over_the_other() -> None:
    valid = {"a": True, "b": True, "prefix": False}

    assert counting(valid, {}) == set() and disputed(valid, {}) == {"a", "b"}
    assert counting(valid, {"a": "b", "prefix": "b"}) == {"b"}
    assert disputed(valid, {"a": "b", "prefix": "b"}) == set()


def test_a_later_valid_log_disputes_a_settled_game_with_the_chosen_log_alone() -> None:
    settled = {"b": "a"}
    valid = {"a": True, "b": True, "c": True}

    assert counting(valid, settled) == set()
    assert disputed(valid, settled) == {"a", "c"}


def test_a_settlement_whose_chosen_log_turns_invalid_no_longer_holds() -> None:
    settled = {"b": "a", "c": "a"}

    assert counting({"a": False, "b": True}, settled) == {"b"}  # the one valid log left
    assert disputed({"a": False, "b": True, "c": True}, settled) == {"b", "c"}


def test_a_settlement_passes_over_every_other_log_and_is_refused_where_it_cannot_be_made() -> None:
    valid = {"a": True, "b": True, "prefix": False, "waiting": None}

    assert check_settlement("xt", MATCH, valid, "a") == ["b", "prefix", "waiting"]
    with pytest.raises(Invalid, match="invalid log"):
        check_settlement("xt", MATCH, valid, "prefix")
    with pytest.raises(Conflict, match="not judged yet"):
        check_settlement("xt", MATCH, valid, "waiting")
    with pytest.raises(NotFound, match="not a log of game"):
        check_settlement("xt", MATCH, valid, "z")
    with pytest.raises(NotFound, match="no game"):
        check_settlement("xt", MATCH, {}, "a")
    with pytest.raises(Conflict, match="nothing to settle"):
        check_settlement("xt", MATCH, {"a": True, "prefix": False}, "a")


# -- the in-memory store --------------------------------------------------------------------------


@pytest.fixture
def contest(store: InMemorySubmissionStore) -> Contest:
    found = store.add_contest(make_contest("xt", "crosstiles"))
    for club in ("north", "south", "east"):
        store.add_team(make_team(club, "xt", uploads_logs=True))
    return found


def judged_log(
    store: InMemorySubmissionStore, contest: Contest, team: str, n: int, game: GameOutcome
) -> Submission:
    sub = Submission(
        id=f"s{n}", contest_id=contest.id, team_id=team, sha256=f"{n:064x}", size=10,
        blob_key=f"uploads/{n}", received_at=IN_TIME, receipt="r",
        state=SubmissionState.JUDGED, state_at=IN_TIME, attempts=1, judged_at=IN_TIME,
        failure=None, game_key=f"{n:064x}", match_key=MATCH,
    )  # fmt: skip
    store.submissions[sub.id] = sub
    result = JudgedResult(contest.lexicon_id, contest.rules_id, "x", 0, "k", game)
    store.put_result(sub.id, result, IN_TIME)
    return sub


def test_the_fake_store_holds_two_valid_logs_disputed_and_settles_them_after_the_close(
    store: InMemorySubmissionStore, contest: Contest, fake_clock: Clock
) -> None:
    prefix = judged_log(store, contest, "east", 1, UNFINISHED)
    a = judged_log(store, contest, "north", 2, ANN_WINS)
    b = judged_log(store, contest, "south", 3, BOB_WINS)

    (dispute,) = store.disputes(contest)

    assert [(log.submission, log.teams, log.winners) for log in dispute.logs] == [
        (a.id, frozenset({"north"}), ("ann",)), (b.id, frozenset({"south"}), ("bob",))
    ]  # fmt: skip
    assert visible([dispute], contest, store.teams["north"]) == [dispute]
    assert visible([dispute], contest, store.teams["east"]) == []  # its log is the invalid one
    assert visible([dispute], contest, None) == [dispute]
    stranger = replace(store.teams["east"], contest_id="elsewhere")
    with pytest.raises(NotAllowed):
        visible([dispute], contest, stranger)

    fake_clock.advance(86_400)  # a day on: after the close, and settling is no upload
    settled = store.settle(contest, MATCH, a.id, by="admin")

    assert settled.changed and settled.passed_over == (prefix.id, b.id)
    assert store.disputes(contest) == []
    events = [e for e in store.events if e["type"] == EventType.DISPUTE_SETTLED]
    assert [(e["submission"], e["passed_over"], e["by"]) for e in events] == [
        (a.id, [prefix.id, b.id], "admin")
    ]
    assert events[0]["ts"] > contest.closes_at
    assert store.settle(contest, MATCH, a.id, by="admin").changed is False
    assert len([e for e in store.events if e["type"] == EventType.DISPUTE_SETTLED]) == 1


# -- the transparency log's replay -----------------------------------------------------------------


def upload(sid: str, team: str) -> dict[str, object]:
    return {"type": "upload", "submission": sid, "team": team, "sha256": "0" * 64, "size": 1,
            "received_at": IN_TIME}  # fmt: skip


def verdict(sid: str, game: GameOutcome) -> dict[str, object]:
    result = Crosstiles().log_result(JudgedResult("lex", "board", "x", 0, "k", game))
    return {"type": "verdict", "submission": sid, "lexicon": "lex", "layout": "board",
            "judge_version": "x", "result": result, "match": MATCH}  # fmt: skip


def test_the_log_replay_passes_over_the_rivals_uploaded_before_a_settlement_judged_or_not() -> None:
    """B is uploaded before the settlement choosing A but judged after it: passed over all the
    same (the settlement's transaction saw it). C, uploaded after, disputes the game again."""
    settled = {"type": "settled", "submission": "a", "match": MATCH}
    before_c = [upload("a", "north"), upload("b", "south"), verdict("a", ANN_WINS), settled,
                verdict("b", BOB_WINS)]  # fmt: skip
    with_c = [*before_c, upload("c", "east"), verdict("c", BOB_WINS)]

    settled_game = transparency.implied(enumerate(before_c))
    disputed_again = transparency.implied(enumerate(with_c))

    assert settled_game.problems == [] and disputed_again.problems == []
    assert settled_game.submissions["b"].passed_over_for == "a"
    players = Crosstiles().log_standings(settled_game.live())["players"]
    assert [(p["nick"], p["wins"]) for p in players] == [("ann", 1.0), ("bob", 0.0)]
    assert disputed_again.submissions["c"].passed_over_for is None
    assert Crosstiles().log_standings(disputed_again.live())["players"] == []
    assert (
        Crosstiles().log_standings(
            transparency.implied(enumerate(before_c[:3] + before_c[4:])).live()
        )["players"]
        == []
    )
