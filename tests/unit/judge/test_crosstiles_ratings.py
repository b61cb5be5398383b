"""Glicko-2 ratings: Glickman's worked example, and a contest's games rated pair by pair."""

from __future__ import annotations

import pytest

from judge.crosstiles.ratings import Rating, RatingRules, Seat, contest_ratings, pair_score, rated


def test_glickmans_worked_example() -> None:
    """'Example of the Glicko-2 system': 1464.06, 151.52, 0.05999 in the paper, whose steps
    round; 1464.0507, 151.5165, 0.0599960 computed without rounding."""
    player = Rating(1500, 200, 0.06)
    results = [(Rating(1400, 30, 0.06), 1.0), (Rating(1550, 100, 0.06), 0.0)]
    results.append((Rating(1700, 300, 0.06), 0.0))
    after = rated(player, results, tau=0.5)
    assert after.rating == pytest.approx(1464.06, abs=0.01)
    assert after.deviation == pytest.approx(151.52, abs=0.01)
    assert after.volatility == pytest.approx(0.05999, abs=0.00001)
    assert after.rating == pytest.approx(1464.0507, abs=0.0001)
    assert after.deviation == pytest.approx(151.5165, abs=0.0001)
    assert after.volatility == pytest.approx(0.0599960, abs=0.0000001)


def test_a_period_without_games_changes_nothing() -> None:
    assert rated(Rating(1500, 200, 0.06), []) == Rating(1500, 200, 0.06)


def test_pairs_follow_the_games_ranking() -> None:
    ann, bob = Seat("ann", 300, False), Seat("bob", 280, False)
    gone = Seat("cy", 400, True)
    assert (pair_score(ann, bob), pair_score(bob, ann)) == (1.0, 0.0)
    assert pair_score(ann, Seat("dee", 300, False)) == 0.5
    assert (pair_score(ann, gone), pair_score(gone, ann)) == (1.0, 0.0)  # removed ranks below


def test_a_game_is_a_period_rated_from_the_ratings_before_it() -> None:
    """Every pair of a three-player game counts, from the ratings all held before the game;
    a player absent from a game keeps their rating."""
    rules = RatingRules()
    first = [Seat("ann", 400, False), Seat("bob", 300, False), Seat("cy", 200, False)]
    second = [Seat("bob", 350, False), Seat("dee", 300, False)]
    ratings = contest_ratings([first, second], rules)
    start = rules.start()
    ann = rated(start, [(start, 1.0), (start, 1.0)])
    bob_first = rated(start, [(start, 0.0), (start, 1.0)])
    assert ratings["ann"] == ann
    assert ratings["cy"] == rated(start, [(start, 0.0), (start, 0.0)])
    assert ratings["bob"] == rated(bob_first, [(start, 1.0)])
    assert ratings["dee"] == rated(start, [(bob_first, 0.0)])
    assert ratings["ann"].rating > 1500 > ratings["cy"].rating
    assert ratings["ann"].deviation < 350  # played, so less uncertain
