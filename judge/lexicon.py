"""The word list a submission is judged against: a value with a content-derived id."""

from __future__ import annotations

import bisect
import hashlib
import itertools
import re
from dataclasses import dataclass, field

_BOM = b"\xef\xbb\xbf"
_WORD_LIST = re.compile(rb"[a-z\n]*")
_WORD = re.compile(rb"[a-z]+")


class LexiconError(ValueError):
    """The bytes given are not a word list (one lower-case a-z word per line)."""


@dataclass(frozen=True, slots=True)
class Lexicon:
    """A set of words, identified by the SHA-256 of its sorted unique words.

    Only membership is ever asked of ``words``: the frozenset is built once, before a worker
    forks, and CPython's set lookup of an exact ``str`` touches no reference count, so the
    children share its pages copy-on-write.
    """

    words: frozenset[str] = field(repr=False)
    id: str

    @classmethod
    def from_words(cls, words: frozenset[str] | set[str] | list[str]) -> Lexicon:
        unique = frozenset(words)
        for word in unique:
            if not _WORD.fullmatch(word.encode("ascii", "replace")):
                raise LexiconError(f"{word!r} is not a word of lower-case letters a-z")
        return cls(words=unique, id=lexicon_id(unique))

    @classmethod
    def from_bytes(cls, data: bytes) -> Lexicon:
        """Parse a word list: one word per line, LF or CRLF, blank lines ignored."""
        if data.startswith(_BOM):
            data = data[len(_BOM) :]
        data = data.replace(b"\r\n", b"\n")
        if not _WORD_LIST.fullmatch(data):
            raise LexiconError(_first_bad_line(data))
        listed = data.decode("ascii").split("\n")
        listed.sort()  # one pass over a list kept in order, as word lists are
        words = listed[bisect.bisect_right(listed, "") :]  # the blank lines sort first
        unique = frozenset(words)
        if len(unique) == len(words):  # no word twice, as in a list made with sort -u
            return cls(words=unique, id=_id_of_unique(words))
        return cls(words=unique, id=_sorted_id(words))

    def __contains__(self, word: object) -> bool:
        return word in self.words

    def __len__(self) -> int:
        return len(self.words)

    def diff(self, newer: Lexicon) -> tuple[frozenset[str], frozenset[str]]:
        """Words (added, removed) going from this lexicon to ``newer``."""
        return newer.words - self.words, self.words - newer.words


def lexicon_id(words: frozenset[str]) -> str:
    """SPEC's id: SHA-256 of the sorted unique words, one per line, each ending in a newline."""
    return _sorted_id(sorted(words))


def _sorted_id(ordered: list[str]) -> str:
    """`lexicon_id` of the words of `ordered`, a sorted list that may repeat words and hold
    empty strings."""
    return _id_of_unique([word for word, _ in itertools.groupby(ordered) if word])


def _id_of_unique(words: list[str]) -> str:
    """`lexicon_id` of `words`, sorted, each once, none empty."""
    if not words:
        return hashlib.sha256(b"").hexdigest()
    return hashlib.sha256("\n".join(words).encode("ascii") + b"\n").hexdigest()


def _first_bad_line(data: bytes) -> str:
    for number, line in enumerate(data.split(b"\n"), 1):
        if line and not _WORD.fullmatch(line):
            shown = line[:40].decode("utf-8", "replace")
            return f"line {number}: {shown!r} is not a word of lower-case letters a-z"
    return "the word list is not one lower-case a-z word per line"
