"""The offline command judges with the cyclic collector paused (`cli.games.collector_paused`):
safe only because judging makes no reference cycles, which these tests hold both games to."""

from __future__ import annotations

import gc
import random
from collections.abc import Callable

import pytest

from cli.games import collector_paused
from judge import Lexicon
from judge.crosstiles import corrupt, default_board, generate, verify
from judge.crosstiles.generator import CORRUPTIONS
from judge.wordytaire import default_layout, judge
from judge.wordytaire.generator import WordIndex
from judge.wordytaire.generator import generate as generate_moves
from tests.crosstiles_verifiers import crosstiles_lexicon


@pytest.mark.parametrize("on", [True, False])
def test_the_collector_is_off_inside_and_as_it_was_after(on: bool) -> None:
    was = gc.isenabled()
    try:
        gc.enable() if on else gc.disable()
        with collector_paused():
            assert not gc.isenabled()
        assert gc.isenabled() is on
        with pytest.raises(RuntimeError), collector_paused():
            raise RuntimeError("a failed judgement")
        assert gc.isenabled() is on
    finally:
        gc.enable() if was else gc.disable()


def cyclic_garbage_of(work: Callable[[], object]) -> int:
    """How many objects `work` left that only the cyclic collector would free."""
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        work()
        return gc.collect()
    finally:
        if was:
            gc.enable()


def test_judging_move_lists_leaves_no_cycles(real_lexicon: Lexicon, word_index: WordIndex) -> None:
    layout = default_layout()
    lists = [
        generate_moves(word_index, layout, seed=seed, moves=400, illegal_share=0.3)
        for seed in range(5)
    ]
    lists.append(b"not a move\n0 0 4 0 hello\n\xff\xfe\n")

    def work() -> None:
        for data in lists:
            judge(data, real_lexicon, layout).to_json_bytes()

    assert cyclic_garbage_of(work) == 0


def test_verifying_game_logs_leaves_no_cycles() -> None:
    lexicon, board = crosstiles_lexicon(), default_board()
    logs = [
        generate(players, f"seed-{players}", lexicon, board, exchanges=True, passes=True)
        for players in (2, 3, 4)
    ]
    rng = random.Random(7)
    logs += [corrupt(logs[0], kind, rng) for kind in CORRUPTIONS]
    logs.append(b"not a game log\n")

    def work() -> None:
        for data in logs:
            verify(data, lexicon, board).to_json()

    assert cyclic_garbage_of(work) == 0
