"""Hand-worked examples for the plain reference judge (devstack/testing/plain_judge.py).

Letter points used below (SPEC "The bag"):
    a1 b5 c4 d4 e1 i1 j9 o2 s2 t2 u4 z8
Bonus table (SPEC "The bonus squares", rows |y| mod 5, columns |x| mod 5):
        0   1   2   3   4
   0    .   .   L2  .   .
   1    .   W2  .   .   L3
   2    .   .   L2  .   .
   3    .   .   .   W3  .
   4    .   .   .   .   .
"""

from __future__ import annotations

import random

import pytest

from devstack.testing.plain_judge import BAG_COUNTS, SPEC_BONUS_ROWS, plain_judge

WORDS = frozenset(
    {"at", "cat", "cab", "abs", "jo", "jojo", "cast", "tide", "about", "to", "zz", "ta"}
)

ALL_PLAIN = [["."] * 5 for _ in range(5)]


def judge(text: bytes | str, bonus_rows: list[list[str]] | None = None) -> dict:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return plain_judge(data, WORDS, bonus_rows)


def verdicts(text: bytes | str) -> list[tuple[int, bool, object]]:
    """(line, ok, score-or-reason) for each verdict."""
    out = []
    for v in judge(text)["lines"]:
        out.append((v["line"], v["ok"], v["score"] if v["ok"] else v["reason"]))
    return out


def reasons(text: bytes | str) -> list[object]:
    return [v["reason"] if not v["ok"] else "ok" for v in judge(text)["lines"]]


def only(text: bytes | str) -> dict:
    lines = judge(text)["lines"]
    assert len(lines) == 1, lines
    return lines[0]


# ---------------------------------------------------------------------------
# Scoring
# ---------------------------------------------------------------------------


def test_first_word_starting_at_origin() -> None:
    # c(0,0) plain 4 + a(1,0) plain 1 + t(2,0) L2 2*2=4  -> 9
    result = judge("0 0 2 0 cat\n")
    assert result["lines"] == [{"line": 1, "ok": True, "score": 9, "tiles": 3}]
    assert (result["total"], result["legal"], result["illegal"]) == (9, 1, 0)
    assert result["bag_left"]["c"] == 438 - 1
    assert result["bag_left"]["a"] == 846 - 1
    assert result["bag_left"]["t"] == 661 - 1


def test_first_word_passing_through_origin() -> None:
    # c(-1,0) plain 4 + a(0,0) plain 1 + t(1,0) plain 2 -> 7
    assert verdicts("-1 0 1 0 cat") == [(1, True, 7)]


def test_first_word_ending_at_origin_with_negative_l2() -> None:
    # c(-2,0): |x|%5=2, row 0 -> L2: 4*2=8; a(-1,0) 1; t(0,0) 2 -> 11
    assert verdicts("-2 0 0 0 cat") == [(1, True, 11)]


def test_vertical_first_word() -> None:
    # c(0,-1) row1 col0 plain 4; a(0,0) 1; b(0,1) row1 col0 plain 5 -> 10
    assert verdicts("0 -1 0 1 cab") == [(1, True, 10)]


def test_crossing_word_reuses_tile_and_gets_w2() -> None:
    # line 1: cat at (0..2, 0) -> 9 (see above)
    # line 2: "at" down from (1,0): a at (1,0) is reused -> plain 1, no bonus;
    #         t at (1,1) is new, row1 col1 = W2 -> (1 + 2) * 2 = 6; one new tile
    result = judge("0 0 2 0 cat\n1 0 1 1 at\n")
    assert result["lines"][1] == {"line": 2, "ok": True, "score": 6, "tiles": 1}
    assert result["total"] == 15
    # only the new t left the bag on line 2
    assert result["bag_left"]["a"] == 846 - 1
    assert result["bag_left"]["t"] == 661 - 2


def test_reused_tile_on_bonus_square_counts_plain() -> None:
    # line 2: "at" down from (2,-1) to (2,0): a(2,-1) row1 col2 plain 1;
    #         t(2,0) is the reused tile on an L2 square -> plain 2 (bonus spent) -> 3
    assert verdicts("0 0 2 0 cat\n2 -1 2 0 at") == [(1, True, 9), (2, True, 3)]


def test_two_w2_squares_multiply_to_times_four() -> None:
    # line 1: cab down (0,-1)..(0,1) -> 10 (see above)
    # line 2: abs right along y=1 from x=-1 to x=1:
    #   a(-1,1) row1 col1 W2, letter 1; b(0,1) reused plain 5; s(1,1) W2, letter 2
    #   (1 + 5 + 2) * 2 * 2 = 32, two new tiles
    result = judge("0 -1 0 1 cab\n-1 1 1 1 abs\n")
    assert result["lines"][1] == {"line": 2, "ok": True, "score": 32, "tiles": 2}
    assert result["total"] == 42


def test_w3_square() -> None:
    # line 1: cast (0..3, 0): c 4 + a 1 + s(2,0) L2 2*2=4 + t 2 -> 11
    # line 2: tide down (3,0)..(3,3): t reused 2; i(3,1) row1 col3 plain 1;
    #         d(3,2) row2 col3 plain 4; e(3,3) row3 col3 W3, letter 1
    #         (2 + 1 + 4 + 1) * 3 = 24
    result = judge("0 0 3 0 cast\n3 0 3 3 tide\n")
    assert verdicts("0 0 3 0 cast\n3 0 3 3 tide\n") == [(1, True, 11), (2, True, 24)]
    assert result["lines"][1]["tiles"] == 3


def test_l3_square() -> None:
    # line 1: about (0..4, 0): a 1 + b 5 + o(2,0) L2 2*2=4 + u 4 + t 2 -> 16
    # line 2: to down (4,0)..(4,1): t reused 2; o(4,1) row1 col4 L3 2*3=6 -> 8
    assert verdicts("0 0 4 0 about\n4 0 4 1 to") == [(1, True, 16), (2, True, 8)]


def test_l3_with_negative_coordinates() -> None:
    # line 1: about at (-4..0, 0): a(-4,0) col4 plain 1; b(-3,0) col3 plain 5;
    #         o(-2,0) col2 L2 2*2=4; u(-1,0) plain 4; t(0,0) plain 2 -> 16
    # line 2: ta down (-4,-1)..(-4,0): t(-4,-1) row1 col4 L3 2*3=6; a(-4,0) reused 1 -> 7
    assert verdicts("-4 0 0 0 about\n-4 -1 -4 0 ta") == [(1, True, 16), (2, True, 7)]


def test_custom_bonus_table() -> None:
    table = [row[:] for row in ALL_PLAIN]
    table[0][0] = "W3"
    table[0][1] = "L2"
    # a(0,0) W3 letter 1; t(1,0) L2 2*2=4 -> (1 + 4) * 3 = 15
    assert judge("0 0 1 0 at", table)["lines"][0]["score"] == 15
    # all plain: 1 + 2 = 3
    assert judge("0 0 1 0 at", ALL_PLAIN)["lines"][0]["score"] == 3


def test_none_table_is_spec_table() -> None:
    text = "0 -1 0 1 cab\n-1 1 1 1 abs\n0 0 0 0 x\n"
    assert judge(text) == judge(text, SPEC_BONUS_ROWS)


def test_incidental_neighbours_are_not_checked() -> None:
    # SPEC has no cross-word rule: "at" right after "cat" makes "catat", still legal.
    # a(3,0) plain 1 + t(4,0) plain 2 -> 3
    assert verdicts("0 0 2 0 cat\n3 0 4 0 at") == [(1, True, 9), (2, True, 3)]


# ---------------------------------------------------------------------------
# Each reason code
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "0 0 1 0",  # 4 fields
        "0 0 1 0 at x",  # 6 fields
        "at",  # 1 field
        "+1 0 2 0 cat",
        "1e3 0 2 0 cat",
        "0x10 0 2 0 cat",
        "0 0 1.0 0 at",
        "--1 0 1 0 at",
        "- 0 1 0 at",
        "0 - 1 0 at",
        "1000000000000000000 0 1 0 at",  # 19 digits
        "0000000000000000000 0 1 0 at",  # 19 zeros
        "-1000000000000000000 0 1 0 at",  # minus and 19 digits
        "0 0 1 ０ at",  # fullwidth digit
        "0 0 1 ٠ at",  # Arabic-indic digit: int() would accept it, SPEC does not
        "0 0 1_0 0 at",  # int() accepts underscores, SPEC does not
        "a b c d at",
    ],
)
def test_malformed(line: str) -> None:
    assert only(line)["reason"] == "malformed"


@pytest.mark.parametrize(
    "data",
    [
        b"0 0 1 0\x0bat",  # vertical tab is not a separator -> 4 fields
        b"0 0 1 0\x0cat",  # form feed
        b"0 0 1 0\x00at",  # NUL
        b"0 0 1 0\rat",  # a \r not at the end of the line
        b"0 0 1\xc2\xa00 at",  # NO-BREAK SPACE
        b"0\xe3\x80\x800 1 0 at",  # IDEOGRAPHIC SPACE
        b"\xff\xfe0 0 1 0 at",  # not UTF-8 at all
    ],
)
def test_only_spaces_and_tabs_separate(data: bytes) -> None:
    assert only(data)["reason"] == "malformed"


@pytest.mark.parametrize(
    "data",
    [
        b"0 0 1 0 AT",  # upper case is refused, not folded
        b"0 0 1 0 At",
        b"0 0 1 0 a1",
        b"0 0 1 0 a-",
        "0 0 1 0 aé".encode(),  # accents
        b"0 0 1 0 a\xff",
        b"0 0 1 0 at\x00",
        b"0 0 1 0 at\x0c",
        b"0 0 1 0 at\r\r",  # only one \r is dropped; the other stays in the word
    ],
)
def test_bad_letters(data: bytes) -> None:
    assert only(data)["reason"] == "bad_letters"


def test_too_short() -> None:
    assert only("0 0 0 0 a")["reason"] == "too_short"
    # a 2-letter word on one cell is too_short, not length_mismatch
    assert only("0 0 0 0 at")["reason"] == "too_short"


@pytest.mark.parametrize(
    "line",
    [
        "1 0 0 0 at",  # left
        "0 1 0 0 at",  # up
        "0 0 1 1 at",  # diagonal down-right
        "0 0 -1 1 at",  # diagonal down-left
        "1 0 0 0 a",  # left, wrong length too: direction is checked first
    ],
)
def test_bad_direction(line: str) -> None:
    assert only(line)["reason"] == "bad_direction"


def test_length_mismatch() -> None:
    assert only("0 0 2 0 at")["reason"] == "length_mismatch"
    assert only("0 0 0 1 cat")["reason"] == "length_mismatch"
    # a word longer than its cells
    assert only("0 0 1 0 a")["reason"] == "length_mismatch"


def test_not_in_dictionary() -> None:
    assert only("0 0 1 0 qq")["reason"] == "not_in_dictionary"


def test_dictionary_match_is_exact() -> None:
    # "ca" is a prefix of words in the lexicon but is not a word itself
    assert only("0 0 1 0 ca")["reason"] == "not_in_dictionary"


def test_must_cover_origin() -> None:
    assert only("1 0 2 0 at")["reason"] == "must_cover_origin"
    assert only("0 1 0 2 at")["reason"] == "must_cover_origin"
    # adjacent to the origin is not covering it
    assert only("-2 0 -1 0 at")["reason"] == "must_cover_origin"


def test_later_words_need_not_cover_origin() -> None:
    # cat at (0..2,0); "at" at (3,0)..(4,0) touches t(2,0) -> 3
    assert reasons("0 0 2 0 cat\n3 0 4 0 at") == ["ok", "ok"]


def test_not_connected() -> None:
    assert reasons("0 0 2 0 cat\n5 5 6 5 at") == ["ok", "not_connected"]


def test_corner_touch_is_not_connected() -> None:
    # (3,1) only touches (2,0) diagonally
    assert reasons("0 0 2 0 cat\n3 1 4 1 at") == ["ok", "not_connected"]
    # a gap of one cell is not connected either
    assert reasons("0 0 2 0 cat\n4 0 5 0 at") == ["ok", "not_connected"]


def test_edge_touch_from_below_is_connected() -> None:
    # at along y=1 from (-1,1) to (0,1); (0,1) is right below c(0,0), (-1,1) touches nothing.
    # a(-1,1) row1 col1 W2, letter 1; t(0,1) row1 col0 plain 2 -> (1 + 2) * 2 = 6
    assert verdicts("0 0 2 0 cat\n-1 1 0 1 at") == [(1, True, 9), (2, True, 6)]


def test_conflict() -> None:
    # "at" over (0,0)..(1,0) where c, a lie: c != a
    assert reasons("0 0 2 0 cat\n0 0 1 0 at") == ["ok", "conflict"]


def test_no_new_tiles() -> None:
    # "at" exactly over the a, t of cat
    assert reasons("0 0 2 0 cat\n1 0 2 0 at") == ["ok", "no_new_tiles"]
    # the same word again on the same cells
    assert reasons("0 0 2 0 cat\n0 0 2 0 cat") == ["ok", "no_new_tiles"]


def test_bag_runs_out_of_j() -> None:
    # "jo" on rows y = 0..16, each touching the row above; the bag has 16 j.
    lines = [f"0 {y} 1 {y} jo" for y in range(17)]
    # afterwards a word without j still works: "at" right of row 0, touching o(1,0):
    # a(2,0) L2 1*2=2; t(3,0) plain 2 -> 4
    lines.append("2 0 3 0 at")
    result = judge("\n".join(lines))
    oks = [v["ok"] for v in result["lines"]]
    assert oks == [True] * 16 + [False, True]
    assert result["lines"][16] == {"line": 17, "ok": False, "reason": "bag_empty"}
    assert result["lines"][17]["score"] == 4
    assert result["bag_left"]["j"] == 0
    assert result["bag_left"]["o"] == 720 - 16
    assert (result["legal"], result["illegal"]) == (17, 1)


def test_bag_counts_per_letter_within_a_move() -> None:
    # after 15 "jo", one j is left: "jojo" needs two new j -> bag_empty; "jo" still fits
    lines = [f"0 {y} 1 {y} jo" for y in range(15)]
    lines.append("0 15 3 15 jojo")
    lines.append("0 15 1 15 jo")
    result = judge("\n".join(lines))
    assert [v["ok"] for v in result["lines"][15:]] == [False, True]
    assert result["lines"][15]["reason"] == "bag_empty"
    assert result["bag_left"]["j"] == 0


def test_bag_counts_only_new_tiles() -> None:
    # 16 j used up on rows 0..15 (cells (0,y)); "jo" down from (0,15) reuses the j at
    # (0,15) and places a new o at (0,16): no j needed, so legal.
    lines = [f"0 {y} 1 {y} jo" for y in range(16)]
    lines.append("0 15 0 16 jo")
    result = judge("\n".join(lines))
    assert result["lines"][16]["ok"] is True
    assert result["lines"][16]["tiles"] == 1
    # j(0,15) reused plain 9; o(0,16): row1 col0 plain 2 -> 11
    assert result["lines"][16]["score"] == 11


# ---------------------------------------------------------------------------
# Precedence between codes (the first failing check wins)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("+1 0 2 0 CAT", "malformed"),  # 1 before 2
        ("0 0 0 0 A", "bad_letters"),  # 2 before 3
        ("2 0 0 0 AB", "bad_letters"),  # 2 before 4
        ("0 0 0 0 qqq", "too_short"),  # 3 before 5, 6
        ("2 0 0 0 zz", "bad_direction"),  # 4 before 5, 6
        ("0 0 2 0 zz", "length_mismatch"),  # 5 before 6
        ("5 5 6 5 qq", "not_in_dictionary"),  # 6 before 7
    ],
)
def test_precedence_single_line(text: str, expected: str) -> None:
    assert only(text)["reason"] == expected


def test_not_in_dictionary_before_not_connected() -> None:
    assert reasons("0 0 2 0 cat\n5 5 6 5 qq") == ["ok", "not_in_dictionary"]


def test_not_connected_before_bag_empty() -> None:
    lines = [f"0 {y} 1 {y} jo" for y in range(16)]
    lines.append("9 0 10 0 jo")
    assert reasons("\n".join(lines))[-1] == "not_connected"


def test_conflict_before_no_new_tiles() -> None:
    # "ta" over (1,0)..(2,0) holding a, t: both cells taken, both wrong
    assert reasons("0 0 2 0 cat\n1 0 2 0 ta") == ["ok", "conflict"]


def test_conflict_before_bag_empty() -> None:
    # j used up; row 0 holds j(0,0), o(1,0). "jo" at (1,0)..(2,0) puts j on the o at (1,0):
    # conflict (check 9) is reported, not bag_empty (check 11)
    lines = [f"0 {y} 1 {y} jo" for y in range(16)]
    lines.append("1 0 2 0 jo")
    assert reasons("\n".join(lines))[-1] == "conflict"


# ---------------------------------------------------------------------------
# The first-word rule
# ---------------------------------------------------------------------------


def test_illegal_first_line_does_not_use_up_first_word_rule() -> None:
    text = "0 0 1 0 qq\n1 0 2 0 at\n0 0 1 0 at\n5 5 6 5 at\n"
    assert verdicts(text) == [
        (1, False, "not_in_dictionary"),
        (2, False, "must_cover_origin"),  # board still empty
        (3, True, 3),  # a(0,0) 1 + t(1,0) 2
        (4, False, "not_connected"),  # now the board is not empty
    ]


def test_illegal_moves_change_nothing() -> None:
    text = "0 0 2 0 cat\n0 0 1 0 at\n1 0 1 1 at\n"
    result = judge(text)
    assert [v["ok"] for v in result["lines"]] == [True, False, True]
    assert result["total"] == 9 + 6
    assert result["bag_left"]["a"] == 846 - 1
    assert result["bag_left"]["t"] == 661 - 2


# ---------------------------------------------------------------------------
# Bytes, lines, fields
# ---------------------------------------------------------------------------


def test_crlf_judges_like_lf() -> None:
    lf = b"0 0 2 0 cat\n\n1 0 1 1 at\n5 5 6 5 at\n"
    crlf = lf.replace(b"\n", b"\r\n")
    assert judge(crlf) == judge(lf)
    assert reasons(crlf) == ["ok", "ok", "not_connected"]


def test_final_line_without_newline_and_with_lone_cr() -> None:
    assert verdicts(b"0 0 2 0 cat\n1 0 1 1 at") == [(1, True, 9), (2, True, 6)]
    assert verdicts(b"0 0 2 0 cat\r\n1 0 1 1 at\r") == [(1, True, 9), (2, True, 6)]


def test_lone_cr_is_not_a_line_break() -> None:
    # one physical line "0 0 2 0 cat\r1 0 1 1 at": 9 fields -> malformed
    assert verdicts(b"0 0 2 0 cat\r1 0 1 1 at\n") == [(1, False, "malformed")]


def test_bom_at_start_is_ignored() -> None:
    assert verdicts(b"\xef\xbb\xbf0 0 2 0 cat\r\n") == [(1, True, 9)]
    assert judge(b"\xef\xbb\xbf") == judge(b"")


def test_bom_elsewhere_is_data() -> None:
    # a second BOM, or a BOM on line 2, is part of the first field -> malformed
    assert verdicts(b"\xef\xbb\xbf\xef\xbb\xbf0 0 2 0 cat") == [(1, False, "malformed")]
    assert verdicts(b"0 0 2 0 cat\n\xef\xbb\xbf1 0 1 1 at") == [
        (1, True, 9),
        (2, False, "malformed"),
    ]
    # a BOM line of its own on line 2 is not blank
    assert reasons(b"0 0 2 0 cat\n\xef\xbb\xbf\n") == ["ok", "malformed"]
    # a BOM not at the very start (after a space) is data
    assert reasons(b" \xef\xbb\xbf0 0 2 0 cat") == ["malformed"]


def test_tabs_and_runs_of_separators() -> None:
    assert verdicts(b"\t 0\t\t0  \t 2\t0 cat \t") == [(1, True, 9)]


def test_blank_lines_get_no_verdict_but_count() -> None:
    text = b"\n   \n\t\n \t \r\n\r\n0 0 2 0 cat\n\n1 0 1 1 at\n\n"
    assert verdicts(text) == [(6, True, 9), (8, True, 6)]
    result = judge(text)
    assert (result["legal"], result["illegal"]) == (2, 0)


def test_empty_input() -> None:
    result = judge(b"")
    assert result == {
        "total": 0,
        "legal": 0,
        "illegal": 0,
        "lines": [],
        "bag_left": dict(BAG_COUNTS),
    }
    assert sorted(result["bag_left"]) == [chr(c) for c in range(ord("a"), ord("z") + 1)]


def test_whitespace_other_than_space_tab_is_not_blank() -> None:
    # \x0b, \x0c, NUL, a \r not at the end: each line is a move, and malformed
    text = b"\x0b\n\x0c\n\x00\n\r \n\r\r\n"
    assert verdicts(text) == [(n, False, "malformed") for n in range(1, 6)]


def test_minus_zero_and_leading_zeros() -> None:
    # -0 is 0: covers the origin. a(0,0) 1 + t(1,0) 2 -> 3
    assert verdicts("-0 -0 1 -0 at") == [(1, True, 3)]
    # 007 is 7: parses fine, then fails the origin rule
    assert verdicts("007 0 008 0 at") == [(1, False, "must_cover_origin")]
    # 000 is 0
    assert verdicts("-1 0 000 0 at") == [(1, True, 3)]  # a(-1,0) 1 + t(0,0) 2


def test_eighteen_digits_are_fine() -> None:
    big = "999999999999999999"
    assert verdicts(f"999999999999999998 0 {big} 0 at") == [(1, False, "must_cover_origin")]
    assert verdicts(f"-{big} 0 -999999999999999998 0 at") == [(1, False, "must_cover_origin")]
    assert verdicts(f"0 0 {big} 0 at") == [(1, False, "length_mismatch")]
    assert verdicts("000000000000000000 0 000000000000000001 0 at") == [(1, True, 3)]


def test_bonus_squares_repeat_every_five() -> None:
    # line 1: cab down (0,-1)..(0,1) -> 10
    # line 2: at (1,1)..(2,1), touching b(0,1): a(1,1) W2 letter 1; t(2,1) plain 2 -> 6
    # line 3: cast (3,1)..(6,1), touching t(2,1):
    #   c(3,1) row1 col3 plain 4; a(4,1) row1 col4 L3 1*3=3; s(5,1) row1 col0 plain 2;
    #   t(6,1) row1 col1 (6 mod 5) W2, letter 2  -> (4 + 3 + 2 + 2) * 2 = 22
    assert verdicts("0 -1 0 1 cab\n1 1 2 1 at\n3 1 6 1 cast") == [
        (1, True, 10),
        (2, True, 6),
        (3, True, 22),
    ]


def test_report_counts_are_consistent() -> None:
    text = "0 0 2 0 cat\nbad\n1 0 1 1 at\n0 0 0 0 a\n"
    result = judge(text)
    assert result["legal"] == 2
    assert result["illegal"] == 2
    assert result["total"] == 15
    assert [v["line"] for v in result["lines"]] == [1, 2, 3, 4]


def test_bytearray_input_accepted() -> None:
    assert plain_judge(bytearray(b"0 0 2 0 cat"), WORDS)["total"] == 9


def test_random_bytes_never_raise() -> None:
    rng = random.Random(20240824)
    alphabet = b"0123456789- \t\r\n\x0b\x0c\x00abcjotzAB\xef\xbb\xbf\xff+"
    for _ in range(2000):
        length = rng.randrange(0, 80)
        data = bytes(rng.choice(alphabet) for _ in range(length))
        if rng.random() < 0.3:
            data = b"\xef\xbb\xbf" + data
        result = plain_judge(data, WORDS)
        assert result["legal"] + result["illegal"] == len(result["lines"])
        assert result["total"] == sum(v["score"] for v in result["lines"] if v["ok"])
        assert all(count >= 0 for count in result["bag_left"].values())


def test_random_well_formed_moves_never_raise() -> None:
    rng = random.Random(7)
    words = sorted(WORDS)
    for _ in range(200):
        lines = []
        for _ in range(rng.randrange(1, 40)):
            word = rng.choice(words)
            x, y = rng.randrange(-4, 5), rng.randrange(-4, 5)
            if rng.random() < 0.5:
                lines.append(f"{x} {y} {x + len(word) - 1} {y} {word}")
            else:
                lines.append(f"{x} {y} {x} {y + len(word) - 1} {word}")
        result = plain_judge("\n".join(lines).encode(), WORDS)
        used = sum(BAG_COUNTS.values()) - sum(result["bag_left"].values())
        assert used == sum(v["tiles"] for v in result["lines"] if v["ok"])
