"""One behaviour suite for the ruleset port (`core.ports.RulesetStore`), run on every
implementation: the in-memory fake (`core.fake_ruleset_store.InMemoryRulesetStore`), SQLite and
PostgreSQL (`infra.sql.store.SqlStore`). Each test states the word lists, rules data and events
the SQL adapter gives. The sides are in `store_port_sides.py`."""

from __future__ import annotations

from core.records import RulesData, WordList
from tests.integration.port_sides import LAYOUT, LEX1, LEX2, LEX3, START, SUITE, side_fixture
from tests.integration.store_port_sides import FakeStores, SqlStores, Stores

pytestmark = SUITE
side = side_fixture(FakeStores, SqlStores)


def listed(lists: list[WordList]) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(found.id, found.name, found.names) for found in lists]


def test_a_name_finds_the_list_it_was_given_to_last_and_a_list_shows_its_names_in_order(
    side: Stores,
) -> None:
    rulesets = side.ruleset_store
    side.add_lexicon("lex-a", "zeta")
    side.add_lexicon("lex-b", "fixed")  # the newer list
    side.add_lexicon("lex-a", "fixed")  # the name given again, to the older list
    side.add_lexicon("lex-a", "alpha")
    side.add_lexicon("lex-a", "zeta")  # a name it carries already: nothing changes

    older = rulesets.find_lexicon("fixed")
    assert older is not None and (older.id, older.name, older.names) == ("lex-a", "zeta", ())
    assert older == rulesets.find_lexicon("lex-a") == rulesets.find_lexicon("alpha")
    assert older.created_at > START and (older.words, older.size) == (3, 12)
    assert (older.blob_key, older.source, older.created_by) == (
        "lexicons/lex-a.txt",
        "test",
        "admin",
    )
    assert rulesets.find_lexicon("nope") is None
    assert listed(rulesets.all_lexicons()) == [
        (LEX1, LEX1, (LEX1,)), (LEX2, LEX2, (LEX2,)), (LEX3, LEX3, (LEX3,)),
        ("lex-a", "zeta", ("zeta", "fixed", "alpha")), ("lex-b", "fixed", ("fixed",)),
    ]  # fmt: skip
    assert side.events("lexicon.") == [
        {"type": "lexicon.added", "lexicon": "lex-a", "name": "zeta", "words": 3, "by": "admin"},
        {"type": "lexicon.added", "lexicon": "lex-b", "name": "fixed", "words": 3, "by": "admin"},
        {"type": "lexicon.named", "lexicon": "lex-a", "name": "fixed", "by": "admin"},
        {"type": "lexicon.named", "lexicon": "lex-a", "name": "alpha", "by": "admin"},
    ]  # fmt: skip


def test_rules_data_are_added_once_under_their_first_name_and_listed_oldest_first(
    side: Stores,
) -> None:
    rulesets = side.ruleset_store
    seeded = rulesets.find_rules(LAYOUT)
    assert seeded is not None and (seeded.name, seeded.game) == ("default", "wordytaire")

    board = rulesets.add_rules(
        id="board-1", name="standard", content="{}", created_by="admin", game="crosstiles"
    )
    again = rulesets.add_rules(
        id="board-1", name="renamed", content="{}", created_by="other", game="crosstiles"
    )

    assert board == again == RulesData("board-1", "standard", "{}", "admin", board.created_at,
                                       "crosstiles")  # fmt: skip
    assert board.created_at > seeded.created_at
    assert rulesets.all_rules() == [seeded, board]
    assert rulesets.all_rules("crosstiles") == [board]
    assert rulesets.all_rules("wordytaire") == [seeded]
    assert rulesets.all_rules("nope") == []
    assert side.events("layout.") == [
        {"type": "layout.added", "layout": "board-1", "name": "standard", "by": "admin",
         "game": "crosstiles"},
    ]  # fmt: skip


def test_rules_data_are_found_by_id_or_by_the_newest_of_a_name_within_a_game(
    side: Stores,
) -> None:
    rulesets = side.ruleset_store
    old = rulesets.add_rules(
        id="L-old", name="fixed", content="{}", created_by="admin", game="wordytaire"
    )
    board = rulesets.add_rules(
        id="B-new", name="fixed", content="{}", created_by="admin", game="crosstiles"
    )
    named_id = rulesets.add_rules(
        id="L-id", name="B-new", content="{}", created_by="admin", game="wordytaire"
    )

    assert rulesets.find_rules("fixed") == board  # the newest of that name
    assert rulesets.find_rules("fixed", "wordytaire") == old
    assert rulesets.find_rules("fixed", "nope") is None
    assert rulesets.find_rules("L-old", "crosstiles") is None  # another game's
    # An id and a name alike: the newest row either way.
    assert rulesets.find_rules("B-new") == named_id
    assert rulesets.find_rules("B-new", "crosstiles") == board
    assert rulesets.find_rules("nope") is None
