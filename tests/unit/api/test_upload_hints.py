"""An upload that is accepted and judged but is most likely not what the team meant (empty, a
NUL byte, not UTF-8, the other game's format) gets a `hint` in its 202 answer, and is judged all
the same: the rules give it a result, and an accepted upload is never lost."""

from __future__ import annotations

import pytest

from core.upload_hints import first_non_utf8, upload_hint
from devstack.testing.pipeline import Pipeline, drain

LOG = b"#crosstiles 1\n#seed s\n#player1 ann\n#player2 bob\n>ann: AEINRST - +0 0\n"
MOVES = b"0 0 2 0 cat\n0 0 0 1 at\n"


@pytest.mark.parametrize(
    ("game", "data", "said"),
    [
        ("wordytaire", LOG, "reads as a crosstiles upload, but this contest's game is wordytaire"),
        ("wordytaire", b"\n#note x\n" + LOG, "reads as a crosstiles upload"),
        (
            "crosstiles",
            MOVES,
            "reads as a wordytaire upload, but this contest's game is crosstiles",
        ),
        ("crosstiles", b"\xef\xbb\xbf \t\r\n" + MOVES, "reads as a wordytaire upload"),
        ("wordytaire", b"", "the upload is empty"),
        ("crosstiles", b"\xef\xbb\xbf \n\t\r\n", "the upload is empty"),
        ("wordytaire", b"0 0 2 0 cat\n0 0\x00 0 1 at\n", "holds a NUL byte (line 2)"),
        ("wordytaire", b"0 0 2 0 cat\n\n0 0 0 1 \xe9t\n", "is not UTF-8 text (line 3 is the first"),
    ],
)
def test_a_hint_names_what_is_wrong(game: str, data: bytes, said: str) -> None:
    hint = upload_hint(game, data)
    assert hint is not None and said in hint


@pytest.mark.parametrize(
    ("game", "data"),
    [
        ("wordytaire", MOVES),
        ("wordytaire", b"nonsense\n" + LOG),  # neither game's: nothing to suggest
        ("wordytaire", "0 0 2 0 café\n".encode()),  # UTF-8 and a move list: judged, no hint
        ("crosstiles", LOG),
        ("crosstiles", b"#crosstiles 2\n"),  # a log the verifier refuses, but a log
    ],
)
def test_an_upload_of_the_contests_own_kind_gets_none(game: str, data: bytes) -> None:
    assert upload_hint(game, data) is None


def test_the_first_byte_that_is_not_utf8_is_found_across_the_slices_decoded() -> None:
    accented = "é".encode() * 40_000  # 80,000 bytes: a character cut by the first slice's end
    assert first_non_utf8(accented) is None
    assert first_non_utf8(accented + b"\xff") == len(accented)
    assert first_non_utf8(accented[:-1]) == len(accented) - 2  # a character cut short
    assert first_non_utf8(b"plain ascii") is None


def test_a_game_log_sent_to_a_wordytaire_contest_is_judged_and_hinted(pipe: Pipeline) -> None:
    team = pipe.add_team("ravens")  # the fixture's contest, `open`: Wordytaire

    answer = pipe.accepted(team, LOG)
    plain = pipe.accepted(team, MOVES)

    assert "crosstiles" in answer["hint"]
    assert "hint" not in plain
    drain(pipe.services)
    assert pipe.state(answer["id"]) == "judged"
    assert pipe.submission(answer["id"])["illegal"] == 5  # every line malformed, as the rules say


def test_a_move_list_sent_to_a_crosstiles_contest_and_an_empty_upload_are_hinted(
    pipe: Pipeline,
) -> None:
    pipe.add_contest("xt", game="crosstiles")
    club = pipe.add_team("club", contest="xt", uploads_logs=True)

    moves = pipe.accepted(club, MOVES)
    empty = pipe.accepted(club, b"")

    assert "wordytaire" in moves["hint"]
    assert "empty" in empty["hint"]
    drain(pipe.services)
    assert pipe.state(moves["id"]) == pipe.state(empty["id"]) == "judged"
