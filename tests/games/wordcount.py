"""A toy third game, defined here alone, to show that a game is one module and one registration
call: an upload is a list of words, and its score is the number of distinct words of the
contest's list in it, times the points its rules give a word.

Loaded into a process by `TILEJUDGE_GAMES=tests.games.wordcount`, as any game from outside the
project would be.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from core.game import Identity, Judged
from core.games import register
from core.records import JudgedResult
from judge import Lexicon

VERSION = "wordcount-1"


class SchemeError(ValueError):
    """Rules data that is not a word-count scheme."""


@dataclass(frozen=True)
class Scheme:
    """How many points a word of the list is worth."""

    name: str
    points: int

    @property
    def id(self) -> str:
        return hashlib.sha256(json.dumps({"points": self.points}).encode()).hexdigest()


class WordCount:
    name = "wordcount"
    rules_noun = "scheme"
    shared_uploads = False
    words_vary = False
    rules_errors: tuple[type[Exception], ...] = (SchemeError,)

    def identity(self, data: bytes) -> Identity:
        return Identity()

    def default_rules(self) -> Scheme:
        return Scheme("one-each", 1)

    def parse_rules(self, content: str) -> Scheme:
        try:
            doc = json.loads(content)
            return Scheme(str(doc.get("name", "scheme")), int(doc["points"]))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise SchemeError(f"not a scheme: {exc}") from None

    def rules_json(self, rules: Any) -> str:
        return json.dumps({"name": rules.name, "points": rules.points})

    def judge(self, data: bytes, lexicon: Lexicon, rules: Any, report_key: str) -> Judged:
        words = sorted(set(data.decode("utf-8", "replace").lower().split()))
        known = [word for word in words if word in lexicon.words]
        result = JudgedResult(lexicon.id, rules.id, VERSION, len(known) * rules.points, report_key)
        report = {"score": result.score, "known": known, "unknown": len(words) - len(known)}

        def pieces(head: Mapping[str, Any]) -> Iterable[bytes]:
            return [json.dumps({**head, **report}).encode()]

        return Judged(result, words, pieces)

    def sample(self, lexicon: Lexicon, rules: Any, seed: int, size: int) -> bytes:
        known = sorted(lexicon.words)
        return " ".join(known[(seed + n) % len(known)] for n in range(size)).encode()


register(WordCount())
