"""Revision 0017 on real SQLite and PostgreSQL: a move list's line counts move from the result
row every game has to Wordytaire's own table, nothing lost, and back again on a downgrade."""

from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import Connection, Engine, inspect, text

from core import clock
from infra.sql.engine import make_engine
from infra.sql.migrate import alembic_config, upgrade
from infra.sql.store import SqlStore

pytestmark = pytest.mark.integration


def migrate(engine: Engine, revision: str, down: bool = False) -> None:
    """The schema as it stood at `revision` (an older release's database), up or down."""
    config = alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        (command.downgrade if down else command.upgrade)(config, revision)


def rows_at_0016(connection: Connection) -> tuple[int, int]:
    """A Wordytaire contest with a move list judged under two word lists, and a Crosstiles
    contest with a game log judged once, written as the schema stood at 0016 (plain SQL: a
    migration test must not lean on the store's current code); the ids of the move list's
    live result and of the game log's."""
    statements = (
        "INSERT INTO lexicons (id, name, words, size, blob_key, source, created_by, created_at)"
        " VALUES ('lex-1', 'tiny', 3, 12, 'lexicons/lex-1.txt', 'test', 'admin', :now),"
        " ('lex-2', 'fixed', 4, 16, 'lexicons/lex-2.txt', 'test', 'admin', :now)",
        "INSERT INTO layouts (id, name, content, created_by, created_at, game) VALUES"
        " ('layout-1', 'default', '{}', 'admin', :now, 'wordytaire'),"
        " ('board-1', 'default', '{}', 'admin', :now, 'crosstiles')",
        "INSERT INTO contests (id, title, opens_at, closes_at, lexicon_id, layout_id,"
        " created_at, game) VALUES"
        " ('c1', 'Moves', :now, :now, 'lex-1', 'layout-1', :now, 'wordytaire'),"
        " ('g1', 'Games', :now, :now, 'lex-1', 'board-1', :now, 'crosstiles')",
        "INSERT INTO teams (id, contest_id, name, token_hash, created_at) VALUES"
        " ('team-1', 'c1', 'alpha', 'hash-1', :now), ('team-2', 'g1', 'club', 'hash-2', :now)",
        "INSERT INTO submissions (id, contest_id, team_id, sha256, size, blob_key, received_at,"
        " receipt, state, state_at, attempts, judged_at) VALUES"
        " ('sub-1', 'c1', 'team-1', 'sha-1', 10, 'u/1', :now, 'r', 'judged', :now, 1, :now),"
        " ('log-1', 'g1', 'team-2', 'sha-2', 10, 'u/2', :now, 'r', 'judged', :now, 1, :now)",
        "INSERT INTO results (submission_id, lexicon_id, layout_id, judge_version, score,"
        " legal, illegal, tiles, report_key, judged_at) VALUES"
        " ('sub-1', 'lex-1', 'layout-1', '1', 41, 2, 1, 7, 'reports/1', :now),"
        " ('sub-1', 'lex-2', 'layout-1', '1', 13, 1, 2, 3, 'reports/2', :now),"
        " ('log-1', 'lex-1', 'board-1', 'crosstiles-1', 300, 0, 0, 0, 'reports/3', :now)",
        "INSERT INTO crosstiles_results (result_id, valid, turns) SELECT id, true, 24"
        " FROM results WHERE submission_id = 'log-1'",
    )
    for statement in statements:
        connection.execute(text(statement), {"now": clock.now()})
    ids = dict(
        connection.execute(
            text("SELECT submission_id, id FROM results WHERE lexicon_id = 'lex-1'")
        ).all()
    )
    return ids["sub-1"], ids["log-1"]


def counts_in_results(connection: Connection) -> list[tuple[str, str, int, int, int]]:
    return [
        tuple(row)
        for row in connection.execute(
            text(
                "SELECT submission_id, lexicon_id, legal, illegal, tiles FROM results"
                " ORDER BY submission_id, lexicon_id"
            )
        )
    ]


def test_0017_moves_a_move_lists_counts_to_wordytaires_table_and_back_with_nothing_lost(
    sql_url: str,
) -> None:
    engine = make_engine(sql_url)
    try:
        migrate(engine, "0016")
        with engine.begin() as connection:
            moves, game = rows_at_0016(connection)
            before = counts_in_results(connection)

        upgrade(engine)

        assert not {"legal", "illegal", "tiles"} & {
            column["name"] for column in inspect(engine).get_columns("results")
        }
        with engine.connect() as connection:
            kept = connection.execute(
                text(
                    "SELECT r.lexicon_id, w.legal, w.illegal, w.tiles FROM wordytaire_results w"
                    " JOIN results r ON r.id = w.result_id ORDER BY r.lexicon_id"
                )
            ).all()
        assert [tuple(row) for row in kept] == [("lex-1", 2, 1, 7), ("lex-2", 1, 2, 3)]
        store = SqlStore(engine)
        assert store.result_fields("wordytaire", [moves]) == {
            moves: {"score": 41, "legal": 2, "illegal": 1}
        }
        assert store.result_fields("crosstiles", [game])[game]["winning_score"] == 300

        migrate(engine, "0016", down=True)

        assert "wordytaire_results" not in inspect(engine).get_table_names()
        with engine.connect() as connection:
            assert counts_in_results(connection) == before
    finally:
        engine.dispose()
