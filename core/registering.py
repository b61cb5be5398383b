"""Registering what contests are judged with: a word list (content-addressed, then loaded by
the workers at once) and a game's rules data beside it (a layout, a board)."""

from __future__ import annotations

import contextlib

from core.errors import Invalid, PublishFailed
from core.game import Game, Rules
from core.ports import BlobStore, Publisher, RulesetStore, SubmissionStore
from core.records import RulesData, WordList
from core.registry import register_lexicon
from judge import Lexicon


def register_word_list(
    lexicon: Lexicon,
    *,
    name: str,
    by: str,
    store: SubmissionStore,
    blobs: BlobStore,
    publisher: Publisher,
) -> WordList:
    """Store and record the list (registering the same words again only adds the name), then
    have the workers load it: a new list is most often a fix about to be rejudged, and a
    worker holding it, with its diffs against the lists it holds, starts judging at once."""
    if len(lexicon) == 0:
        raise Invalid("the word list is empty")
    registered = register_lexicon(store, blobs, lexicon, name=name, source="api", by=by)
    with contextlib.suppress(PublishFailed):  # best effort: workers load it on demand anyway
        publisher.preload([registered.id])
    return registered


def register_rules(
    played: Game, rules: Rules, *, name: str, by: str, store: RulesetStore
) -> RulesData:
    """Record the game's rules data under its id: the same content again is the row already
    there, under the name it was first registered by."""
    return store.add_rules(
        id=rules.id, name=name, content=played.rules_json(rules), created_by=by, game=played.name
    )
