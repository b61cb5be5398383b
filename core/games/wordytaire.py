"""Wordytaire as a game of the pipeline: a team's own move list, judged line by line under a
word list and a bonus layout (docs/rules/wordytaire.md); its result is the total score, with the
legal and illegal lines and the tiles placed as its own (`LineCounts`)."""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from core.errors import Invalid
from core.game import Identity, Judged
from core.records import JudgedResult
from core.transparency import Logged
from judge import Lexicon
from judge.wordytaire import JUDGE_VERSION, Layout, LayoutError, default_layout, judge
from judge.wordytaire.generator import WordIndex, generate

BOM = b"\xef\xbb\xbf"
# docs/rules/wordytaire.md: a line of spaces and tabs alone is blank; a move is five fields, the
# first four numbers (an optional '-', then 1 to 18 digits).
BLANK_LINE = re.compile(rb"[ \t]*")
MOVE_SHAPE = re.compile(rb"[ \t]*(?:-?\d{1,18}[ \t]+){4}[^ \t]+[ \t]*")


def is_move_list(data: bytes) -> bool:
    """Whether the first line of `data` that is not blank has the shape of a move (`x1 y1 x2
    y2 word`, whatever the word): a move list, even if that move is illegal. Reads no further
    than that line."""
    for line in io.BytesIO(data.removeprefix(BOM)):
        text = line.removesuffix(b"\n").removesuffix(b"\r")
        if not BLANK_LINE.fullmatch(text):
            return MOVE_SHAPE.fullmatch(text) is not None
    return False


@dataclass(frozen=True)
class LineCounts:
    """What a judged move list keeps of its own beside its score (`JudgedResult.game`): the
    lines judged legal and illegal, and the tiles placed."""

    legal: int
    illegal: int
    tiles: int


class Wordytaire:
    name = "wordytaire"
    rules_noun = "layout"
    shared_uploads = False
    words_vary = False
    rules_errors: tuple[type[Exception], ...] = (LayoutError,)

    def __init__(self) -> None:
        self._indexes: dict[str, WordIndex] = {}  # the generator's, by word list

    def identity(self, data: bytes) -> Identity:
        return Identity()  # a team's uploads are its own: the same bytes again are a retry

    def looks_like(self, data: bytes) -> bool:
        return is_move_list(data)

    def default_rules(self) -> Layout:
        return default_layout()

    def parse_rules(self, content: str) -> Layout:
        return Layout.from_json(content)

    def rules_json(self, rules: Any) -> str:
        layout: Layout = rules
        return layout.to_json().decode()

    def judge(self, data: bytes, lexicon: Lexicon, rules: Any, report_key: str) -> Judged:
        layout: Layout = rules
        report = judge(data, lexicon, layout)
        legal = report.legal  # counted once: a pass over every verdict
        counts = LineCounts(legal, len(report.verdicts) - legal, report.tiles_placed)
        result = JudgedResult(
            lexicon.id, layout.id, JUDGE_VERSION, report.total, report_key, counts
        )

        def pieces(head: Mapping[str, Any]) -> Iterable[bytes]:
            return report.json_chunks(dict(head), True)

        return Judged(result, report.words, pieces)

    def log_result(self, result: JudgedResult) -> dict[str, Any]:
        counts = result.game
        if not isinstance(counts, LineCounts):
            raise TypeError("a Wordytaire result carries its LineCounts")
        return {
            "score": result.score,
            "legal": counts.legal,
            "illegal": counts.illegal,
            "tiles": counts.tiles,
        }

    def contest_options(self, given: Mapping[str, Any]) -> dict[str, Any]:
        if given:
            raise Invalid(f"a Wordytaire contest takes no options (given {sorted(given)[0]!r})")
        return {}

    def log_standings(
        self, logged: Mapping[str, Logged], options: Mapping[str, Any] | None = None
    ) -> dict[str, list[dict[str, Any]]]:
        """Each team's best score, ties to the earlier receipt, then the smaller id (the
        leaderboard's order); a row names the submission, as the public leaderboard does."""
        best: dict[str, tuple[int, str, str]] = {}
        for sid, sub in logged.items():
            if sub.verdict is None:
                continue
            key = (-int(sub.verdict["score"]), sub.received_at, sid)
            best[sub.team] = min(best.get(sub.team, key), key)
        ranked = sorted((key, team) for team, key in best.items())
        return {
            "entries": [
                {"rank": rank, "score": -score, "submission": sid, "received_at": received_at}
                for rank, ((score, received_at, sid), _) in enumerate(ranked, 1)
            ]
        }

    def sample(self, lexicon: Lexicon, rules: Any, seed: int, size: int) -> bytes:
        """`size` move lines, a tenth of them illegal."""
        index = self._indexes.get(lexicon.id)
        if index is None:
            index = self._indexes[lexicon.id] = WordIndex.build(lexicon.words)
        return generate(index, rules, seed=seed, moves=size, illegal_share=0.1)
