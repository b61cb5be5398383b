"""The Crosstiles verifier against devstack/testing/plain_crosstiles.py, a second, plain reading
of the spec: both must give the same whole report for generated games, their corruptions,
mutations of them and arbitrary bytes."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devstack.testing.plain_crosstiles import plain_verify
from judge import Lexicon
from judge.crosstiles import Board, generate
from judge.crosstiles.generator import CORRUPTIONS, corrupt
from tests.unit.judge.test_crosstiles_engine import (
    ANN_SET,
    ANN_STREWED,
    BOB_RANGE,
    HEADER,
    PENALTIES,
    REMOVAL_GAME,
    SIX_PASSES,
    VerifyFn,
)

examples = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


@pytest.fixture(scope="module")
def corpus(lexicon: Lexicon, board: Board) -> list[bytes]:
    """Fifteen generated games: two to four players, the options in turn."""
    games = []
    for n in range(15):
        options = {"exchanges": n % 2 == 0, "passes": n % 3 == 0, "timeouts": n % 4 < 2}
        games.append(generate(2 + n % 3, f"diff-{n}", lexicon, board, rng_seed=n, **options))
    return games


def assert_agree(verifier: VerifyFn, data: bytes, lexicon: Lexicon, board: Board) -> None:
    """Same report from both, but for the wording of the detail; a missing word is named."""
    ours = verifier(data, lexicon, board).to_json()
    plain = plain_verify(data, lexicon.words, lexicon.id, board.id)
    our_detail = ours["error"].pop("detail") if ours["error"] else ""
    plain_detail = plain["error"].pop("detail") if plain["error"] else ""
    assert ours == plain, data
    if ours["error"] and ours["error"]["reason"] == "not_in_dictionary":
        assert f"'{plain_detail}'" in our_detail


def test_both_accept_every_generated_game(verifier, corpus, lexicon, board) -> None:
    for log in corpus:
        assert verifier(log, lexicon, board).valid
        assert_agree(verifier, log, lexicon, board)


@pytest.mark.parametrize("kind", sorted(CORRUPTIONS))
def test_both_agree_on_every_corruption(verifier, corpus, lexicon, board, kind: str) -> None:
    rng = random.Random(kind)
    for log in corpus:
        for _ in range(3):
            assert_agree(verifier, corrupt(log, kind, rng), lexicon, board)


def test_both_agree_on_the_hand_made_games(verifier, lexicon, board) -> None:
    header3 = [*HEADER, "#player3 cy"]
    for lines, header in [
        ([*SIX_PASSES, *PENALTIES], HEADER),
        ([ANN_STREWED, BOB_RANGE, ANN_SET], HEADER),
        (REMOVAL_GAME, header3),
    ]:
        data = "".join(f"{line}\n" for line in [*header, *lines]).encode()
        assert_agree(verifier, data, lexicon, board)


# -- Hypothesis ---------------------------------------------------------------------------

NOISE = [
    b"",
    b" \t",
    b"#note x",
    b"#note \xff",
    b"#NOTE x",
    b"#seed demo",
    b"#lexicon x",
    b"#player3 cy",
    b"\r",
    b"\xef\xbb\xbf",
    b">ann: SDWRT?E - +0 0",
    b">bob: EAGNORR - +0 0",
    b">ann: SDWRT?E (timeout) +0 0",
    b">bob: EAGNORR -E +0 0",
    b">ann: (EAGNORR) +8 8",
    b"junk",
    b"\xff",
]
BYTES = b" \t\r\n#>:?.-+()0123456789ADEGHNORSTWZaeoz\xff\x00"


@st.composite
def mutations(draw: st.DrawFn, log: bytes) -> bytes:
    """A valid log with one to three edits: lines dropped, repeated, swapped or inserted,
    a byte changed, a number moved by one, a letter's case flipped, the end cut off."""
    lines = log.split(b"\n")
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(lines) - 1))
        edit = draw(st.integers(0, 7))
        if edit == 0 and len(lines) > 1:
            del lines[at]
        elif edit == 1:
            lines.insert(at, lines[at])
        elif edit == 2 and at + 1 < len(lines):
            lines[at], lines[at + 1] = lines[at + 1], lines[at]
        elif edit == 3:
            lines.insert(at, draw(st.sampled_from(NOISE)))
        elif edit == 4 and lines[at]:
            spot = draw(st.integers(0, len(lines[at]) - 1))
            byte = draw(st.sampled_from(BYTES))
            lines[at] = lines[at][:spot] + bytes([byte]) + lines[at][spot + 1 :]
        elif edit == 5:
            lines[at] = _nudge_number(lines[at], draw(st.integers(0, 5)), draw(st.booleans()))
        elif edit == 6 and lines[at]:
            spot = draw(st.integers(0, len(lines[at]) - 1))
            lines[at] = (
                lines[at][:spot] + lines[at][spot : spot + 1].swapcase() + lines[at][spot + 1 :]
            )
        elif edit == 7:
            lines = lines[: at + 1]
    return b"\n".join(lines)


def _nudge_number(line: bytes, which: int, up: bool) -> bytes:
    fields = line.split(b" ")
    numbers = [n for n, field in enumerate(fields) if field.lstrip(b"+-").isdigit()]
    if not numbers:
        return line
    n = numbers[which % len(numbers)]
    sign = fields[n][:1] if fields[n][:1] in (b"+", b"-") else b""
    value = int(fields[n].lstrip(b"+-")) + (1 if up else -1)
    fields[n] = sign + str(abs(value)).encode()
    return b" ".join(fields)


@examples
@given(data=st.data())
def test_both_agree_on_mutated_games(verifier, corpus, lexicon, board, data) -> None:
    log = data.draw(st.sampled_from(corpus))
    assert_agree(verifier, data.draw(mutations(log)), lexicon, board)


DEMO_MOVES = [
    ANN_STREWED,
    BOB_RANGE,
    ANN_SET,
    *SIX_PASSES,
    *PENALTIES,
    *REMOVAL_GAME,
    ">ann: SDWRT?E 8D STREWED +72 72",
    ">ann: SDWRT?E 7D STREWeD +72 72",
    ">bob: EAGNORR 8H GROANER +68 68",
    ">ann: SFETSKY 9G SKY +20 92",
    ">ann: SDWRT?E -SDW +0 0",
]
headers = st.sampled_from([HEADER, [*HEADER, "#player3 cy"], HEADER[:3], []])
log_like = st.builds(
    lambda header, lines: b"\n".join([*(line.encode() for line in header), *lines]),
    headers,
    st.lists(
        st.one_of(
            st.sampled_from(DEMO_MOVES).map(str.encode),
            st.sampled_from(NOISE),
            st.binary(max_size=30),
        ),
        max_size=25,
    ),
)


@examples
@given(data=st.one_of(st.binary(max_size=400), log_like))
def test_never_raises_and_agrees_on_any_bytes(verifier, lexicon, board, data: bytes) -> None:
    assert_agree(verifier, data, lexicon, board)


@examples
@given(header=headers, lines=st.lists(st.sampled_from(DEMO_MOVES), max_size=30))
def test_both_agree_on_demo_lines_in_any_order(verifier, lexicon, board, header, lines) -> None:
    data = "".join(f"{line}\n" for line in [*header, *lines]).encode()
    report = verifier(data, lexicon, board)
    assert report.turns <= len(lines)
    assert_agree(verifier, data, lexicon, board)
