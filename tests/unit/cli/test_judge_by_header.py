"""`tilejudge judge` without --game judges each file as the game its header shows (a Crosstiles
log by its `#crosstiles` pragma, anything else as a Wordytaire move list); an explicit --game
wins, and a file whose header says otherwise is named on stderr."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.games import recognised_game
from cli.games.crosstiles import is_game_log
from cli.main import main

# A complete header and no move line: judged as a log, it is `unfinished` after line 4.
LOG = b"#crosstiles 1\n#seed abc\n#player1 ann\n#player2 bob\n"
MOVES = b"0 0 2 0 cat\n"


@pytest.fixture
def words(tmp_path: Path) -> str:
    path = tmp_path / "words.txt"
    path.write_text("cat\nat\n")
    return str(path)


def write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def judge(argv: list[str], tmp_path: Path) -> int:
    return main(
        ["judge", *argv], {"HOME": str(tmp_path), "TILEJUDGE_LEXICON_CACHE": "/nonexistent"}
    )


@pytest.mark.parametrize(
    "data",
    [
        LOG,
        b"\xef\xbb\xbf" + LOG,
        b"\n  \t\n#note from the club\r\n" + LOG,
        b"  #crosstiles 1\r\n",
        b"#crosstiles 2\n",  # another version is still a log: the verifier says what is wrong
        b"#crosstiles\n",
    ],
    ids=["plain", "bom", "notes-and-blanks-first", "indented-crlf", "other-version", "no-value"],
)
def test_a_log_is_recognised_by_its_first_line_that_is_not_blank_or_a_note(data: bytes) -> None:
    assert is_game_log(data)
    assert recognised_game(data) == "crosstiles"


@pytest.mark.parametrize(
    "data",
    [MOVES, b"", b"\n\n", b"#seed abc\n#crosstiles 1\n", b"#crosstilesx 1\n", b"#NOTE x\n" + LOG],
    ids=["moves", "empty", "blank", "pragma-not-first", "longer-name", "note-in-capitals"],
)
def test_anything_else_is_recognised_by_no_game(data: bytes) -> None:
    assert not is_game_log(data)
    assert recognised_game(data) is None


def test_without_game_a_file_headed_crosstiles_1_is_judged_as_a_game_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], words: str
) -> None:
    log = write(tmp_path / "game.gcg", LOG)

    assert judge([log, "--lexicon", words], tmp_path) == 1  # an invalid log

    captured = capsys.readouterr()
    assert captured.out.splitlines()[0] == (
        f"{log}: invalid at line 5 (unfinished): (the log ends after line 4)"
    )
    assert captured.err == ""


def test_files_of_two_games_are_each_judged_as_their_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], words: str
) -> None:
    moves = write(tmp_path / "moves.txt", MOVES)
    log = write(tmp_path / "game.gcg", LOG)
    more = write(tmp_path / "more.txt", MOVES)

    assert judge([moves, log, more, "--lexicon", words, "--json"], tmp_path) == 1

    lines = capsys.readouterr().out.splitlines()
    assert [line.split('"')[3] for line in lines] == [moves, more, log]  # game by game
    assert '"legal":1' in lines[0] and '"legal":1' in lines[1]
    assert '"valid":false' in lines[2] and '"reason":"unfinished"' in lines[2]


def test_an_explicit_game_wins_and_a_header_that_says_otherwise_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], words: str
) -> None:
    log = write(tmp_path / "game.gcg", LOG)

    assert judge(["--game", "wordytaire", log, "--lexicon", words], tmp_path) == 0

    captured = capsys.readouterr()
    assert captured.out.startswith(f"{log}: 0 points from 0 legal moves, 4 illegal\n")
    assert captured.err == (
        f"tilejudge: {log}: judged as --game wordytaire says, though its header shows a "
        "crosstiles upload (without --game it would be judged as one)\n"
    )


def test_an_explicit_game_matching_the_header_or_a_file_with_none_says_nothing_more(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], words: str
) -> None:
    log = write(tmp_path / "game.gcg", LOG)
    moves = write(tmp_path / "moves.txt", MOVES)

    assert judge(["--game", "crosstiles", log, "--lexicon", words], tmp_path) == 1
    assert judge(["--game", "wordytaire", moves, "--lexicon", words], tmp_path) == 0

    assert capsys.readouterr().err == ""


def test_with_files_of_two_games_an_error_names_the_files_it_stops(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], words: str
) -> None:
    log = write(tmp_path / "game.gcg", LOG)
    moves = write(tmp_path / "moves.txt", MOVES)
    missing = tmp_path / "missing.json"

    code = judge([log, moves, "--lexicon", words, "--layout", str(missing)], tmp_path)

    assert code == 2
    captured = capsys.readouterr()
    assert captured.out.startswith(f"{log}: invalid at line 5")  # its own game was judged
    assert captured.err == (
        f"tilejudge: {moves} (wordytaire): cannot read {missing}: No such file or directory\n"
    )


def test_a_log_read_from_stdin_is_recognised_too(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    words: str,
) -> None:
    stdin = tmp_path / "stdin"
    stdin.write_bytes(LOG)
    with stdin.open("rb") as raw:
        monkeypatch.setattr("sys.stdin", type("Stdin", (), {"buffer": raw})())
        assert judge(["-", "--lexicon", words], tmp_path) == 1
    assert capsys.readouterr().out.startswith("-: invalid at line 5 (unfinished)")
