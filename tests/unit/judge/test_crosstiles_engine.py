"""Hand-made Crosstiles logs for every rule of CROSSTILES.md, on both builds of the verifier.

Every log here uses the seed "demo", whose bag deals ann SDWRT?E, bob EAGNORR and a third
player SFETSKY (tests/unit/judge/test_crosstiles_bag.py checks that order independently).
The scores in the comments are worked out by hand from the spec's premium table.
"""

from __future__ import annotations

import pytest

from judge import Lexicon
from judge.crosstiles import Board, CrosstilesReport, Reason, generate
from tests.crosstiles_verifiers import VerifyFn

HEADER = ["#crosstiles 1", "#seed demo", "#player1 ann Ann Example", "#player2 bob"]
HEADER3 = ["#crosstiles 1", "#seed demo", "#player1 ann", "#player2 bob", "#player3 cy"]
# 8D-8J: S on DL 2, T R E 3, W on the DW 4, a blank 0, D 2 = 11, doubled 22, +50 for all seven.
ANN_STREWED = ">ann: SDWRT?E 8D STREWeD +72 72"
# G4-G8 down through the E of STREWED: R A N 3, G on the DL 7G 4, E 1 (spent) = 8.
BOB_RANGE = ">bob: EAGNORR G4 RANG. +8 8"
# 9G-9I: S on DL 2, E 1, T on DL 2 = 5; RANGES 6 + 2 = 8; WE 4 + 1 = 5 (8H's DW is spent);
# ET: the blank 0 + T 2 = 2. 5 + 8 + 5 + 2 = 20.
ANN_SET = ">ann: SFETSKY 9G SET +20 92"
SIX_PASSES = [">ann: SDWRT?E - +0 0", ">bob: EAGNORR - +0 0"] * 3
# Rack values: S1 D2 W4 R1 T1 ?0 E1 = 10; E1 A1 G2 N1 O1 R1 R1 = 8.
PENALTIES = [">ann: SDWRT?E (SDWRT?E) -10 -10", ">bob: EAGNORR (EAGNORR) -8 -8"]


def text(*lines: str, header: list[str] = HEADER) -> bytes:
    return "".join(line + "\n" for line in [*header, *lines]).encode()


def failure(report: CrosstilesReport) -> tuple[int, str] | None:
    return None if report.error is None else (report.error.line, report.error.reason.value)


# -- a whole game -----------------------------------------------------------------------


def test_six_scoreless_turns_end_the_game_and_every_rack_pays(verifier, lexicon, board) -> None:
    report = verifier(text(*SIX_PASSES, *PENALTIES), lexicon, board)
    assert report.valid and report.error is None
    assert [(p.nick, p.score, p.removed) for p in report.players] == [
        ("ann", -10, False),
        ("bob", -8, False),
    ]
    assert report.winners == ("bob",)
    assert report.turns == 8
    assert report.words == ()
    assert report.lexicon == lexicon.id and report.board == board.id


def test_the_report_has_exactly_the_spec_fields(verifier, lexicon, board) -> None:
    report = verifier(text(ANN_STREWED, ">bob: EAGNORR G4 RANG. +9 9"), lexicon, board)
    assert report.to_json() == {
        "valid": False,
        "error": {"line": 6, "reason": "score_mismatch", "detail": report.error.detail},
        "players": [
            {"nick": "ann", "score": 72, "removed": False},
            {"nick": "bob", "score": 0, "removed": False},
        ],
        "winners": [],
        "turns": 2,
        "lexicon": lexicon.id,
        "board": board.id,
        "words": ["range", "strewed"],
    }
    assert "8" in report.error.detail


def test_premiums_blanks_and_the_full_rack_bonus_score_as_worked_out(verifier, lexicon, board):
    report = verifier(text(ANN_STREWED, BOB_RANGE, ANN_SET), lexicon, board)
    assert failure(report) == (8, "unfinished")
    assert [p.score for p in report.players] == [92, 8]
    assert report.words == ("et", "range", "ranges", "set", "strewed", "we")


@pytest.mark.parametrize(
    ("line", "score"),
    [
        (">ann: SDWRT?E 8D STREWeD +71 71", 72),  # the bonus is added after doubling
        (">ann: SDWRT?E 8D STREWeD +22 22", 72),  # and is not forgotten
        (">ann: SDWRT?E 8H STREWeD +72 72", 78),  # 8H-8N: S on the DW, W on DL 8L: 14 x 2 + 50
    ],
)
def test_a_wrong_score_is_a_score_mismatch(verifier, lexicon, board, line, score) -> None:
    report = verifier(text(line), lexicon, board)
    assert failure(report) == (5, "score_mismatch")
    assert str(score) in report.error.detail


def test_premium_squares_count_only_when_first_covered(verifier, lexicon, board) -> None:
    # SET scores 20 with WE worth 5: W sits on 8H's DW, spent since STREWED covered it.
    wrong = ">ann: SFETSKY 9G SET +25 97"
    report = verifier(text(ANN_STREWED, BOB_RANGE, wrong), lexicon, board)
    assert failure(report) == (7, "score_mismatch")


def test_the_leading_zeros_of_numbers_and_positions_are_read_by_value(verifier, lexicon, board):
    report = verifier(text(">ann: SDWRT?E 08D STREWeD +072 000000072"), lexicon, board)
    assert failure(report) == (6, "unfinished")
    assert report.players[0].score == 72


# -- every reason code, with its line -----------------------------------------------------

REASONS = [
    # malformed: the form of a move line
    ([">ann SDWRT?E 8D STREWeD +72 72"], 5, Reason.MALFORMED),
    ([">ann: SDWRT?E 8D STREWeD 72 72"], 5, Reason.MALFORMED),
    ([">ann: SDWRT?E 8D STREWeD +72"], 5, Reason.MALFORMED),
    ([">ann: SDWRT?E 8D STREWeD +72 72 extra"], 5, Reason.MALFORMED),
    ([">ann: SDWRT?E 8d STREWeD +72 72"], 5, Reason.MALFORMED),
    ([">ann: SDWRT?E 008D STREWeD +72 72"], 5, Reason.MALFORMED),
    ([">ann: SDWRT?E 8D8 STREWeD +72 72"], 5, Reason.MALFORMED),
    ([">ann: SDWRT?E 8D STRE-eD +72 72"], 5, Reason.MALFORMED),
    ([">ann: sdwrt?e 8D STREWeD +72 72"], 5, Reason.MALFORMED),
    ([">ann: SDWRT?E 8D STREWeD +0000000072 72"], 5, Reason.MALFORMED),
    ([">ann: SDWRT?E 8D STREWeD +72 +72"], 5, Reason.MALFORMED),
    ([">ann: SDWRT?E (timeout) -0 0"], 5, Reason.MALFORMED),
    ([">ann: SDWRT?E (SDWRT?E) +10 10"], 5, Reason.MALFORMED),
    ([">ann: (SDWRT?E) -10 -10"], 5, Reason.MALFORMED),
    ([">ann: SDWRT?E -sd +0 0"], 5, Reason.MALFORMED),
    ([">a.n: SDWRT?E - +0 0"], 5, Reason.MALFORMED),
    (["ann: SDWRT?E - +0 0"], 5, Reason.MALFORMED),
    ([">ann: SDWRT?E - +0 0", "#seed demo"], 6, Reason.MALFORMED),
    ([">ann: SDWRT?E\u00a0- +0 0"], 5, Reason.MALFORMED),
    # wrong_turn
    ([">bob: EAGNORR - +0 0"], 5, Reason.WRONG_TURN),
    ([">zed: EAGNORR - +0 0"], 5, Reason.WRONG_TURN),
    ([">ann: SDWRT?E (SDWRT?E) -10 -10"], 5, Reason.WRONG_TURN),
    ([">ann: SDWRT?E - +0 0", ">ann: SDWRT?E - +0 0"], 6, Reason.WRONG_TURN),
    # rack_mismatch
    ([">ann: SDWRTEE - +0 0"], 5, Reason.RACK_MISMATCH),
    ([">ann: SDWRT?EE - +0 0"], 5, Reason.RACK_MISMATCH),
    ([">ann: SDWRT? - +0 0"], 5, Reason.RACK_MISMATCH),
    ([">ann: EDWRT?S 8D STREWeD +72 72"], 6, Reason.UNFINISHED),  # any order is the rack
    # off_board
    ([">ann: SDWRT?E 8P STREWeD +72 72"], 5, Reason.OFF_BOARD),
    ([">ann: SDWRT?E 16H STREWeD +72 72"], 5, Reason.OFF_BOARD),
    ([">ann: SDWRT?E 0H STREWeD +72 72"], 5, Reason.OFF_BOARD),
    ([">ann: SDWRT?E Z8 STREWeD +72 72"], 5, Reason.OFF_BOARD),
    ([">ann: SDWRT?E 8J STREWeD +72 72"], 5, Reason.OFF_BOARD),  # J-P: one square too far
    ([">ann: SDWRT?E J10 STREWeD +72 72"], 5, Reason.OFF_BOARD),  # rows 10-16
    # occupied
    ([">ann: SDWRT?E 8D STRE.eD +72 72"], 5, Reason.OCCUPIED),
    ([ANN_STREWED, ">bob: EAGNORR G4 RANGE +8 8"], 6, Reason.OCCUPIED),
    # not_on_rack
    ([">ann: SDWRT?E 8D STREWED +72 72"], 5, Reason.NOT_ON_RACK),
    ([">ann: SDWRT?E 8H SwEaR +10 10"], 5, Reason.NOT_ON_RACK),  # one blank, two lower case
    ([">ann: SDWRT?E -SDQ +0 0"], 5, Reason.NOT_ON_RACK),
    ([">ann: SDWRT?E -SS +0 0"], 5, Reason.NOT_ON_RACK),
    # incomplete_word
    ([ANN_STREWED, ">bob: EAGNORR G4 RANG +7 7"], 6, Reason.INCOMPLETE_WORD),
    ([ANN_STREWED, ">bob: EAGNORR 8K GO +4 4"], 6, Reason.INCOMPLETE_WORD),
    # too_few_tiles
    ([">ann: SDWRT?E 8H S +2 2"], 5, Reason.TOO_FEW_TILES),
    ([ANN_STREWED, ">bob: EAGNORR 8D ....... +0 0"], 6, Reason.TOO_FEW_TILES),
    ([ANN_STREWED, ">bob: EAGNORR 9H A +2 2"], 6, Reason.TOO_FEW_TILES),
    # must_cover_center
    ([">ann: SDWRT?E 7D STREWeD +72 72"], 5, Reason.MUST_COVER_CENTER),
    ([">ann: SDWRT?E 8A STREWeD +72 72"], 5, Reason.MUST_COVER_CENTER),  # 8A-8G stops short
    # not_connected
    ([ANN_STREWED, ">bob: EAGNORR 2A ORANGE +20 20"], 6, Reason.NOT_CONNECTED),
    ([ANN_STREWED, ">bob: EAGNORR 7K GONER +7 7"], 6, Reason.NOT_CONNECTED),  # a corner only
    # not_in_dictionary
    ([">ann: SDWRT?E 8D WSTREeD +72 72"], 5, Reason.NOT_IN_DICTIONARY),
    ([ANN_STREWED, BOB_RANGE, ">ann: SFETSKY 9G SKY +20 92"], 7, Reason.NOT_IN_DICTIONARY),
    # score_mismatch (placements are tested above)
    ([">ann: SDWRT?E - +1 1"], 5, Reason.SCORE_MISMATCH),
    ([">ann: SDWRT?E (timeout) +1 1"], 5, Reason.SCORE_MISMATCH),
    ([">ann: SDWRT?E -SDW +2 2"], 5, Reason.SCORE_MISMATCH),
    # total_mismatch
    ([">ann: SDWRT?E 8D STREWeD +72 70"], 5, Reason.TOTAL_MISMATCH),
    ([">ann: SDWRT?E - +0 -0", ">bob: EAGNORR - +0 1"], 6, Reason.TOTAL_MISMATCH),
    ([*SIX_PASSES, ">ann: SDWRT?E (SDWRT?E) -10 10"], 11, Reason.TOTAL_MISMATCH),
    # end_mismatch
    ([*SIX_PASSES, ">ann: SDWRT?E - +0 0"], 11, Reason.END_MISMATCH),
    ([*SIX_PASSES, ">ann: SDWRT?E (SDWRT?E) -9 -9"], 11, Reason.END_MISMATCH),
    ([*SIX_PASSES, ">ann: SDWRT?E (SDWRTEE) -10 -10"], 11, Reason.END_MISMATCH),
    ([*SIX_PASSES, ">ann: SDWRTEE (SDWRT?E) -10 -10"], 11, Reason.END_MISMATCH),
    ([*SIX_PASSES, PENALTIES[1]], 11, Reason.END_MISMATCH),  # bob before ann
    ([*SIX_PASSES, ">ann: (EAGNORR) +8 8"], 11, Reason.END_MISMATCH),  # nobody went out
    ([*SIX_PASSES, PENALTIES[0], ">bob: (SDWRT?E) +10 10"], 12, Reason.END_MISMATCH),
    # after_end
    ([*SIX_PASSES, *PENALTIES, ">ann: SDWRT?E - +0 -10"], 13, Reason.AFTER_END),
    ([*SIX_PASSES, *PENALTIES, "#seed demo"], 13, Reason.AFTER_END),
    ([*SIX_PASSES, *PENALTIES, "junk"], 13, Reason.AFTER_END),
    # unfinished
    ([*SIX_PASSES[:5]], 10, Reason.UNFINISHED),
    ([*SIX_PASSES], 11, Reason.UNFINISHED),
    ([*SIX_PASSES, PENALTIES[0]], 12, Reason.UNFINISHED),
]


@pytest.mark.parametrize(("lines", "line", "reason"), REASONS)
def test_the_first_failing_check_names_its_line_and_reason(
    verifier: VerifyFn, lexicon: Lexicon, board: Board, lines: list[str], line: int, reason: Reason
) -> None:
    report = verifier(text(*lines), lexicon, board)
    assert failure(report) == (line, reason.value)
    assert report.error is not None and report.error.detail
    assert not report.valid and report.winners == ()


def test_every_reason_code_has_a_hand_made_example() -> None:
    elsewhere = {Reason.BAG_TOO_SMALL}  # needs a nearly empty bag: see the exchange tests
    assert {reason for _, _, reason in REASONS} | elsewhere == set(Reason)


def test_the_reason_codes_are_the_spec_table_in_check_order() -> None:
    assert [reason.value for reason in Reason] == [
        "malformed", "wrong_turn", "rack_mismatch", "off_board", "occupied", "not_on_rack",
        "incomplete_word", "too_few_tiles", "must_cover_center", "not_connected",
        "not_in_dictionary", "bag_too_small", "score_mismatch", "end_mismatch",
        "total_mismatch", "after_end", "unfinished",
    ]  # fmt: skip


def test_a_missing_word_is_named_and_every_word_of_the_move_is_reported(
    verifier, lexicon, board
) -> None:
    # SKY makes RANGES, then WK (missing) and EY (missing too, after the first).
    report = verifier(text(ANN_STREWED, BOB_RANGE, ">ann: SFETSKY 9G SKY +20 92"), lexicon, board)
    assert report.error is not None and "'wk'" in report.error.detail
    assert report.words == ("ey", "range", "ranges", "sky", "strewed", "wk")
    assert [p.score for p in report.players] == [72, 8]


def test_a_move_that_fails_before_the_dictionary_check_makes_no_words(verifier, lexicon, board):
    report = verifier(text(">ann: SDWRT?E 7D STREWeD +72 72"), lexicon, board)
    assert report.words == ()


# -- bytes, lines and ignored lines -----------------------------------------------------


def test_a_bom_crlf_notes_blanks_tabs_and_padding_change_nothing(verifier, lexicon, board):
    lines = [
        "#note a note before the header",
        "#crosstiles\t1",
        "  ",
        "#seed   demo  ",
        "#note \xff\xfe is not UTF-8 and is ignored all the same",
        "#player2 bob",
        "\t#player1 ann  Ann Example",
        "",
        *[line.replace(" ", " \t ") for line in SIX_PASSES],
        "   #note after the turns",
        *PENALTIES,
        "",
        "\t \t",
        "#note after the end",
    ]
    data = b"\xef\xbb\xbf" + "\r\n".join(lines).encode("latin-1")
    report = verifier(data, lexicon, board)
    assert report.valid
    assert report.turns == 8


def test_line_numbers_are_physical_counting_ignored_lines(verifier, lexicon, board) -> None:
    data = b"\xef\xbb\xbf" + text("", "#note x", ">bob: EAGNORR - +0 0").replace(b"\n", b"\r\n")
    assert failure(verifier(data, lexicon, board)) == (7, "wrong_turn")


def test_a_last_line_without_a_newline_counts_and_its_cr_is_dropped(verifier, lexicon, board):
    data = text(*SIX_PASSES, *PENALTIES)[:-1] + b"\r"
    assert verifier(data, lexicon, board).valid
    assert failure(verifier(text(*SIX_PASSES)[:-1], lexicon, board)) == (11, "unfinished")


def test_unfinished_is_reported_after_the_last_line_blank_or_not(verifier, lexicon, board) -> None:
    data = text(*SIX_PASSES, "", "#note x", "  ")
    assert failure(verifier(data, lexicon, board)) == (14, "unfinished")


@pytest.mark.parametrize(
    ("raw", "line", "reason"),
    [
        (b">bob: EAGNORR - +0 0\xff", 6, "malformed"),  # not UTF-8
        (b"\xef\xbb\xbf>bob: EAGNORR - +0 0", 6, "malformed"),  # a BOM not at the start
        (b">bob: EAGNORR - +0 0\r", 7, "unfinished"),  # one CR before the newline goes
        (b">bob: EAGNORR - +0 0\r\r", 6, "malformed"),  # only one
        (b">bob: EAGNORR - +0 0\x0b", 6, "malformed"),  # only spaces and tabs separate
        (b">bob: EAGNORR -\x0c+0 0", 6, "malformed"),
        (b"#NOTE this is no note", 6, "malformed"),
        (b"#notes are notes too", 7, "unfinished"),
        (b"#note\xff", 7, "unfinished"),
    ],
)
def test_a_line_s_bytes(verifier, lexicon, board, raw: bytes, line: int, reason: str) -> None:
    data = text(">ann: SDWRT?E - +0 0") + raw + b"\n"
    assert failure(verifier(data, lexicon, board)) == (line, reason)


def test_anything_after_the_end_lines_but_ignored_lines_is_after_end(verifier, lexicon, board):
    done = text(*SIX_PASSES, *PENALTIES)
    assert verifier(done + b"\n \t\n#note \xff\n", lexicon, board).valid
    report = verifier(done + b"\xff\xfe\n", lexicon, board)
    assert failure(report) == (13, "after_end")
    assert report.turns == 9
    assert [p.score for p in report.players] == [-10, -8]


# -- the header -------------------------------------------------------------------------

HEADERS = [
    (["#seed demo", "#crosstiles 1", "#player1 ann", "#player2 bob"], 1),
    (["#crosstiles 2", "#seed demo", "#player1 ann", "#player2 bob"], 1),
    (["#crosstiles 1 1", "#seed demo", "#player1 ann", "#player2 bob"], 1),
    (["#crosstiles", "#seed demo", "#player1 ann", "#player2 bob"], 1),
    (["#crosstiles 1", "#seed demo", "#seed demo", "#player1 ann", "#player2 bob"], 3),
    (["#crosstiles 1", "#crosstiles 1", "#seed demo", "#player1 ann", "#player2 bob"], 2),
    (["#crosstiles 1", "#seed demo", "#player1 ann", "#player2 bob", "#lexicon"], 5),
    (["#crosstiles 1", "#lexicon a", "#lexicon b", "#seed demo"], 3),
    (["#crosstiles 1", "#seed demo", "#player0 zed", "#player1 ann", "#player2 bob"], 3),
    (["#crosstiles 1", "#seed demo", "#player1 ann", "#player2 bob", "#player5 eve"], 5),
    (["#crosstiles 1", "#seed demo", "#player1 ann", "#player02 bob"], 4),
    (["#crosstiles 1", "#seed demo", "#player1 ann", "#player2 ann"], 4),
    (["#crosstiles 1", "#seed demo", "#player1 ann", "#player1 bob"], 4),
    (["#crosstiles 1", "#seed demo", "#player1 a.b", "#player2 bob"], 3),
    (["#crosstiles 1", "#seed demo", "#player1 " + "a" * 33, "#player2 bob"], 3),
    (["#crosstiles 1", "#seed two words", "#player1 ann", "#player2 bob"], 2),
    (["#crosstiles 1", "#seed " + "s" * 129, "#player1 ann", "#player2 bob"], 2),
    (["#crosstiles 1", "#seed d\u00e9mo", "#player1 ann", "#player2 bob"], 2),
    (["#crosstiles 1", "# demo", "#player1 ann", "#player2 bob"], 2),
    (["#crosstiles 1", "#seed demo", "#player1 ann", "#player2 bob", "#event \udcff"], 5),
    # missing parts: reported on the first move line
    (["#crosstiles 1", "#player1 ann", "#player2 bob"], 4),
    (["#crosstiles 1", "#seed demo", "#player1 ann"], 4),
    (["#crosstiles 1", "#seed demo", "#player1 ann", "#player3 cy"], 5),
    (["#crosstiles 1", "#seed demo", "#player2 bob", "#player3 cy"], 5),
    ([], 1),
]


@pytest.mark.parametrize(("header", "line"), HEADERS)
def test_a_bad_header_is_malformed_on_its_line(verifier, lexicon, board, header, line) -> None:
    data = "".join(f"{row}\n" for row in [*header, ">ann: SDWRT?E - +0 0"])
    report = verifier(data.encode("utf-8", "surrogateescape"), lexicon, board)
    assert failure(report) == (line, "malformed")
    assert report.players == () and report.turns == 0 and report.words == ()


@pytest.mark.parametrize(
    ("data", "line"),
    [(b"", 1), (b"\xef\xbb\xbf", 1), (b"\n\n", 3), (b"#crosstiles 1\n#seed demo\n", 3)],
)
def test_an_incomplete_header_without_a_move_line_is_malformed_past_its_end(
    verifier, lexicon, board, data, line
) -> None:
    report = verifier(data, lexicon, board)
    assert failure(report) == (line, "malformed")
    assert report.players == () and report.turns == 0


def test_a_complete_header_without_a_move_line_is_unfinished(verifier, lexicon, board) -> None:
    report = verifier(text("#note the game has not started"), lexicon, board)
    assert failure(report) == (6, "unfinished")
    assert [(p.nick, p.score) for p in report.players] == [("ann", 0), ("bob", 0)]
    assert report.turns == 0


def test_informational_pragmas_and_any_order_are_accepted(verifier, lexicon, board) -> None:
    header = [
        "#crosstiles 1",
        "#player2 bob Robert \u00c9douard Smith",
        "#lexicon CSW21",
        "#seed demo",
        "#players four of them",
        "#event Spring Open, round 3",
        "#player1 ann",
    ]
    report = verifier(text(*SIX_PASSES, *PENALTIES, header=header), lexicon, board)
    assert report.valid
    assert [p.nick for p in report.players] == ["ann", "bob"]


def test_nicks_are_case_sensitive(verifier, lexicon, board) -> None:
    header = ["#crosstiles 1", "#seed demo", "#player1 Ann", "#player2 ann"]
    assert failure(verifier(text(">ann: SDWRT?E - +0 0", header=header), lexicon, board)) == (
        5,
        "wrong_turn",
    )


# -- turn order, missed deadlines and removal ---------------------------------------------

# Three players; ann opens with STREWED, then misses three turns in a row and is removed with
# the highest total. The other scores were checked against devstack/testing/plain_crosstiles.py.
REMOVAL_GAME = [
    ANN_STREWED,
    ">bob: EAGNORR H5 GNA.ER +10 10",
    ">cy: SFETSKY 10F KE.FS +24 24",
    ">ann: MJNAPOL (timeout) +0 72",
    ">bob: ORLEXIO 5H .OOIER +14 24",
    ">cy: TSYAICI L1 CAST. +20 44",
    ">ann: MJNAPOL (timeout) +0 72",
    ">bob: LXUDUON J10 .OUND +10 34",
    ">cy: YIIANIB I7 Y. +17 61",
    ">ann: MJNAPOL (timeout) +0 72",
    ">bob: LXUIIAR - +0 34",
    ">cy: IIANIBB - +0 61",
    ">bob: LXUIIAR - +0 34",
    ">cy: IIANIBB - +0 61",
    ">bob: LXUIIAR - +0 34",
    # six scoreless turns in a row (ann's last timeout first): every rack pays, ann's too
    ">ann: MJNAPOL (MJNAPOL) -18 54",
    ">bob: LXUIIAR (LXUIIAR) -14 20",
    ">cy: IIANIBB (IIANIBB) -11 50",
]


def test_three_missed_turns_in_a_row_remove_a_player(verifier, lexicon, board) -> None:
    report = verifier(text(*REMOVAL_GAME, header=HEADER3), lexicon, board)
    assert report.valid
    assert [(p.nick, p.score, p.removed) for p in report.players] == [
        ("ann", 54, True),
        ("bob", 20, False),
        ("cy", 50, False),
    ]
    assert report.winners == ("cy",)  # a removed player ranks below everyone else


def test_a_removed_player_s_turns_are_skipped(verifier, lexicon, board) -> None:
    lines = [*REMOVAL_GAME[:10], ">ann: MJNAPOL - +0 72"]
    assert failure(verifier(text(*lines, header=HEADER3), lexicon, board)) == (16, "wrong_turn")


def test_a_turn_of_one_s_own_between_timeouts_resets_the_count(verifier, lexicon, board) -> None:
    # ann misses a turn, passes, then misses two more: two in a row, so she plays on
    ann_passes = ">ann: MJNAPOL - +0 72"
    lines = [*REMOVAL_GAME[:6], ann_passes, *REMOVAL_GAME[7:12], ann_passes]
    assert failure(verifier(text(*lines, header=HEADER3), lexicon, board)) == (19, "unfinished")


def test_the_game_ends_when_fewer_than_two_players_remain(verifier, lexicon, board) -> None:
    lines = [
        ANN_STREWED,
        ">bob: EAGNORR (timeout) +0 0",
        ">ann: SFETSKY H5 SKE.S +12 84",  # SKEWS down column H through the W: 12
        ">bob: EAGNORR (timeout) +0 0",
        ">ann: FTYMJNA 7G N.MA +22 106",  # NEMA 10, NE 3, ME 6, AD 3
        ">bob: EAGNORR (timeout) +0 0",
        ">ann: FTYJPOL (FTYJPOL) -22 84",
        ">bob: EAGNORR (EAGNORR) -8 -8",
    ]
    report = verifier(text(*lines), lexicon, board)
    assert report.valid
    assert report.winners == ("ann",)
    assert report.players[1].removed


# -- exchanges and the bag --------------------------------------------------------------


def test_an_exchange_is_checked_against_the_reshuffled_bag(verifier, lexicon, board) -> None:
    from tests.unit.judge.test_crosstiles_bag import exchanged_bag

    # ann sets SDW aside and draws SFE; GROANER: G on the DW, N on DL 8L: 9 x 2 + 50 = 68
    rest = exchanged_bag("demo", taken=14, aside="SDW")
    lines = [">ann: SDWRT?E -SDW +0 0", ">bob: EAGNORR 8H GROANER +68 68"]
    ann = ">ann: RT?ESFE - +0 0"
    bob = f">bob: {''.join(rest[:7])} - +0 68"
    assert failure(verifier(text(*lines, ann, bob), lexicon, board)) == (9, "unfinished")
    unshuffled = "TSKYMJN"  # what bob would draw had the bag not been shuffled again
    assert "".join(rest[:7]) != unshuffled
    stale = f">bob: {unshuffled} - +0 68"
    assert failure(verifier(text(*lines, ann, stale), lexicon, board)) == (8, "rack_mismatch")


def first_turn_with_a_bag_of_at_most(lines: list[str], left: int) -> int:
    """The index of the first turn line played with at most ``left`` tiles in the bag."""
    in_bag = 100 - 14
    for number, line in enumerate(lines):
        fields = line.split()
        is_turn = line.startswith(">") and len(fields) >= 5 and fields[2][:1] != "("
        if is_turn and in_bag <= left:
            return number
        if is_turn and len(fields) == 6:
            in_bag = max(0, in_bag - sum(char != "." for char in fields[3]))
    pytest.fail(f"the game never got down to {left} tiles in the bag")


@pytest.mark.parametrize("left", [6, 0])
def test_an_exchange_needs_seven_tiles_in_the_bag(verifier, lexicon, board, left: int) -> None:
    lines = generate(2, "bagcheck", lexicon, board, rng_seed=5).decode().splitlines()
    number = first_turn_with_a_bag_of_at_most(lines, left)
    nick, rack = lines[number].split()[:2]
    total = int([row for row in lines[:number] if row.startswith(nick)][-1].split()[-1])
    lines[number] = f"{nick} {rack} -{rack[0]} +0 {total}"
    report = verifier("\n".join(lines[: number + 1]).encode(), lexicon, board)
    assert failure(report) == (number + 1, "bag_too_small")


# -- going out ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def went_out(lexicon: Lexicon, board: Board) -> list[str]:
    """A generated two-player game that ends with a player going out."""
    for rng_seed in range(20):
        log = generate(2, "out", lexicon, board, rng_seed=rng_seed).decode()
        lines = log.splitlines()
        if lines[-1].split()[1].startswith("("):
            return lines
    pytest.fail("no game went out")


def test_going_out_gains_the_other_racks(verifier, lexicon, board, went_out) -> None:
    *_, penalty, gain = went_out
    assert penalty.split()[2] == f"({penalty.split()[1]})"
    assert gain.split()[1] == penalty.split()[2] and gain.split()[2] == "+" + penalty.split()[3][1:]
    report = verifier(("\n".join(went_out) + "\n").encode(), lexicon, board)
    assert report.valid
    assert report.winners and report.turns == sum(line.startswith(">") for line in went_out)


def test_the_gain_line_must_follow_and_be_right(verifier, lexicon, board, went_out) -> None:
    last = len(went_out)
    assert failure(verifier("\n".join(went_out[:-1]).encode(), lexicon, board)) == (
        last,
        "unfinished",
    )
    nick, tiles, points, total = went_out[-1].split()
    wrong = [
        f"{nick} {tiles} +{int(points) + 1} {int(total) + 1}",
        f"{nick} ({tiles[1:-1]}Q) {points} {total}",
        f"{nick} {tiles[1:-1]} {tiles} -{points[1:]} {total}",
    ]
    for line in wrong:
        data = "\n".join([*went_out[:-1], line]).encode()
        assert failure(verifier(data, lexicon, board)) == (last, "end_mismatch"), line
    data = "\n".join([*went_out[:-1], f"{nick} {tiles} {points} {int(total) - 1}"]).encode()
    assert failure(verifier(data, lexicon, board)) == (last, "total_mismatch")


def test_the_spec_table_s_example_lines_are_well_formed(verifier, lexicon, board) -> None:
    examples = [
        ">ann: AEINRST 8D STAINER +66 66",
        ">bob: QVVWUUI -QVVW +0 0",
        ">bob: QVVWUUI - +0 0",
        ">bob: QVVWUUI (timeout) +0 0",
        ">bob: QV (QV) -14 201",
        ">ann: (QV) +14 320",
    ]
    reasons = [failure(verifier(text(line), lexicon, board)) for line in examples]
    assert reasons == [(5, "rack_mismatch")] + [(5, "wrong_turn")] * 5
