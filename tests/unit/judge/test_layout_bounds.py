"""A layout is refused when its values could make a total or a count overflow its SQL column."""

from __future__ import annotations

import json
from typing import Any

import pytest

from judge import Lexicon
from judge.wordytaire import Layout, LayoutError, default_layout, judge
from judge.wordytaire.layout import (
    MOST_LETTER_POINTS,
    MOST_LETTER_TILES,
    SCORE_COLUMN_MOST,
    WORD_LENGTH_BOUND,
)

SHIPPED_LONGEST_WORD = 31  # "dichlorodiphenyltrichloroethane"


def shipped() -> dict[str, Any]:
    return dict(json.loads(default_layout().to_json()))


def test_letter_points_of_4e18_are_refused_with_the_bound_in_the_message() -> None:
    doc = shipped()
    doc["letters"]["q"] = [4 * 10**18, 17]
    with pytest.raises(LayoutError, match=f"at most {MOST_LETTER_POINTS} points"):
        Layout.from_json(json.dumps(doc))


def test_a_bag_too_large_for_the_tiles_column_is_refused() -> None:
    doc = shipped()
    doc["letters"]["e"] = [1, MOST_LETTER_TILES + 1]
    with pytest.raises(LayoutError, match=f"{MOST_LETTER_TILES} tiles"):
        Layout.from_json(json.dumps(doc))


def test_a_board_of_word_bonuses_that_multiply_past_the_score_column_is_refused() -> None:
    doc = shipped()
    doc["period"], doc["bonus"] = 1, [["W3"]]
    with pytest.raises(LayoutError, match="word bonuses"):
        Layout.from_json(json.dumps(doc))


def test_a_period_beyond_the_bound_is_refused() -> None:
    doc = shipped()
    doc["period"] = 65
    doc["bonus"] = [["."] * 65 for _ in range(65)]
    with pytest.raises(LayoutError, match="from 1 to 64"):
        Layout.from_json(json.dumps(doc))


def test_the_largest_values_allowed_with_sparse_word_bonuses_still_fit_the_score_column() -> None:
    doc = shipped()
    doc["letters"] = {letter: [MOST_LETTER_POINTS, MOST_LETTER_TILES] for letter in doc["letters"]}
    layout = Layout.from_json(json.dumps(doc))
    assert layout.most_total(WORD_LENGTH_BOUND) <= SCORE_COLUMN_MOST


def test_the_shipped_layout_bounds_any_total_of_the_shipped_word_list_far_below_the_column() -> (
    None
):
    assert default_layout().most_total(SHIPPED_LONGEST_WORD) < 10**12 < SCORE_COLUMN_MOST


def test_the_bound_holds_for_a_word_laid_over_every_word_bonus_it_can_reach() -> None:
    """A word across the origin on the W3 row: the mirrored squares on both sides count."""
    doc = shipped()
    doc["letters"] = {letter: [MOST_LETTER_POINTS, 1000] for letter in doc["letters"]}
    layout = Layout.from_json(json.dumps(doc))
    word = "z" * 24
    lexicon = Lexicon.from_words([word, "zz"])
    opening = b"-1 0 0 0 zz\n"
    down = b"-1 0 -1 23 " + word.encode() + b"\n"  # column |x| = 1 holds the W2 at |y| = 1
    across = b"-12 3 11 3 " + word.encode() + b"\n"  # row |y| = 3: W3 at |x| = 3, 8, ...
    report = judge(opening + down + across, lexicon, layout)
    assert report.legal == 3
    assert 0 < report.total <= layout.most_total(len(word))
