"""What a judge run returns: one verdict per move line, and the totals."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from operator import countOf, itemgetter
from typing import Any, NamedTuple

from judge.wordytaire.report_lines import json_lines

JUDGE_VERSION = "1"
_SPEC_KEYS = ("total", "legal", "illegal", "lexicon", "layout")
_CHUNK = 4096  # verdicts per piece of json_chunks: about half a megabyte of JSON
_REASON = itemgetter(1)  # Verdict.reason, read as a tuple item


class Reason(StrEnum):
    """SPEC's reason codes, in the order the checks run."""

    MALFORMED = "malformed"
    BAD_LETTERS = "bad_letters"
    TOO_SHORT = "too_short"
    BAD_DIRECTION = "bad_direction"
    LENGTH_MISMATCH = "length_mismatch"
    NOT_IN_DICTIONARY = "not_in_dictionary"
    MUST_COVER_ORIGIN = "must_cover_origin"
    NOT_CONNECTED = "not_connected"
    CONFLICT = "conflict"
    NO_NEW_TILES = "no_new_tiles"
    BAG_EMPTY = "bag_empty"


class Verdict(NamedTuple):
    """The verdict on one move line: legal with a score and new tiles, or illegal with a reason.

    A NamedTuple rather than a dataclass: a submission has up to hundreds of thousands of
    lines and this is built once per line on the hot path.
    """

    line: int
    reason: Reason | None
    score: int = 0
    tiles: int = 0
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.reason is None

    def to_json(self) -> dict[str, Any]:
        if self.reason is None:
            return {"line": self.line, "ok": True, "score": self.score, "tiles": self.tiles}
        return {"line": self.line, "ok": False, "reason": self.reason.value, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class Report:
    """A whole submission's result. ``words`` are the distinct words looked up in the lexicon:
    only a change in their membership can change any verdict (what affected-only rejudging uses).
    """

    lexicon: str
    layout: str
    verdicts: tuple[Verdict, ...] = field(repr=False)
    total: int
    tiles_placed: int
    bag_left: dict[str, int] = field(repr=False)
    words: frozenset[str] = field(repr=False)

    @property
    def legal(self) -> int:
        return countOf(map(_REASON, self.verdicts), None)

    @property
    def illegal(self) -> int:
        return len(self.verdicts) - self.legal

    def reasons(self) -> dict[str, int]:
        """Illegal lines counted per reason code, in SPEC's check order, zeros left out."""
        counts = dict.fromkeys(Reason, 0)
        for verdict in self.verdicts:
            if verdict.reason is not None:
                counts[verdict.reason] += 1
        return {reason.value: n for reason, n in counts.items() if n}

    def illegal_verdicts(self) -> Iterator[Verdict]:
        return (verdict for verdict in self.verdicts if verdict.reason is not None)

    def to_json_bytes(self) -> bytes:
        """``to_json()`` serialised, on one line."""
        return b"".join(self.json_chunks())

    def json_chunks(
        self, about: dict[str, Any] | None = None, one_per_line: bool = False
    ) -> Iterator[bytes]:
        """``to_json()`` serialised piece by piece (`about`'s keys first), so that a report of a
        million lines is never one string of a hundred megabytes. Built by hand: several times
        faster than json.dumps of the dicts, which matters when every judged submission's report
        is written out. With `one_per_line`, each verdict object sits on a line of its own
        (still one JSON document), so a reader can take the report a line at a time.
        """
        summary = self._summary()
        head = (about or {}) | {key: summary.pop(key) for key in _SPEC_KEYS}
        newline = "\n" if one_per_line else ""
        yield f'{json.dumps(head, separators=(",", ":"))[:-1]},"lines":[{newline}'.encode()
        separator = f",{newline}"
        verdicts = self.verdicts
        for start in range(0, len(verdicts), _CHUNK):
            text = json_lines(verdicts, start, start + _CHUNK, separator)
            yield (f"{separator}{text}" if start else text).encode()
        rest = json.dumps(summary, separators=(",", ":"))[1:]
        yield f"{newline}],{rest}".encode()

    def _summary(self) -> dict[str, Any]:
        legal = self.legal
        return {
            "total": self.total,
            "legal": legal,
            "illegal": len(self.verdicts) - legal,
            "lexicon": self.lexicon,
            "layout": self.layout,
            "reasons": self.reasons(),
            "tiles_placed": self.tiles_placed,
            "bag_left": self.bag_left,
            "words": sorted(self.words),
            "judge_version": JUDGE_VERSION,
        }

    def to_json(self) -> dict[str, Any]:
        """SPEC's JSON report, with extra keys (which SPEC welcomes) after the fixed ones."""
        summary = self._summary()
        head = {key: summary.pop(key) for key in _SPEC_KEYS}
        return {**head, "lines": [verdict.to_json() for verdict in self.verdicts], **summary}
