"""Registering word lists and rules data against the fakes: content-addressed, the workers told
to load a new list, and an empty list refused before anything is written."""

from __future__ import annotations

import pytest

from core.errors import Invalid
from core.events import EventType
from core.fake_ruleset_store import InMemoryRulesetStore
from core.fakes import InMemoryBlobStore, InMemoryPublisher, InMemorySubmissionStore
from core.games import game
from core.records import WordList
from core.registering import register_rules, register_word_list
from judge import Lexicon
from tests.unit.core.conftest import Clock


@pytest.fixture
def kept(fake_clock: Clock) -> InMemorySubmissionStore:
    return InMemorySubmissionStore(now=fake_clock)


def register(
    words: list[str],
    name: str,
    kept: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    publisher: InMemoryPublisher,
) -> WordList:
    lexicon = Lexicon.from_words(words)
    return register_word_list(
        lexicon, name=name, by="admin", store=kept, blobs=blobs, publisher=publisher
    )


def test_a_word_list_is_stored_sorted_under_its_id_recorded_and_loaded_by_the_workers(
    kept: InMemorySubmissionStore, blobs: InMemoryBlobStore, publisher: InMemoryPublisher
) -> None:
    registered = register(["tea", "cat", "at"], "small", kept, blobs, publisher)

    assert (registered.name, registered.words, registered.created_by) == ("small", 3, "admin")
    assert blobs.objects[registered.blob_key] == b"at\ncat\ntea\n"
    assert blobs.content_types[registered.blob_key] == "text/plain"
    found = InMemoryRulesetStore(kept).find_lexicon("small")
    assert found is not None and found.id == registered.id
    assert publisher.preloaded == [registered.id]


def test_the_same_words_again_are_the_same_list_under_one_more_name(
    kept: InMemorySubmissionStore, blobs: InMemoryBlobStore, publisher: InMemoryPublisher
) -> None:
    first = register(["cat", "at"], "small", kept, blobs, publisher)

    again = register(["at", "cat"], "tiny", kept, blobs, publisher)

    assert again.id == first.id and again.name == "tiny"
    [listed] = InMemoryRulesetStore(kept).all_lexicons()
    assert listed.names == ("small", "tiny")
    assert [e["type"] for e in kept.events] == [EventType.LEXICON_ADDED, EventType.LEXICON_NAMED]


def test_an_empty_word_list_is_refused_and_nothing_is_written(
    kept: InMemorySubmissionStore, blobs: InMemoryBlobStore, publisher: InMemoryPublisher
) -> None:
    with pytest.raises(Invalid, match="the word list is empty"):
        register([], "none", kept, blobs, publisher)

    assert (blobs.objects, kept.lexicons, publisher.preloaded) == ({}, {}, [])


def test_a_word_list_is_registered_with_the_broker_down_for_workers_to_load_on_demand(
    kept: InMemorySubmissionStore, blobs: InMemoryBlobStore, publisher: InMemoryPublisher
) -> None:
    publisher.down = True

    registered = register(["cat", "at"], "small", kept, blobs, publisher)

    assert InMemoryRulesetStore(kept).find_lexicon(registered.id) is not None


def test_rules_data_is_content_addressed_keeping_the_name_it_was_first_registered_by(
    kept: InMemorySubmissionStore,
) -> None:
    rules_store = InMemoryRulesetStore(kept)
    played = game("wordytaire")
    rules = played.default_rules()

    first = register_rules(played, rules, name="spec", by="admin", store=rules_store)
    again = register_rules(played, rules, name="other", by="admin", store=rules_store)

    assert first == again and (first.id, first.name, first.game) == (rules.id, "spec", played.name)
    assert played.parse_rules(first.content).id == rules.id
    assert rules_store.find_rules("spec", played.name) == first
    assert [e["type"] for e in kept.events] == [EventType.RULES_ADDED]
