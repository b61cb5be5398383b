"""One behaviour suite for the result reads port (`core.ports.ResultReads`), run on every
implementation: the in-memory fake (`core.fake_results.InMemoryResultReads`), SQLite and
PostgreSQL (`infra.sql.store.SqlStore` with `infra.sql.standings` and `infra.sql.games`). Each
test states the results, fields, standings, pages and events the SQL adapter gives. The sides
are in `result_port_sides.py`."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from core.errors import Invalid
from core.games.crosstiles import Crosstiles, GameError, GameOutcome, GamePlayer
from core.records import Contest, JudgedResult, ResultLine, StoredResult, Submission, Team
from judge.crosstiles.ratings import RatingRules, Seat, contest_ratings, shown
from tests.integration.port_sides import (
    FROZEN,
    LAYOUT,
    LEX1,
    LEX2,
    LEX3,
    OPENS,
    START,
    SUITE,
    at,
    side_fixture,
)
from tests.integration.port_sides import contest as seeded
from tests.integration.result_port_sides import FakeResults, Results, SqlResults
from tests.integration.store_port_sides import ANN_WINS, BOB_WINS, MATCH, UNFINISHED

pytestmark = SUITE
side = side_fixture(FakeResults, SqlResults)

OTHER, THIRD, FOURTH = "n" * 64, "o" * 64, "p" * 64  # other games of the same contest
# A three-player game whose two winners tie, the second seat's nick the later in the alphabet.
TIED = GameOutcome(
    (
        GamePlayer(1, "cat", 200, False, 0, -70),
        GamePlayer(2, "bob", 270, False, 6, 0),
        GamePlayer(3, "ann", 270, False, 6, 0),
    ),
    None,
    24,
)
# Two players level on wins and spread whose nicks order by code point, not by a collation.
LEVEL = GameOutcome(
    (GamePlayer(1, "amy", 150, False, 6, 0), GamePlayer(2, "Zed", 150, False, 6, 0)), None, 12
)


def entry(rank: int, team: str, sub: Submission, score: int) -> dict[str, Any]:
    return {"rank": rank, "team": team, "team_id": f"team-{team}", "score": score,
            "submission": sub.id, "received_at": sub.received_at}  # fmt: skip


def player(rank: int, nick: str, games: int, wins: float, spread: int) -> dict[str, Any]:
    """A standings row without its rating (`rated` adds it)."""
    return {"rank": rank, "nick": nick, "games": games, "wins": wins, "spread": spread}


def rated(
    rows: list[dict[str, Any]], *games: GameOutcome, rules: RatingRules | None = None
) -> list[dict[str, Any]]:
    """The rows with each player's rating after `games`, in receipt order."""
    ratings = contest_ratings(
        [[Seat(p.nick, p.score, p.removed) for p in game.players] for game in games],
        rules or RatingRules(),
    )
    return [{**row, **shown(ratings[row["nick"]])} for row in rows]


def logged(side: Results, team: str, key: str, outcome: GameOutcome, hour: int,
           match: str = MATCH, score: int = 0) -> str:  # fmt: skip
    """A game log of `match` the team sent first (its own identity `key`), judged."""
    sid, _ = side.game_log(team, key, match=match, received_at=at(hour))
    side.judge_game(sid, outcome, score)
    return sid


def result_id(side: Results, submission_id: str) -> int:
    found = side.results.current_result(submission_id)
    assert found is not None
    return found.id


# -- a submission's result and its game's own fields -----------------------------------------


def test_the_current_result_is_the_one_under_the_live_ruleset_until_a_rejudge_is_applied(
    side: Results,
) -> None:
    sub = side.upload("alpha", received_at=at(1))
    assert side.results.current_result(sub.id) is None
    assert side.results.current_result("nope") is None

    side.judge_live(sub, 17)

    live = side.results.current_result(sub.id)
    assert live is not None and live.judged_at > START
    assert replace(live, id=0, judged_at="") == StoredResult(
        id=0, submission_id=sub.id, lexicon_id=LEX1, rules_id=LAYOUT, judge_version="test",
        score=17, report_key=f"reports/{sub.id}/{LEX1}.json", judged_at="", carried=0,
    )  # fmt: skip
    run = side.rejudged("c1", LEX2, {sub.id: 25})
    assert side.results.current_result(sub.id) == live  # a preview's result is not current
    side.rejudges.apply(run.id, "admin")
    now = side.results.current_result(sub.id)
    assert now is not None and (now.lexicon_id, now.score) == (LEX2, 25)
    assert now.id != live.id


def test_each_games_own_fields_are_read_by_result_id(side: Results) -> None:
    moves = side.judged_upload("alpha", 17, START)
    game = logged(side, "a", "k1", TIED, 1, score=270)
    spoilt = logged(side, "b", "k2", UNFINISHED, 2, match=OTHER)
    moves_id, game_id, spoilt_id = (result_id(side, s) for s in (moves.id, game, spoilt))
    fields = side.results.result_fields

    assert fields("wordytaire", [moves_id, 10**6]) == {
        moves_id: {"score": 17, "legal": 1, "illegal": 0}
    }
    assert fields("crosstiles", [game_id, spoilt_id, moves_id]) == {
        game_id: {"valid": True, "turns": 24, "winning_score": 270, "winners": ["bob", "ann"],
                  "error": None},
        spoilt_id: {"valid": False, "turns": 0, "winning_score": 0, "winners": [],
                    "error": {"line": 9, "reason": "unfinished",
                              "detail": "the game has not ended"}},
    }  # fmt: skip
    assert fields("crosstiles", []) == {} and fields("nosuch", []) == {}
    with pytest.raises(Invalid, match="no game"):
        fields("nosuch", [moves_id])


def test_a_move_list_carried_by_a_rejudge_keeps_its_line_counts_under_the_new_ruleset(
    side: Results,
) -> None:
    sub = side.judged_upload("alpha", 17, START)
    run, _ = side.rejudges.start("c1", LEX2, LAYOUT, "affected", "admin")
    assert side.rejudges.carry(run, [sub.id]) == 1

    side.rejudges.apply(run.id, "admin")

    live = side.results.current_result(sub.id)
    assert live is not None and (live.lexicon_id, live.carried) == (LEX2, 1)
    assert side.results.result_fields("wordytaire", [live.id]) == {
        live.id: {"score": 17, "legal": 1, "illegal": 0}
    }


# -- Wordytaire's standings ------------------------------------------------------------------


def test_each_team_ranks_by_its_best_score_a_later_equal_one_no_better(side: Results) -> None:
    side.judged_upload("alpha", 10, at(1))
    alpha_best = side.judged_upload("alpha", 30, at(2))
    side.judged_upload("alpha", 30, at(3))  # as good, later: not its best
    beta_best = side.judged_upload("beta", 30, at(1))
    side.judged_upload("beta", 5, at(4))
    side.upload("beta", received_at=at(5))  # not judged: counts for nothing

    assert side.results.standings(side.contest("c1")) == {
        "entries": [entry(1, "beta", beta_best, 30), entry(2, "alpha", alpha_best, 30)]
    }
    assert side.results.standings(side.contest("f1")) == {"entries": []}


def test_a_tie_received_at_once_goes_to_the_smaller_submission_id(side: Results) -> None:
    alpha = side.judged_upload("alpha", 50, at(4))
    beta = side.judged_upload("beta", 50, at(4))
    first, second = sorted([("alpha", alpha), ("beta", beta)], key=lambda t: t[1].id)

    assert side.results.standings(side.contest("c1"))["entries"] == [
        entry(1, *first, 50), entry(2, *second, 50)
    ]  # fmt: skip


def test_standings_under_a_ruleset_given_are_its_results_alone(side: Results) -> None:
    alpha = side.judged_upload("alpha", 10, at(1))
    beta = side.judged_upload("beta", 20, at(2))
    live = side.results.standings(side.contest("c1"))

    side.rejudged("c1", LEX2, {alpha.id: 40, beta.id: 20})

    contest = side.contest("c1")
    assert side.results.standings(contest, (LEX2, LAYOUT)) == {
        "entries": [entry(1, "alpha", alpha, 40), entry(2, "beta", beta, 20)]
    }
    assert side.results.standings(contest) == live
    assert live["entries"] == [entry(1, "beta", beta, 20), entry(2, "alpha", alpha, 10)]
    assert side.results.standings(contest, (LEX3, LAYOUT)) == {"entries": []}


def test_frozen_standings_count_the_uploads_received_before_and_tell_how_many_came_since(
    side: Results,
) -> None:
    early = side.judged_upload("gamma", 10, at(5))
    side.judged_upload("gamma", 40, FROZEN)  # at the freeze: hidden by it
    late = side.judged_upload("gamma", 50, at(7))
    side.upload("gamma", received_at=at(8))  # not judged yet
    contest = side.contest("f1")

    assert side.results.standings(contest, before=FROZEN) == {
        "entries": [entry(1, "gamma", early, 10)],
        "pending": 3,
    }
    assert side.results.standings(contest) == {"entries": [entry(1, "gamma", late, 50)]}
    assert side.results.standings(contest, before=at(0)) == {"entries": [], "pending": 4}


# -- Crosstiles' standings -------------------------------------------------------------------


def test_players_rank_by_wins_then_spread_with_their_ratings(side: Results) -> None:
    logged(side, "a", "k1", ANN_WINS, 1)
    logged(side, "b", "k2", BOB_WINS, 2, match=OTHER)
    logged(side, "a", "k3", TIED, 3, match=THIRD)

    assert side.results.standings(side.contest("g1")) == {
        "players": rated(
            [player(1, "ann", 3, 1.5, 10), player(2, "bob", 3, 1.5, -10),
             player(3, "cat", 1, 0.0, -70)],
            ANN_WINS, BOB_WINS, TIED,
        ),
        "invalid": [],
        "disputed": 0,
    }  # fmt: skip


def test_level_players_order_by_nick_code_point_and_ratings_start_where_the_contest_says(
    side: Results,
) -> None:
    rules = RatingRules(rating=1200.0, deviation=200.0)
    options = Crosstiles().contest_options({"ratings": {"rating": 1200, "deviation": 200}})
    side.add_contest(replace(seeded("g1"), id="g2", options=json.dumps(options)))
    side.teams["d"] = side.add_team(Team("team-d", "g2", "d", "hash-d", OPENS, True))
    sid, _ = side.game_log("d", "k1", received_at=at(1))
    side.judge_game(sid, LEVEL, 150)

    players = side.results.standings(side.contest("g2"))["players"]

    assert players == rated([player(1, "Zed", 1, 0.5, 0), player(2, "amy", 1, 0.5, 0)], LEVEL,
                            rules=rules)  # fmt: skip
    assert players[0]["deviation"] < 200.0


def test_an_invalid_log_is_listed_with_its_team_and_reason_and_blocks_no_valid_one(
    side: Results,
) -> None:
    other = logged(side, "b", "k0", UNFINISHED, 0, match=OTHER)
    spoilt = logged(side, "a", "k1", UNFINISHED, 1)  # a prefix of the game, sent first
    logged(side, "b", "k2", ANN_WINS, 2)

    found = side.results.standings(side.contest("g1"))

    why = {"line": 9, "reason": "unfinished", "detail": "the game has not ended"}
    assert found["invalid"] == [
        {"submission": other, "team": "b", **why},
        {"submission": spoilt, "team": "a", **why},
    ]
    assert found["players"] == rated(
        [player(1, "ann", 1, 1.0, 40), player(2, "bob", 1, 0.0, -40)], ANN_WINS
    )
    assert found["disputed"] == 0


def test_a_disputed_game_counts_for_nothing_until_it_is_settled(side: Results) -> None:
    chosen = logged(side, "a", "k1", ANN_WINS, 1)
    rival = logged(side, "b", "k2", BOB_WINS, 2)
    logged(side, "a", "k3", TIED, 3, match=THIRD)
    last = side.results.events_after(0, 10**6)[-1]["id"]

    before = side.results.standings(side.contest("g1"))
    side.dispute_store.settle(side.contest("g1"), MATCH, chosen, by="admin")
    after = side.results.standings(side.contest("g1"))

    assert before == {
        "players": rated([player(1, "ann", 1, 0.5, 0), player(2, "bob", 1, 0.5, 0),
                          player(3, "cat", 1, 0.0, -70)], TIED),
        "invalid": [],
        "disputed": 1,
    }  # fmt: skip
    assert after == {
        "players": rated([player(1, "ann", 2, 1.5, 40), player(2, "bob", 2, 0.5, -40),
                          player(3, "cat", 1, 0.0, -70)], ANN_WINS, TIED),
        "invalid": [],
        "disputed": 0,
    }  # fmt: skip
    [settled] = side.results.events_after(last, 10)
    assert settled["type"] == "dispute.settled" and settled["passed_over"] == [rival]


def test_game_standings_under_a_ruleset_given_are_its_verdicts_alone(side: Results) -> None:
    kept = logged(side, "a", "k1", ANN_WINS, 1)
    broken = logged(side, "b", "k2", BOB_WINS, 2, match=OTHER)
    run, _ = side.rejudges.start("g1", LEX2, LAYOUT, "full", "admin")
    spoilt = GameOutcome((), GameError(5, "not_in_dictionary", "'zq' is not in the list"), 5)
    batch = [
        (kept, JudgedResult(LEX2, LAYOUT, "crosstiles-1", 300, "k", ANN_WINS)),
        (broken, JudgedResult(LEX2, LAYOUT, "crosstiles-1", 0, "b", spoilt)),
    ]
    assert side.rejudges.record_batch(run, batch) == 2
    contest = side.contest("g1")

    assert side.results.standings(contest, (LEX2, LAYOUT)) == {
        "players": rated([player(1, "ann", 1, 1.0, 40), player(2, "bob", 1, 0.0, -40)], ANN_WINS),
        "invalid": [{"submission": broken, "team": "b", "line": 5, "reason": "not_in_dictionary",
                     "detail": "'zq' is not in the list"}],
        "disputed": 0,
    }  # fmt: skip
    assert side.results.standings(contest)["players"] == rated(
        [player(1, "ann", 2, 1.0, 10), player(2, "bob", 2, 1.0, -10)], ANN_WINS, BOB_WINS
    )


def test_frozen_game_standings_leave_out_a_rival_log_received_after_the_cut(
    side: Results,
) -> None:
    logged(side, "a", "k1", ANN_WINS, 1)
    logged(side, "b", "k2", BOB_WINS, 7)  # a rival, after the cut
    logged(side, "a", "k3", UNFINISHED, 8, match=FOURTH)
    contest = side.contest("g1")

    assert side.results.standings(contest, before=at(6)) == {
        "players": rated([player(1, "ann", 1, 1.0, 40), player(2, "bob", 1, 0.0, -40)], ANN_WINS),
        "invalid": [],
        "disputed": 0,
        "pending": 2,
    }
    live = side.results.standings(contest)
    assert (live["players"], live["disputed"], len(live["invalid"])) == ([], 1, 1)


# -- a contest's results page by page, and the event log -------------------------------------


def test_results_come_by_submission_id_a_page_at_a_time_and_for_one_team(side: Results) -> None:
    first = side.judged_upload("alpha", 10, at(1))
    waiting = side.upload("alpha", received_at=at(2))
    beta = side.judged_upload("beta", 20, at(3))
    side.judged_upload("gamma", 5, at(1))  # another contest's
    ids = sorted([first.id, waiting.id, beta.id])
    page = side.results.results_page

    one, two = page("c1", "", 2), page("c1", ids[1], 2)

    assert [line.submission for line in one + two] == ids
    assert page("c1", ids[-1], 2) == [] and page("c1", "", 0) == []
    lines = {line.submission: line for line in one + two}
    live = side.results.current_result(first.id)
    assert live is not None
    assert lines[first.id] == ResultLine(
        first.id, "alpha", "team-alpha", "judged", at(1), live.judged_at, LEX1, LAYOUT, live.id
    )
    assert lines[waiting.id] == ResultLine(
        waiting.id, "alpha", "team-alpha", "stored", at(2), None, None, None, None
    )
    assert lines[beta.id].result_id == result_id(side, beta.id) != live.id
    assert page("c1", "", 10, "team-beta") == [lines[beta.id]]
    assert page("c1", "", 10, "team-gamma") == []


def test_a_page_shows_the_result_under_the_ruleset_a_rejudge_applied(side: Results) -> None:
    sub = side.judged_upload("alpha", 10, at(1))
    before = side.results.results_page("c1", "", 10)
    run = side.rejudged("c1", LEX2, {sub.id: 12})

    side.rejudges.apply(run.id, "admin")

    [line] = side.results.results_page("c1", "", 10)
    assert (line.lexicon, line.result_id) == (LEX2, result_id(side, sub.id))
    assert line.result_id != before[0].result_id


def test_events_come_after_an_id_in_order_each_as_stored(side: Results) -> None:
    seeded_events = side.results.events_after(0, 10**6)
    ids = [event["id"] for event in seeded_events]
    assert ids and ids == sorted(set(ids))
    last = ids[-1]

    sub = side.upload("alpha", received_at=at(1))
    side.judge_live(sub, 12)

    found = side.results.events_after(last, 100)
    assert [event["type"] for event in found] == [
        "submission.stored", "submission.judging", "submission.judged"
    ]  # fmt: skip
    assert all(event["id"] > last and event["ts"] > START for event in found)
    about = {"submission": sub.id, "contest": "c1", "team": "team-alpha"}
    assert {k: v for k, v in found[0].items() if k not in ("id", "ts")} == {
        "type": "submission.stored", **about, "sha256": sub.sha256, "size": 100,
        "received_at": at(1),
    }  # fmt: skip
    assert {k: v for k, v in found[2].items() if k not in ("id", "ts")} == {
        "type": "submission.judged", **about, "score": 12, "legal": 1, "illegal": 0,
        "received_at": at(1), "lexicon": LEX1, "layout": LAYOUT,
    }  # fmt: skip
    assert side.results.events_after(last, 1) == found[:1]
    assert side.results.events_after(found[0]["id"], 100) == found[1:]
    assert side.results.events_after(found[-1]["id"], 100) == []
    assert side.results.events_after(last, 0) == []


def test_a_game_logs_judged_event_carries_no_line_counts(side: Results) -> None:
    last = side.results.events_after(0, 10**6)[-1]["id"]

    sid = logged(side, "a", "k1", TIED, 1, score=270)

    judged = [e for e in side.results.events_after(last, 100) if e["type"] == "submission.judged"]
    assert [(e["submission"], e["score"]) for e in judged] == [(sid, 270)]
    assert not {"legal", "illegal", "tiles"} & set(judged[0])


def test_a_contest_of_no_game_known_has_no_standings(side: Results) -> None:
    unknown: Contest = replace(seeded("c1"), game="nosuch")
    with pytest.raises(Invalid, match="no game"):
        side.results.standings(unknown)
