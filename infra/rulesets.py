"""Word lists and each game's rules data (layouts, boards) by id for the workers: memory first,
then a local file cache, then S3 (rules data: SQL).

The worker parent preloads the live lexicons before it forks its pool, so the children share
one copy (see workers/celery_app.py); anything else is loaded lazily, at most `capacity` at once.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from pathlib import Path

from core import tuning
from core.errors import UnknownRuleset
from core.game import Rules
from core.games import game
from core.ports import BlobStore
from infra.sql.rulesets import SqlRulesets
from infra.sql.store import SqlStore
from judge import Lexicon


def worth_preloading(store: SqlStore) -> list[str]:
    """The word lists a worker host keeps loaded: every contest's, and the two newest
    registered (a contest about to be created, or a fix about to be rejudged, uses one)."""
    live = {contest.lexicon_id for contest in store.list_contests()}
    newest = [row.id for row in store.all_lexicons()[-2:]]
    return sorted(live | set(newest))


class RulesetCache:
    def __init__(
        self, store: SqlRulesets, blobs: BlobStore, directory: Path, capacity: int = 4
    ) -> None:
        self._store = store
        self._blobs = blobs
        self._directory = directory
        self._capacity = capacity
        self._lexicons: OrderedDict[str, Lexicon] = OrderedDict()
        self._pinned: set[str] = set()
        self._rules: dict[tuple[str, str], Rules] = {}
        self._diffs: OrderedDict[tuple[str, str], tuple[frozenset[str], frozenset[str]]] = (
            OrderedDict()
        )

    def rebind(self, store: SqlRulesets, blobs: BlobStore) -> None:
        """New connections after a fork; the loaded word lists stay (and stay shared)."""
        self._store, self._blobs = store, blobs

    def preload(self, lexicon_ids: list[str]) -> None:
        """Load and pin (the parent's shared copies); the oldest pins go beyond capacity."""
        for lexicon_id in lexicon_ids:
            self.lexicon(lexicon_id)
            self._pinned.add(lexicon_id)
        for lexicon_id in list(self._lexicons):
            if len(self._pinned) <= self._capacity:
                break
            self._pinned.discard(lexicon_id)
        self._evict()

    def preload_more(self, lexicon_ids: list[str]) -> list[str]:
        """`preload` those not loaded yet, then work out each one's diff with every other
        pinned list, which is what an affected-only rejudge between them asks first (the
        worker parent does this before it reforks its pool, so the children find both here).
        The ids newly loaded."""
        new = [lexicon_id for lexicon_id in lexicon_ids if lexicon_id not in self._lexicons]
        if not new:
            return []
        self.preload(new)
        for newer in (lexicon_id for lexicon_id in new if lexicon_id in self._pinned):
            for older in sorted(self._pinned - {newer}):
                self.diff(older, newer)
        return new

    def release_connections(self) -> None:
        """Close the parent's SQL connections before it forks again."""
        self._store.engine.dispose()

    def shares(self, *lexicon_ids: str) -> bool:
        """Were all these preloaded by the parent (so this process shares them)?"""
        return all(lexicon_id in self._pinned for lexicon_id in lexicon_ids)

    def loaded(self) -> list[str]:
        return list(self._lexicons)

    def lexicon(self, lexicon_id: str) -> Lexicon:
        found = self._lexicons.get(lexicon_id)
        if found is not None:
            self._lexicons.move_to_end(lexicon_id)
            return found
        lexicon = Lexicon.from_bytes(self._word_list_bytes(lexicon_id))
        if lexicon.id != lexicon_id:
            raise UnknownRuleset(f"word list stored for {lexicon_id} has id {lexicon.id}")
        self._lexicons[lexicon_id] = lexicon
        self._evict()
        return lexicon

    def diff(self, older_id: str, newer_id: str) -> tuple[frozenset[str], frozenset[str]]:
        """Words (added, removed) going from one lexicon to the other, kept for a few pairs:
        two passes over 370k words take a fifth of a second, which the worker parent spends
        when it preloads a pair (a forked child then finds it here)."""
        found = self._diffs.get((older_id, newer_id))
        if found is None:
            added, removed = self.lexicon(older_id).diff(self.lexicon(newer_id))
            found = self._diffs[(older_id, newer_id)] = (added, removed)
            self._diffs[(newer_id, older_id)] = (removed, added)
            while len(self._diffs) > 2 * tuning.LEXICON_DIFFS_KEPT:
                self._diffs.popitem(last=False)
        return found

    def rules(self, game_name: str, rules_id: str) -> Rules:
        """A game's rules data (a layout, a board), registered in the layouts table with its
        game marked; UnknownRuleset if there is none, or if what is stored has another id."""
        found = self._rules.get((game_name, rules_id))
        if found is None:
            played = game(game_name)
            row = self._store.find_rules(rules_id, game_name)
            if row is None:
                raise UnknownRuleset(f"no {played.rules_noun} {rules_id}")
            found = played.parse_rules(row.content)
            if found.id != rules_id:
                raise UnknownRuleset(f"{played.rules_noun} stored for {rules_id} has id {found.id}")
            self._rules[(game_name, rules_id)] = found
        return found

    def _word_list_bytes(self, lexicon_id: str) -> bytes:
        cached = self._directory / f"{lexicon_id}.txt"
        if cached.is_file():
            return cached.read_bytes()
        row = self._store.find_lexicon(lexicon_id)
        if row is None:
            raise UnknownRuleset(f"no lexicon {lexicon_id}")
        data = self._blobs.get(row.blob_key)
        self._directory.mkdir(parents=True, exist_ok=True)
        partial = cached.with_suffix(f".{os.getpid()}.partial")
        partial.write_bytes(data)
        partial.replace(cached)
        return data

    def _evict(self) -> None:
        for lexicon_id in list(self._lexicons):
            if len(self._lexicons) <= self._capacity:
                return
            if lexicon_id not in self._pinned:
                del self._lexicons[lexicon_id]
