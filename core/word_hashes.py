"""A submission's distinct words as a compact signature: their 32-bit CRCs, 4 bytes a word, in
no particular order (older rows hold them sorted; both read the same).

Affected-only rejudging asks one question of every submission: does it use a word the fix
changes? The signature answers it from a fifth of the bytes the words themselves take (the
producer reads one per submission of the contest). A collision can only make a submission look
touched when it is not: it is then judged again to the same result, never skipped wrongly.

Every verdict makes one, so it is made in as few passes as possible: not sorted, nor made
distinct (the words are distinct; two of them sharing a CRC leave it twice, which no reader
minds). Sorting was two thirds of its cost, about 3 % of judging an upload; the producer's
question, asked once a submission a rejudge, does without.
"""

from __future__ import annotations

import functools
import sys
import zlib
from array import array
from collections.abc import Iterable


def _hash(word: str) -> int:
    return zlib.crc32(word.encode())


def signature(words: Iterable[str]) -> bytes:
    hashes = array("I", map(zlib.crc32, map(str.encode, words)))
    if sys.byteorder == "big":  # stored little-endian whatever the machine
        hashes.byteswap()
    return hashes.tobytes()


def changed_hashes(words: frozenset[str]) -> frozenset[int]:
    return frozenset(_hash(word) for word in words)


def hashes_in(recorded: bytes) -> frozenset[int]:
    """The hashes a signature holds, whatever their order."""
    return frozenset(_hashes(recorded))


def _hashes(recorded: bytes) -> array[int]:
    hashes = array("I")
    hashes.frombytes(recorded)
    if sys.byteorder == "big":  # stored little-endian whatever the machine
        hashes.byteswap()
    return hashes


_FEW_CHANGED = 16  # a search of the signature each, against one pass over it with lookups


def touches(recorded: bytes | None, changed: frozenset[int]) -> bool:
    """Whether a signature holds one of the `changed` hashes; no signature (never judged yet)
    counts as touched: judge it rather than guess.

    A fix changes a few words, and the producer asks this of every submission of the contest:
    each changed hash is then looked for as its four bytes in the signature (a byte search,
    in C), a match counting only at a hash's own offset, rather than every hash of the
    signature made a Python integer and looked up. Many changed words: the lookup."""
    if recorded is None:
        return True
    if len(changed) > _FEW_CHANGED:
        return not changed.isdisjoint(_hashes(recorded))
    return any(_holds(recorded, pattern) for pattern in _patterns(changed))


@functools.lru_cache(maxsize=4)
def _patterns(changed: frozenset[int]) -> tuple[bytes, ...]:
    return tuple(hash_.to_bytes(4, "little") for hash_ in sorted(changed))


def _holds(recorded: bytes, pattern: bytes) -> bool:
    """Whether `pattern` is one of the signature's hashes: found at an offset that is a
    multiple of four (elsewhere it spans two hashes)."""
    at = recorded.find(pattern)
    while at != -1:
        if at % 4 == 0:
            return True
        at = recorded.find(pattern, at + 1)
    return False


def union(kept: bytes, new: bytes) -> bytes:
    """A signature of the words of both; `kept` itself when `new` adds none (the rule: a
    submission is judged again to the same words)."""
    if new == kept:
        return kept
    hashes, more = set(_hashes(kept)), set(_hashes(new))
    if more <= hashes:
        return kept
    merged = array("I", sorted(hashes | more))
    if sys.byteorder == "big":
        merged.byteswap()
    return merged.tobytes()
