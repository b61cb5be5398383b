"""Word signatures as judging writes them (in any order) and as older rows hold them (sorted)."""

from __future__ import annotations

import zlib
from array import array

from hypothesis import given
from hypothesis import strategies as st

from core.word_hashes import changed_hashes, hashes_in, signature, touches, union

WORDS = st.frozensets(st.text("abcdefgh", min_size=1, max_size=6), max_size=40)


def sorted_signature(words: frozenset[str]) -> bytes:
    """A signature as written before judging stopped sorting them."""
    return array("I", sorted({zlib.crc32(w.encode()) for w in words})).tobytes()


@given(WORDS, WORDS)
def test_a_sorted_signature_and_one_in_judging_order_answer_alike(
    words: frozenset[str], changed: frozenset[str]
) -> None:
    new, older = signature(words), sorted_signature(words)
    asked = changed_hashes(changed)

    assert hashes_in(new) == hashes_in(older)
    assert touches(new, asked) == touches(older, asked) == (not changed.isdisjoint(words))


@given(WORDS, WORDS)
def test_a_union_holds_both_and_is_the_kept_one_when_nothing_is_added(
    kept: frozenset[str], new: frozenset[str]
) -> None:
    merged = union(sorted_signature(kept), signature(new))

    assert hashes_in(merged) == hashes_in(signature(kept | new))
    if new <= kept:
        assert merged == sorted_signature(kept)  # unchanged: nothing to write
