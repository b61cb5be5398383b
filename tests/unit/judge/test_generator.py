"""The submission bot: deterministic, realistic (uses up the bag, reuses tiles), every reason."""

from __future__ import annotations

import pytest

from judge import Lexicon
from judge.wordytaire import Layout, Reason, judge
from judge.wordytaire.generator import WordIndex, generate

BAG_SIZE = 10_000


def words_of(data: bytes) -> list[bytes]:
    return [line.split()[-1] for line in data.splitlines()]


def test_the_same_seed_writes_the_same_bytes(word_index: WordIndex, layout: Layout) -> None:
    for share in (0.0, 0.3):
        first = generate(word_index, layout, seed=42, moves=500, illegal_share=share)
        again = generate(word_index, layout, seed=42, moves=500, illegal_share=share)
        assert first == again


def test_different_seeds_write_different_games(word_index: WordIndex, layout: Layout) -> None:
    games = {generate(word_index, layout, seed=seed, moves=50) for seed in range(20)}
    assert len(games) == 20


def test_a_shorter_game_of_a_seed_is_the_first_lines_of_a_longer_one(word_index, layout) -> None:
    """What lets the cluster tests cut their short corpora from their long ones."""
    for seed in range(12):
        long = generate(word_index, layout, seed=seed, moves=400, illegal_share=0.1)
        for moves in (2, 150, 399):
            short = generate(word_index, layout, seed=seed, moves=moves, illegal_share=0.1)
            assert short == b"".join(long.splitlines(keepends=True)[:moves])


def test_a_short_game_has_exactly_the_moves_asked_for(word_index, layout) -> None:
    data = generate(word_index, layout, seed=3, moves=100, illegal_share=0.2)
    assert data.endswith(b"\n") and data.count(b"\n") == 100
    assert b"\r" not in data
    assert generate(word_index, layout, seed=3, moves=0) == b""


def test_full_bag_games_are_all_legal_and_use_most_of_the_bag(
    word_index: WordIndex, real_lexicon: Lexicon, layout: Layout
) -> None:
    placed = []
    for seed in range(10):
        data = generate(word_index, layout, seed=seed, moves=6000, illegal_share=0.0)
        report = judge(data, real_lexicon, layout)
        assert report.illegal == 0
        assert report.legal == data.count(b"\n") < 6000  # it stopped: nothing fits any more
        # Crossing: most moves run through a tile already on the board and reuse it.
        words = words_of(data)
        reusing = [v for v in report.verdicts if v.tiles < len(words[v.line - 1])]
        assert len(reusing) > 0.5 * report.legal
        placed.append(report.tiles_placed)
    # A few seeds stall a little earlier (3 in the first 40 stop between 86% and 90%).
    assert sum(placed) / len(placed) >= 0.9 * BAG_SIZE
    assert min(placed) >= 0.85 * BAG_SIZE


def test_every_reason_code_appears_in_a_few_long_games(word_index, real_lexicon, layout) -> None:
    seen: set[Reason | None] = set()
    for seed in range(3):
        data = generate(word_index, layout, seed=seed, moves=6000, illegal_share=0.1)
        seen |= {v.reason for v in judge(data, real_lexicon, layout).verdicts}
    assert seen == {None, *Reason}


def test_the_first_line_of_a_game_with_illegal_lines_misses_the_origin(
    word_index, real_lexicon, layout
) -> None:
    data = generate(word_index, layout, seed=9, moves=20, illegal_share=0.5)
    assert judge(data, real_lexicon, layout).verdicts[0].reason is Reason.MUST_COVER_ORIGIN


@pytest.mark.parametrize("share", [0.05, 0.1, 0.3, 0.5])
def test_the_share_of_illegal_lines_is_roughly_the_one_asked(
    word_index: WordIndex, real_lexicon: Lexicon, layout: Layout, share: float
) -> None:
    lines = illegal = 0
    for seed in range(5):
        data = generate(word_index, layout, seed=seed, moves=400, illegal_share=share)
        report = judge(data, real_lexicon, layout)
        lines += len(report.verdicts)
        illegal += report.illegal
    # The bot falls back to a legal move when the reason it drew cannot happen yet (bag_empty
    # with no letter used up, must_cover_origin after the first line): about 2 draws in 11.
    assert 0.75 * share <= illegal / lines <= 1.05 * share
