"""`tilejudge judge --game crosstiles` and `tilejudge generate --game crosstiles`, run in-process:
human and JSON Lines reports, exit statuses, the bot's logs, option errors and where the word
list comes from."""

from __future__ import annotations

import functools
import json
import random
import re
from collections.abc import Mapping
from pathlib import Path

import pytest

from cli.games.crosstiles import REASONS, SHOWN_CHARS
from cli.main import main
from devstack.testing.word_lists import cached_list
from infra import lexicon_files
from judge import Lexicon
from judge.crosstiles import (
    Board,
    CrosstilesReport,
    Reason,
    corrupt,
    default_board,
    generate,
    verify,
)
from judge.crosstiles.generator import CORRUPTIONS

PACKAGED_BOARD = Path(__file__).resolve().parents[3] / "judge/data/crosstiles/board-1.json"
OPTIONS = {
    "plain": [],
    "exchanges": ["--exchanges"],
    "passes": ["--passes"],
    "timeouts": ["--timeouts"],
}
# A turn of the kind each option asks for.
SIGNS = {
    "exchanges": re.compile(rb"^>\w+: [A-Z?]+ -[A-Z?]+ \+0 -?\d+$", re.MULTILINE),
    "passes": re.compile(rb"^>\w+: [A-Z?]+ - \+0 -?\d+$", re.MULTILINE),
    "timeouts": re.compile(rb"^>\w+: [A-Z?]+ \(timeout\) \+0 -?\d+$", re.MULTILINE),
}


# Every command reads its word list; the same file is parsed once for the module.
_load_once = functools.cache(lexicon_files.load)


@pytest.fixture(autouse=True)
def read_each_list_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexicon_files, "load", _load_once)


@pytest.fixture(scope="module")
def words() -> str:
    return str(cached_list("crosstiles.txt"))


@pytest.fixture(scope="module")
def lexicon(words: str) -> Lexicon:
    return _load_once(Path(words))


@pytest.fixture(scope="module")
def board() -> Board:
    return default_board()


@pytest.fixture(scope="module")
def game(lexicon: Lexicon, board: Board) -> bytes:
    """A valid three-player game with exchanges, passes and missed turns."""
    return generate(3, "cli-test", lexicon, board, exchanges=True, passes=True, timeouts=True)


def env(tmp_path: Path, **more: str) -> dict[str, str]:
    """An environment with an empty lexicon cache, so nothing outside the test is read."""
    return {"HOME": str(tmp_path), "TILEJUDGE_LEXICON_CACHE": str(tmp_path / "cache"), **more}


def run(argv: list[str], tmp_path: Path, environ: Mapping[str, str] | None = None) -> int:
    return main(argv, env(tmp_path) if environ is None else environ)


def write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def scores(report: CrosstilesReport) -> str:
    return ", ".join(
        f"{p.nick} {p.score}{' (removed)' if p.removed else ''}" for p in report.players
    )


def test_a_valid_log_prints_valid_the_final_scores_with_the_removed_marked_and_the_winners(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], words: str, game: bytes, lexicon: Lexicon
) -> None:
    path = write(tmp_path / "game.gcg", game)
    report = verify(game, lexicon, default_board())
    assert report.valid and any(p.removed for p in report.players)

    assert run(["judge", "--game", "crosstiles", path, "--lexicon", words], tmp_path) == 0

    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"{path}: valid, {report.turns} turns",
        f"  final scores: {scores(report)}",
        f"  winners: {', '.join(report.winners)}",
    ]
    assert "(removed)" in out[1]


@pytest.mark.parametrize("kind", sorted(CORRUPTIONS))
def test_an_invalid_log_quotes_its_failing_line_explains_the_reason_and_gives_scores_so_far(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    words: str,
    game: bytes,
    lexicon: Lexicon,
    kind: str,
) -> None:
    bad = corrupt(game, kind, random.Random(kind))
    report = verify(bad, lexicon, default_board())
    assert report.error is not None
    error = report.error
    path = write(tmp_path / "bad.gcg", bad)

    assert run(["judge", "--game", "crosstiles", path, "--lexicon", words], tmp_path) == 1

    head, why, so_far = capsys.readouterr().out.splitlines()
    lines = bad.decode().split("\n")
    shown = repr(lines[error.line - 1]) if kind != "truncate" else "(the log ends after line"
    assert head.startswith(f"{path}: invalid at line {error.line} ({error.reason}): {shown}")
    assert why == f"  {REASONS[error.reason]}: {error.detail}"
    assert so_far == f"  scores so far: {scores(report)}"


def test_every_reason_code_has_its_own_sentence() -> None:
    assert set(REASONS) == set(Reason)
    assert len(set(REASONS.values())) == len(Reason)


def test_a_long_failing_line_is_cut_to_80_characters_and_a_failing_header_has_no_scores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], words: str
) -> None:
    long_line = "#seed " + "x" * 300
    path = write(tmp_path / "long.gcg", f"#crosstiles 1\n{long_line}\n".encode())

    assert run(["judge", "--game", "crosstiles", path, "--lexicon", words], tmp_path) == 1

    head, _, so_far = capsys.readouterr().out.splitlines()
    quoted = repr(long_line[: SHOWN_CHARS - 3] + "...")
    assert head == f"{path}: invalid at line 2 (malformed): {quoted}"
    assert so_far == "  scores so far: none, the header is not complete"


def test_json_lines_follow_the_arguments_and_equal_the_engines_reports_with_the_file(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    words: str,
    game: bytes,
    lexicon: Lexicon,
) -> None:
    bad = corrupt(game, "score", random.Random(3))
    files = {write(tmp_path / "bad.gcg", bad): bad, write(tmp_path / "good.gcg", game): game}
    argv = ["judge", "--game", "crosstiles", "--json", *files, "--lexicon", words]

    assert run(argv, tmp_path) == 1

    reports = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [report.pop("file") for report in reports] == list(files)
    assert reports == [verify(data, lexicon, default_board()).to_json() for data in files.values()]
    assert [report["valid"] for report in reports] == [False, True]


def test_json_for_valid_logs_only_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], words: str, game: bytes
) -> None:
    path = write(tmp_path / "good.gcg", game)
    argv = ["judge", "--game", "crosstiles", "--json", path, path, "--lexicon", words]
    assert run(argv, tmp_path) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2


@pytest.mark.parametrize("option", sorted(OPTIONS))
@pytest.mark.parametrize("players", [2, 3, 4])
def test_generate_plays_a_whole_valid_game_that_shows_each_option_asked_for(
    tmp_path: Path,
    capsysbinary: pytest.CaptureFixture[bytes],
    words: str,
    lexicon: Lexicon,
    players: int,
    option: str,
) -> None:
    argv = ["generate", "--game", "crosstiles", "--players", str(players), "--seed", "S-42!"]
    assert run([*argv, *OPTIONS[option], "--lexicon", words], tmp_path) == 0

    log = capsysbinary.readouterr().out
    report = verify(log, lexicon, default_board())
    assert report.valid, report.error
    assert len(report.players) == players
    assert b"#seed S-42!\n" in log
    if option in SIGNS:
        assert SIGNS[option].search(log)
    if option == "timeouts" and players > 2:
        assert [p.removed for p in report.players].count(True) == 1


def test_generate_writes_what_the_bot_plays_to_a_file_and_the_bot_seed_changes_the_game(
    tmp_path: Path,
    capsysbinary: pytest.CaptureFixture[bytes],
    words: str,
    lexicon: Lexicon,
    board: Board,
) -> None:
    out = tmp_path / "game.gcg"
    argv = ["generate", "--game", "crosstiles", "--players", "2", "--seed", "abc", "--passes"]
    argv += ["--lexicon", words]

    assert run([*argv, "--bot-seed", "5", "-o", str(out)], tmp_path) == 0
    assert capsysbinary.readouterr().out == b""
    assert out.read_bytes() == generate(2, "abc", lexicon, board, passes=True, rng_seed=5)

    assert run(argv, tmp_path) == 0
    other = capsysbinary.readouterr().out
    assert other == generate(2, "abc", lexicon, board, passes=True, rng_seed=0)
    assert other != out.read_bytes()


def test_generate_and_judge_take_another_board_file(
    tmp_path: Path,
    capsysbinary: pytest.CaptureFixture[bytes],
    words: str,
) -> None:
    doc = json.loads(PACKAGED_BOARD.read_bytes())
    doc["tiles"]["E"] = [12, 2]
    custom = write(tmp_path / "board.json", json.dumps(doc).encode())
    argv = ["generate", "--game", "crosstiles", "--players", "2", "--seed", "b"]
    assert run([*argv, "--board", custom, "--lexicon", words], tmp_path) == 0
    log = write(tmp_path / "game.gcg", capsysbinary.readouterr().out)

    judge = ["judge", "--game", "crosstiles", "--json", log, "--lexicon", words]
    assert run([*judge, "--board", custom], tmp_path) == 0
    report = json.loads(capsysbinary.readouterr().out)
    assert report["board"] == Board.from_json(Path(custom).read_bytes()).id
    assert report["board"] != default_board().id
    assert run(judge, tmp_path) == 1  # E is worth 1 on the packaged board


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--players", "5", "--seed", "s"], "--players must be 2, 3 or 4, not 5"),
        (["--players", "1", "--seed", "s"], "--players must be 2, 3 or 4, not 1"),
        (["--seed", "s"], "--players is required with --game crosstiles"),
        (["--players", "2", "--seed", "two words"], "--seed must be 1 to 128 printable ASCII"),
        (["--players", "2", "--seed", "s" * 129], "(129 characters)"),
        (["--players", "2", "--seed", "café"], "not 'café'"),
        (["--players", "2", "--seed", "s", "--moves", "9"], "--moves: not an option of --game"),
    ],
)
def test_generate_refuses_bad_players_and_seeds_with_exit_2_and_a_message(
    tmp_path: Path,
    capsysbinary: pytest.CaptureFixture[bytes],
    options: list[str],
    message: str,
) -> None:
    # No word list anywhere: the options are checked before one is looked for.
    assert run(["generate", "--game", "crosstiles", *options], tmp_path) == 2
    captured = capsysbinary.readouterr()
    assert captured.out == b""
    assert captured.err.decode().startswith("tilejudge: ")
    assert message in captured.err.decode()


def test_the_wordytaire_commands_refuse_crosstiles_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], words: str
) -> None:
    log = write(tmp_path / "game.gcg", b"")
    assert run(["generate", "--seed", "1", "--moves", "3", "--players", "2"], tmp_path) == 2
    assert run(["generate", "--seed", "x", "--moves", "3"], tmp_path) == 2
    assert run(["judge", log, "--board", "b.json", "--lexicon", words], tmp_path) == 2
    assert run(["judge", "--game", "crosstiles", log, "--layout", "l.json"], tmp_path) == 2
    assert capsys.readouterr().err.splitlines() == [
        "tilejudge: --players: not an option of --game wordytaire",
        "tilejudge: --seed must be a whole number for --game wordytaire, not 'x'",
        "tilejudge: --board: not an option of wordytaire, the game of the files given "
        "(--game chooses one)",
        "tilejudge: --layout: not an option of --game crosstiles",
    ]


def test_the_crosstiles_list_comes_from_the_cache_not_from_tilejudge_lexicon(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], words: str, game: bytes, lexicon: Lexicon
) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "crosstiles.txt").symlink_to(words)
    environ = env(tmp_path, TILEJUDGE_LEXICON=str(cached_list("words_alpha.txt")))
    path = write(tmp_path / "game.gcg", game)

    assert run(["judge", "--game", "crosstiles", "--json", path], tmp_path, environ) == 0
    assert json.loads(capsys.readouterr().out)["lexicon"] == lexicon.id


def test_without_the_crosstiles_list_it_exits_2_naming_the_missing_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], game: bytes
) -> None:
    path = write(tmp_path / "game.gcg", game)
    assert run(["judge", "--game", "crosstiles", path], tmp_path) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(
        f"tilejudge: no lexicon: {tmp_path / 'cache' / 'crosstiles.txt'}"
    )
    assert "make lexicon" in captured.err and "TILEJUDGE_LEXICON" not in captured.err


def test_an_unreadable_log_or_a_bad_board_exits_2_before_any_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], words: str, game: bytes
) -> None:
    good = write(tmp_path / "good.gcg", game)
    missing = tmp_path / "nowhere.gcg"
    bad_board = write(tmp_path / "board.json", b"{not json")
    judge = ["judge", "--game", "crosstiles", "--lexicon", words]

    assert run([*judge, good, str(missing)], tmp_path) == 2
    assert run([*judge, "--board", bad_board, good], tmp_path) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines()[0] == (
        f"tilejudge: cannot read {missing}: No such file or directory"
    )
    assert captured.err.splitlines()[1].startswith("tilejudge: not JSON")
