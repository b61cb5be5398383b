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


HASHES = st.lists(st.integers(0, 2**32 - 1), max_size=60)


@given(HASHES, st.frozensets(st.integers(0, 2**32 - 1), max_size=40), st.data())
def test_touches_answers_as_a_lookup_of_every_hash_whatever_the_number_changed(
    held: list[int], changed: frozenset[int], data: st.DataObject
) -> None:
    # Some changed hashes held, and some whose bytes span two held hashes (not held).
    if held:
        changed |= frozenset(data.draw(st.lists(st.sampled_from(held), max_size=3)))
    recorded = b"".join(hash_.to_bytes(4, "little") for hash_ in held)  # as stored
    for offset in data.draw(st.lists(st.integers(1, max(1, len(recorded) - 5)), max_size=3)):
        spanning = int.from_bytes(recorded[offset : offset + 4].ljust(4, b"\0"), "little")
        changed |= frozenset([spanning])

    assert touches(recorded, changed) == (not changed.isdisjoint(held))


def test_a_changed_hash_whose_bytes_span_two_held_ones_does_not_touch() -> None:
    recorded = bytes.fromhex("4433221188776655")  # 0x11223344, 0x55667788 as stored
    spanning = int.from_bytes(recorded[2:6], "little")

    assert spanning not in (0x11223344, 0x55667788)
    assert not touches(recorded, frozenset([spanning]))
    assert touches(recorded, frozenset([spanning, 0x55667788]))
