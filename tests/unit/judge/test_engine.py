"""Worked examples for every SPEC rule, run against both builds of the engine."""

from __future__ import annotations

import pytest

from devstack.testing.wordytaire_engines import JudgeFn
from judge import Lexicon
from judge.wordytaire import Layout, Reason


def verdicts(engine: JudgeFn, text: str | bytes, lexicon: Lexicon, layout: Layout) -> list:
    data = text.encode() if isinstance(text, str) else text
    return [
        (v.line, v.reason.value if v.reason else v.score)
        for v in engine(data, lexicon, layout).verdicts
    ]


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("0 0 2 0", Reason.MALFORMED),
        ("0 0 2 0 cat extra", Reason.MALFORMED),
        ("+1 0 2 0 cat", Reason.MALFORMED),
        ("0 0 1e3 0 cat", Reason.MALFORMED),
        ("0x0 0 2 0 cat", Reason.MALFORMED),
        ("1234567890123456789 0 2 0 cat", Reason.MALFORMED),
        ("0 0 2 0\x0bcat", Reason.MALFORMED),
        ("0 0 2 0 Cat", Reason.BAD_LETTERS),
        ("0 0 2 0 café", Reason.BAD_LETTERS),
        ("0 0 2 0 c4t", Reason.BAD_LETTERS),
        ("0 0 2 0 cat\x0c", Reason.BAD_LETTERS),
        ("1 1 1 1 cat", Reason.TOO_SHORT),
        ("2 0 0 0 cat", Reason.BAD_DIRECTION),
        ("0 2 0 0 cat", Reason.BAD_DIRECTION),
        ("0 0 2 2 cat", Reason.BAD_DIRECTION),
        ("0 0 3 0 cat", Reason.LENGTH_MISMATCH),
        ("0 0 2 0 cay", Reason.NOT_IN_DICTIONARY),
        ("1 0 3 0 cat", Reason.MUST_COVER_ORIGIN),
    ],
)
def test_a_bad_first_line_gets_its_reason(engine: JudgeFn, tiny, layout, line, reason) -> None:
    (verdict,) = engine(line.encode(), tiny, layout).verdicts
    assert verdict.reason is reason
    assert verdict.detail


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("5 5 7 5 cat", Reason.NOT_CONNECTED),
        ("3 1 5 1 cat", Reason.NOT_CONNECTED),  # diagonal to (2, 0) only: corners do not count
        ("0 0 0 2 ate", Reason.CONFLICT),
        ("0 0 2 0 cat", Reason.NO_NEW_TILES),
        ("1 0 2 0 at", Reason.NO_NEW_TILES),
    ],
)
def test_board_checks_after_a_first_word(engine: JudgeFn, tiny, layout, line, reason) -> None:
    report = engine(f"0 0 2 0 cat\n{line}".encode(), tiny, layout)
    assert report.verdicts[1].reason is reason


def test_an_adjacent_word_connects_edge_to_edge(engine: JudgeFn, tiny, layout) -> None:
    report = engine(b"0 0 2 0 cat\n3 0 4 0 at\n0 1 1 1 at\n", tiny, layout)
    assert all(v.ok for v in report.verdicts)


def test_the_earliest_failing_check_is_reported(engine: JudgeFn, tiny, layout) -> None:
    text = "0 0 2 0 cat\n9 9 11 9 cay\n9 9 12 9 cat\n2 2 0 0 caty\n1 1 1 1 CAT\n1 1 1 CAT"
    assert verdicts(engine, text, tiny, layout) == [
        (1, 4 + 1 + 2 * 2),  # t on the L2 at (2, 0)
        (2, "not_in_dictionary"),  # also not connected
        (3, "length_mismatch"),  # also not connected, not a word
        (4, "bad_direction"),  # also the wrong length, not a word
        (5, "bad_letters"),  # also too short
        (6, "malformed"),  # also bad letters
    ]


def test_conflict_is_reported_before_no_new_tiles_and_bag(engine: JudgeFn, tiny, layout) -> None:
    report = engine(b"0 0 2 0 cat\n0 0 2 0 cab\n", tiny, layout)
    assert report.verdicts[1].reason is Reason.CONFLICT
    assert "(2, 0) already holds 't'" in report.verdicts[1].detail


def test_an_illegal_first_line_does_not_use_up_the_first_word_rule(engine, tiny, layout) -> None:
    text = "5 5 7 5 cat\n0 0 2 0 cay\n1 0 3 0 cat\n-1 0 1 0 cat"
    assert verdicts(engine, text, tiny, layout) == [
        (1, "must_cover_origin"),
        (2, "not_in_dictionary"),
        (3, "must_cover_origin"),
        (4, 7),
    ]


def test_a_first_word_may_end_on_the_origin(engine: JudgeFn, tiny, layout) -> None:
    assert verdicts(engine, "0 -2 0 0 cat", tiny, layout) == [(1, 4 + 1 + 2)]  # column 0: plain


# SPEC layout, rows |y| mod 5, columns |x| mod 5:
#   row 0: . . L2 . .   row 1: . W2 . . L3   row 2: . . L2 . .   row 3: . . . W3 .   row 4: plain
def test_a_letter_on_l2_counts_double(engine: JudgeFn, tiny, layout) -> None:
    assert verdicts(engine, "0 0 2 0 cab", tiny, layout) == [(1, 4 + 1 + 5 * 2)]


def test_a_letter_on_l3_counts_triple(engine: JudgeFn, tiny, layout) -> None:
    # cat across row 0, then "to" down from t at (2,0)... use tab down from (4,-1): L3 at (4,1)
    text = "0 0 2 0 cat\n3 0 4 0 at\n4 -1 4 1 bat"
    # bat down x=4: b (4,-1) L3 -> 15, a (4,0) plain new? (4,0) holds t: conflict -> use "oat"
    assert verdicts(engine, text, tiny, layout)[2] == (3, "conflict")
    text = "0 0 2 0 cat\n3 0 4 0 at\n4 -1 4 0 at"
    # a on (4,-1): row 1 col 4 = L3 -> 3; t reused plain 2
    assert verdicts(engine, text, tiny, layout)[2] == (3, 1 * 3 + 2)


def test_two_word_bonuses_multiply(engine: JudgeFn, tiny, layout) -> None:
    # at across (0,0)-(1,0); ate down x=1 from y=-1: a on (1,-1) W2, t reused, e on (1,1) W2
    text = "0 0 1 0 at\n1 -1 1 1 ate"
    assert verdicts(engine, text, tiny, layout) == [(1, 3), (2, (1 + 2 + 1) * 2 * 2)]


def test_a_word_bonus_triples_the_whole_word(engine: JudgeFn, tiny, layout) -> None:
    # cat down x=3 from y=0 touches nothing; build: cat (0,0)-(2,0), at (3,0)-(4,0), then
    # "to" down from t at (4,0)? t is at (4,0)? at = a(3,0) t(4,0). to: t(4,0) o(4,1) L3.
    # For W3 at (3,3): "oat" down x=3 from y=1: o (3,1) ., a (3,2) ., t (3,3) W3, touching a(3,0).
    text = "0 0 2 0 cat\n3 0 4 0 at\n3 1 3 3 oat"
    assert verdicts(engine, text, tiny, layout)[2] == (3, (2 + 1 + 2) * 3)


def test_a_reused_tile_counts_plain_and_gives_no_bonus(engine: JudgeFn, tiny, layout) -> None:
    # b placed on (2,0) L2 scores 10; reused by "by" down from (2,0) it scores its plain 5.
    text = "0 0 2 0 cab\n2 0 2 1 by"
    assert verdicts(engine, text, tiny, layout) == [(1, 15), (2, 5 + 5)]
    # W2 at (1,1) spent by "ate"; reusing its e gives no word bonus again
    text = "0 0 1 0 at\n1 -1 1 1 ate\n0 1 1 1 be"
    report = engine(text.encode(), Lexicon.from_words({"at", "ate", "be"}), layout)
    assert report.verdicts[2].score == 5 * 1 + 1  # b on (0,1) plain, e reused


def test_the_bag_runs_out_of_a_letter(engine: JudgeFn, tiny, layout) -> None:
    # 16 j in the bag: seventeen stacked "jo" each need a new j
    lines = [f"0 {y} 1 {y} jo" for y in range(17)] + ["0 16 1 16 to"]
    report = engine("\n".join(lines).encode(), tiny, layout)
    assert [v.ok for v in report.verdicts] == [True] * 16 + [False, True]
    assert report.verdicts[16].reason is Reason.BAG_EMPTY
    assert report.verdicts[16].detail == "needs 1 'j' but the bag has none left"
    assert report.bag_left["j"] == 0
    assert report.bag_left["o"] == 720 - 16 - 1


def test_a_custom_layout_changes_bonuses_and_bag(engine: JudgeFn, tiny, layout) -> None:
    doc = {
        "period": 1,
        "bonus": [["W2"]],
        "letters": {c: [1, 1] for c in "abcdefghijklmnopqrstuvwxyz"},
    }
    custom = Layout.from_mapping(doc)
    report = engine(b"0 0 2 0 cat\n0 0 0 1 ca\n3 0 4 0 at", tiny, custom)
    assert [v.reason or v.score for v in report.verdicts] == [
        3 * 8,
        Reason.NOT_IN_DICTIONARY,
        Reason.BAG_EMPTY,
    ]
    assert report.layout == custom.id != layout.id


def test_crlf_bom_tabs_and_blank_lines(engine: JudgeFn, tiny, layout) -> None:
    text = b"\xef\xbb\xbf-1 0 1 0 cat\r\n\r\n \t \n0\t0\t0 \t1  at \t\r\n\n"
    assert verdicts(engine, text, tiny, layout) == [(1, 7), (4, 3)]


def test_only_one_cr_is_dropped_and_a_lone_cr_is_not_a_line_break(engine, tiny, layout) -> None:
    text = b"-1 0 1 0 cat\r\r\n0 0 0 1 at\rx\n\r\n\r \n-1 0 1 0 cat\r"
    assert verdicts(engine, text, tiny, layout) == [
        (1, "bad_letters"),
        (2, "bad_letters"),
        (4, "malformed"),
        (5, 7),
    ]


def test_a_bom_after_the_start_is_data(engine: JudgeFn, tiny, layout) -> None:
    text = b"-1 0 1 0 cat\n\xef\xbb\xbf0 0 0 1 at"
    assert verdicts(engine, text, tiny, layout) == [(1, 7), (2, "malformed")]


def test_zero_padded_and_negative_zero_coordinates(engine: JudgeFn, tiny, layout) -> None:
    text = "-001 -0 001 0 cat\n000000000000000000 0 0 1 at\n-999999999999999999 5 -999999999999999998 5 at"
    assert verdicts(engine, text, tiny, layout) == [(1, 7), (2, 3), (3, "not_connected")]


def test_nineteen_digits_are_malformed(engine: JudgeFn, tiny, layout) -> None:
    assert verdicts(engine, "0 0 1000000000000000000 0 at", tiny, layout) == [(1, "malformed")]


def test_non_utf8_and_nul_bytes_are_judged_not_raised(engine: JudgeFn, tiny, layout) -> None:
    text = b"\xff\xfe\x00\n0 0 1 0 \xe9t\n0 0 1\x00 0 at\n-1 0 1 0 cat\x00"
    assert verdicts(engine, text, tiny, layout) == [
        (1, "malformed"),
        (2, "bad_letters"),
        (3, "malformed"),
        (4, "bad_letters"),
    ]


def test_a_ten_megabyte_line_is_one_verdict(engine: JudgeFn, tiny, layout) -> None:
    long_word = b"0 0 1 0 " + b"a" * 10_000_000
    garbage = b"x" * 10_000_000
    report = engine(long_word + b"\n" + garbage + b"\n-1 0 1 0 cat", tiny, layout)
    assert [v.reason or v.score for v in report.verdicts] == [
        Reason.LENGTH_MISMATCH,
        Reason.MALFORMED,
        7,
    ]
    huge = b"0 0 9999999 0 " + b"a" * 10_000_000
    assert engine(huge, tiny, layout).verdicts[0].reason is Reason.NOT_IN_DICTIONARY


def test_empty_and_blank_submissions_have_no_verdicts(engine: JudgeFn, tiny, layout) -> None:
    for text in (b"", b"\n", b"\xef\xbb\xbf", b" \t\n\r\n\t"):
        report = engine(text, tiny, layout)
        assert report.verdicts == () and report.total == 0


def test_report_json_has_spec_keys(engine: JudgeFn, tiny, layout) -> None:
    doc = engine(b"-1 0 1 0 cat\n1 1 1 1 at", tiny, layout).to_json()
    assert doc["total"] == 7 and doc["legal"] == 1 and doc["illegal"] == 1
    assert doc["lexicon"] == tiny.id and doc["layout"] == layout.id
    assert doc["lines"][0] == {"line": 1, "ok": True, "score": 7, "tiles": 3}
    assert doc["lines"][1]["ok"] is False and doc["lines"][1]["reason"] == "too_short"
    assert doc["reasons"] == {"too_short": 1}
    assert doc["words"] == ["cat"]


def test_words_are_those_looked_up_in_the_lexicon(engine: JudgeFn, tiny, layout) -> None:
    report = engine(b"-1 0 1 0 cat\n9 9 10 9 xq\n0 0 5 0 oat\n1 1 1 1 at\nfoo", tiny, layout)
    assert report.words == {"cat", "xq"}
