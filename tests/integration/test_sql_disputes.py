"""Rival logs of one game in SqlStore, on SQLite and PostgreSQL (`core.disputes`): all stored,
an invalid one never blocks a valid one, two valid ones are disputed and count for no one until
settled, a settlement is an event and a transparency log entry, and a rejudge's preview and
standings apply the same rule under the run's ruleset."""

from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import inspect, text

from core import transparency
from core.disputes import Dispute
from core.errors import Conflict, Invalid, NotFound
from core.games.crosstiles import GameError, GameOutcome, GamePlayer
from core.records import JudgedResult, Submission, Team
from infra.sql.engine import make_engine
from infra.sql.games import crosstiles as crosstiles_sql
from infra.sql.migrate import alembic_config
from infra.sql.rejudges import SqlRejudgeRuns
from infra.sql.store import SqlStore
from tests.integration.test_sql_store import (
    HOUR,
    LAYOUT,
    LEXICON,
    add_fixed_lexicon,
    add_game_contest,
    all_events,
    game_log,
    rows_at_0003,
    signature,
    upgrade_to,
)

MATCH = "m" * 64
ANN_WINS = GameOutcome(
    (GamePlayer(1, "ann", 300, False, 12, 40), GamePlayer(2, "bob", 260, False, 0, -40)), None
)
BOB_WINS = GameOutcome(
    (GamePlayer(1, "ann", 250, False, 0, -30), GamePlayer(2, "bob", 280, False, 12, 30)), None
)
UNFINISHED = GameOutcome((), GameError(9, "unfinished", "the game has not ended"))


def judged_log(
    store: SqlStore, team: Team, n: int, game: GameOutcome, lexicon: str = LEXICON
) -> Submission:
    """A log of the game MATCH (its own key `n`), judged to `game`."""
    sub = store.store_submission(game_log(team, f"{n:064x}", key=f"{n:064x}", match=MATCH))
    (claim,) = store.claim_many([sub.id], stale_after=HOUR)
    result = JudgedResult(lexicon, LAYOUT, "x", 0, f"k{n}", game)
    assert store.record_results([(claim, result, signature(["ann"]))]) == {sub.id}
    return sub


def nicks(store: SqlStore, ruleset: tuple[str, str] | None = None) -> list[tuple[str, float]]:
    return [(p["nick"], p["wins"]) for p in crosstiles_sql.game_standings(store, "g1", ruleset)]


def test_an_unfinished_log_sent_first_neither_blocks_nor_disputes_the_valid_one(
    store: SqlStore,
) -> None:
    first, second, _ = add_game_contest(store)
    prefix = judged_log(store, first, 1, UNFINISHED)
    real = judged_log(store, second, 2, ANN_WINS)

    assert nicks(store) == [("ann", 1.0), ("bob", 0.0)]
    assert [g["submission"] for g in crosstiles_sql.invalid_games(store, "g1")] == [prefix.id]
    contest = store.get_contest("g1")
    assert contest is not None
    assert store.disputes(contest) == []
    assert store.standings(contest)["disputed"] == 0
    assert real.id != prefix.id


def test_two_valid_logs_are_disputed_until_settled_and_the_settlement_is_logged(
    store: SqlStore,
) -> None:
    first, second, third = add_game_contest(store)
    a = judged_log(store, first, 1, ANN_WINS)
    b = judged_log(store, second, 2, BOB_WINS)
    contest = store.get_contest("g1")
    assert contest is not None

    assert nicks(store) == [] and store.standings(contest)["disputed"] == 1
    (dispute,) = store.disputes(contest)
    assert isinstance(dispute, Dispute) and dispute.match == MATCH
    assert [(log.submission, log.teams, log.winners) for log in dispute.logs] == [
        (a.id, frozenset({first.id}), ("ann",)), (b.id, frozenset({second.id}), ("bob",))
    ]  # fmt: skip
    assert dispute.party(first.id) and dispute.party(second.id) and not dispute.party(third.id)

    settled = store.settle(contest, MATCH, b.id, by="admin")

    assert (settled.chosen, settled.passed_over, settled.changed) == (b.id, (a.id,), True)
    assert nicks(store) == [("bob", 1.0), ("ann", 0.0)]
    assert store.disputes(contest) == [] and store.standings(contest)["disputed"] == 0
    events = [e for e in all_events(store) if e["type"] == "dispute.settled"]
    assert [(e["submission"], e["passed_over"]) for e in events] == [(b.id, [a.id])]
    entries, _ = store.log_entries("g1", 0, 1000)
    kinds = [transparency.decode(entry) for entry in entries]
    assert {"v": 1, "type": "settled", "submission": b.id, "match": MATCH} in kinds
    assert store.settle(contest, MATCH, b.id, by="admin").changed is False
    assert len([e for e in all_events(store) if e["type"] == "dispute.settled"]) == 1


def test_a_settlement_is_refused_for_an_invalid_an_unjudged_or_a_foreign_log_or_a_lone_one(
    store: SqlStore,
) -> None:
    first, second, _ = add_game_contest(store)
    prefix = judged_log(store, first, 1, UNFINISHED)
    a = judged_log(store, second, 2, ANN_WINS)
    contest = store.get_contest("g1")
    assert contest is not None

    with pytest.raises(Conflict, match="nothing to settle"):
        store.settle(contest, MATCH, a.id, by="admin")
    with pytest.raises(Invalid, match="invalid log"):
        store.settle(contest, MATCH, prefix.id, by="admin")
    waiting = store.store_submission(game_log(first, "f" * 64, key="f" * 64, match=MATCH))
    with pytest.raises(Conflict, match="not judged yet"):
        store.settle(contest, MATCH, waiting.id, by="admin")
    with pytest.raises(NotFound, match="not a log of game"):
        store.settle(contest, MATCH, "nope", by="admin")
    with pytest.raises(NotFound, match="no game"):
        store.settle(contest, "n" * 64, a.id, by="admin")
    assert [e for e in all_events(store) if e["type"] == "dispute.settled"] == []


def test_a_later_valid_log_disputes_a_settled_game_again_with_the_chosen_one_alone(
    store: SqlStore,
) -> None:
    first, second, _ = add_game_contest(store)
    a = judged_log(store, first, 1, ANN_WINS)
    b = judged_log(store, second, 2, BOB_WINS)
    contest = store.get_contest("g1")
    assert contest is not None
    store.settle(contest, MATCH, a.id, by="admin")

    c = judged_log(store, second, 3, BOB_WINS)

    assert nicks(store) == []
    (dispute,) = store.disputes(contest)
    assert [log.submission for log in dispute.logs] == [a.id, c.id]
    assert store.settle(contest, MATCH, c.id, by="admin").passed_over == tuple(sorted([a.id, b.id]))
    assert nicks(store) == [("bob", 1.0), ("ann", 0.0)]


def test_a_rejudge_applies_the_rule_under_its_own_ruleset_in_its_preview(store: SqlStore) -> None:
    """Under the live list both logs are valid (disputed, counted nowhere); under the fixed
    list one is invalid, so the other counts without the organiser."""
    first, second, _ = add_game_contest(store)
    add_fixed_lexicon(store)
    a = judged_log(store, first, 1, ANN_WINS)
    b = judged_log(store, second, 2, BOB_WINS)
    rejudges = SqlRejudgeRuns(store)
    run, _ = rejudges.start("g1", "lex-2", LAYOUT, "full", by="admin")
    broken = GameOutcome((), GameError(4, "not_in_dictionary", "'ann' is not in the list"))
    under_fix = [
        (a.id, JudgedResult("lex-2", LAYOUT, "x", 0, "ka", broken)),
        (b.id, JudgedResult("lex-2", LAYOUT, "x", 0, "kb", BOB_WINS)),
    ]
    assert rejudges.record_batch(run, under_fix) == 2

    assert nicks(store) == []
    assert nicks(store, ("lex-2", LAYOUT)) == [("bob", 1.0), ("ann", 0.0)]
    changed = {c["submission"]: c for c in rejudges.changes(run)}
    assert (changed[a.id]["old_counts"], changed[a.id]["new_counts"]) == (False, False)
    assert (changed[b.id]["old_counts"], changed[b.id]["new_counts"]) == (False, True)
    moved = {m["player"]: m for m in rejudges.rank_changes(run)}
    assert (moved["bob"]["old_rank"], moved["bob"]["new_rank"]) == (None, 1)
    rejudges.apply(run.id, by="admin")
    assert nicks(store) == [("bob", 1.0), ("ann", 0.0)]
    contest = store.get_contest("g1")
    assert contest is not None and store.disputes(contest) == []


def test_0014_lets_rival_logs_of_one_game_be_stored_and_goes_down_again_without_them(
    sql_url: str,
) -> None:
    engine = make_engine(sql_url)
    try:
        upgrade_to(engine, "0013")
        with engine.begin() as connection:
            rows_at_0003(connection)
            connection.execute(text("UPDATE submissions SET match_key = :m"), {"m": MATCH})
        assert inspect(engine).has_table("dispute_settlements") is False

        upgrade_to(engine, "0014")

        with engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO submissions (id, contest_id, team_id, sha256, size, blob_key,"
                    " received_at, receipt, state, state_at, attempts, match_key) VALUES"
                    " ('sub-2', 'c1', 'team-1', 'sha-2', 10, 'k', 't', 'r', 'stored', 't', 0, :m)"
                ),
                {"m": MATCH},
            )
        assert inspect(engine).has_table("dispute_settlements")
        with engine.begin() as connection:
            connection.execute(text("DELETE FROM submissions WHERE id = 'sub-2'"))
        config = alembic_config()
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "0013")
        unique = {i["name"]: i["unique"] for i in inspect(engine).get_indexes("submissions")}
        assert unique.get("uq_submissions_match") and not inspect(engine).has_table(
            "dispute_settlements"
        )
    finally:
        engine.dispose()
