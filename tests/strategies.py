"""Hypothesis strategies for submissions: random bytes, and lines close enough to moves to bite."""

from __future__ import annotations

from hypothesis import strategies as st

from tests.conftest import TINY_WORDS

small = st.integers(min_value=-4, max_value=4)
number_text = st.one_of(
    small.map(str),
    st.sampled_from(
        ["-0", "007", "+1", "1e3", "0x10", "1234567890123456789", "999999999999999999"]
    ),
)
word_text = st.one_of(
    st.sampled_from(sorted(TINY_WORDS)),
    st.text(alphabet="abcotyjz", min_size=1, max_size=5),
    st.sampled_from(["Cat", "café", "a1", "", "c\x00t"]),
)
separator = st.sampled_from([" ", "  ", "\t", " \t "])


@st.composite
def move_lines(draw: st.DrawFn) -> bytes:
    fields = [draw(number_text) for _ in range(4)] + [draw(word_text)]
    if draw(st.integers(0, 9)) == 0:
        fields = fields[: draw(st.integers(0, 5))] + draw(st.lists(word_text, max_size=2))
    line = draw(st.sampled_from(["", " ", "\t"])) + draw(separator).join(fields)
    return line.encode("utf-8")


# Positioned near the origin so that moves connect, conflict and reuse tiles often.
@st.composite
def plausible_moves(draw: st.DrawFn) -> bytes:
    word = draw(st.sampled_from(sorted(TINY_WORDS)))
    x, y = draw(small), draw(small)
    if draw(st.booleans()):
        return f"{x} {y} {x + len(word) - 1} {y} {word}".encode()
    return f"{x} {y} {x} {y + len(word) - 1} {word}".encode()


lines = st.one_of(plausible_moves(), plausible_moves(), move_lines(), st.binary(max_size=12))
submissions = st.lists(lines, max_size=40).map(lambda ls: b"\n".join(ls))
any_bytes = st.one_of(st.binary(max_size=400), submissions)
