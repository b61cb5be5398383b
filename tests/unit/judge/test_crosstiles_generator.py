"""The Crosstiles bot: whole valid games for two to four players with every option, and the
corruptions that spoil one line of them in a known way."""

from __future__ import annotations

import random

import pytest

from judge import Lexicon
from judge.crosstiles import Board, Reason, corrupt, generate, verify
from judge.crosstiles.generator import CORRUPTIONS

OPTIONS = {
    "plain": {},
    "exchanges": {"exchanges": True},
    "passes": {"passes": True},
    "timeouts": {"timeouts": True},
    "everything": {"exchanges": True, "passes": True, "timeouts": True},
}


@pytest.fixture(scope="module")
def games(lexicon: Lexicon, board: Board) -> dict[tuple[int, str], bytes]:
    return {
        (players, option): generate(players, f"gen-{players}-{option}", lexicon, board, **kwargs)
        for players in (2, 3, 4)
        for option, kwargs in OPTIONS.items()
    }


def kinds(log: bytes) -> set[str]:
    """The kinds of the log's move lines, read from their third field."""
    found = set()
    for line in log.decode().splitlines():
        if not line.startswith(">"):
            continue
        fields = line.split()
        if fields[1].startswith("("):
            found.add("gain")
        elif fields[2] == "-":
            found.add("pass")
        elif fields[2] == "(timeout)":
            found.add("timeout")
        elif fields[2].startswith("-"):
            found.add("exchange")
        elif fields[2].startswith("("):
            found.add("penalty")
        else:
            found.add("placement")
    return found


@pytest.mark.parametrize("players", [2, 3, 4])
@pytest.mark.parametrize("option", sorted(OPTIONS))
def test_every_generated_game_is_valid(games, lexicon, board, players: int, option: str) -> None:
    log = games[players, option]
    report = verify(log, lexicon, board)
    assert report.error is None, report.error
    assert len(report.players) == players
    assert report.winners
    assert report.turns == log.count(b"\n>")


@pytest.mark.parametrize(
    ("option", "kind"),
    [("exchanges", "exchange"), ("passes", "pass"), ("timeouts", "timeout")],
)
def test_each_option_shows_in_the_games(games, option: str, kind: str) -> None:
    for players in (2, 3, 4):
        assert kind in kinds(games[players, option])
        assert kind in kinds(games[players, "everything"]) or kind == "pass"
    assert kind not in kinds(games[2, "plain"]) or kind == "pass"


@pytest.mark.parametrize("players", [3, 4])
def test_timeouts_remove_one_player_in_larger_games(games, lexicon, board, players) -> None:
    report = verify(games[players, "timeouts"], lexicon, board)
    assert [p.removed for p in report.players].count(True) == 1


def test_two_player_games_never_remove_anyone(games, lexicon, board) -> None:
    for option in OPTIONS:
        assert not any(p.removed for p in verify(games[2, option], lexicon, board).players)


def test_games_use_blanks_cross_words_and_the_whole_bag(games, lexicon, board) -> None:
    words = set()
    plays = []
    for log in games.values():
        words |= set(verify(log, lexicon, board).words)
        plays += [line.split()[3] for line in log.decode().splitlines() if len(line.split()) == 6]
    assert any(any(char.islower() for char in play) for play in plays)  # blanks
    assert sum("." in play for play in plays) > len(plays) / 2  # through tiles on the board
    assert len(words) > len(plays)  # cross words besides the main words


def test_most_games_end_with_somebody_going_out(games) -> None:
    out = [log for log in games.values() if "gain" in kinds(log)]
    assert len(out) >= len(games) // 2


def test_the_same_arguments_write_the_same_log(lexicon, board) -> None:
    first = generate(3, "again", lexicon, board, exchanges=True, timeouts=True, rng_seed=7)
    assert generate(3, "again", lexicon, board, exchanges=True, timeouts=True, rng_seed=7) == first
    assert generate(3, "again", lexicon, board, exchanges=True, timeouts=True, rng_seed=8) != first
    assert generate(3, "other", lexicon, board, exchanges=True, timeouts=True, rng_seed=7) != first


def test_the_header_names_the_seed_and_the_players(lexicon, board) -> None:
    head = generate(4, "S33d!", lexicon, board).decode().splitlines()[:7]
    assert head[:2] == ["#crosstiles 1", "#seed S33d!"]
    assert [line.split()[:2] for line in head if line.startswith("#player")] == [
        ["#player1", "ann"],
        ["#player2", "bob"],
        ["#player3", "cy"],
        ["#player4", "dee"],
    ]


@pytest.mark.parametrize(
    ("players", "seed"), [(1, "ok"), (5, "ok"), (2, ""), (2, "has space"), (2, "x" * 129)]
)
def test_a_game_needs_two_to_four_players_and_a_seed(lexicon, board, players, seed) -> None:
    with pytest.raises(ValueError):
        generate(players, seed, lexicon, board)


def changed_line(before: bytes, after: bytes) -> int:
    """The 1-based number of the first line that differs (or the line after the shorter)."""
    old, new = before.split(b"\n"), after.split(b"\n")
    for number, (a, b) in enumerate(zip(old, new), 1):
        if a != b:
            return number
    return min(len(old), len(new))


@pytest.mark.parametrize("kind", sorted(set(CORRUPTIONS) - {"word"}))
def test_a_corruption_fails_its_line_with_its_reason(games, lexicon, board, kind: str) -> None:
    rng = random.Random(kind)
    for key in sorted(games):
        log = games[key]
        spoilt = corrupt(log, kind, rng)
        report = verify(spoilt, lexicon, board)
        assert report.error is not None and report.error.reason is CORRUPTIONS[kind], key
        if kind == "truncate":
            assert report.error.line == spoilt.count(b"\n") + 1
        elif kind == "extra":
            assert report.error.line == log.count(b"\n") + 1
        else:
            assert report.error.line == changed_line(log, spoilt)


def test_a_respelt_word_is_nearly_always_no_word(games, lexicon, board) -> None:
    rng = random.Random("word")
    outcomes = []
    for key in sorted(games):
        spoilt = corrupt(games[key], "word", rng)
        report = verify(spoilt, lexicon, board)
        if report.error is not None and report.error.line == changed_line(games[key], spoilt):
            outcomes.append(report.error.reason)
    assert outcomes.count(Reason.NOT_IN_DICTIONARY) >= 0.7 * len(games)
