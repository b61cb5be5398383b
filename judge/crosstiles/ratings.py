"""Glicko-2 ratings of Crosstiles players, from Mark Glickman's "Example of the Glicko-2 system"
(Boston University, 2013), the algorithm Woogles and lichess rate their players with.

Each game is its own rating period: every player of the game is rated against every other
player of it (a multi-player game counts as the result of each pair), from the ratings all of
them held before the game, and all are updated together. A player absent from a game keeps
their rating, deviation and volatility unchanged: a contest's games are minutes apart, and
Glicko-2's growth of an idle player's deviation per period would make a player's uncertainty
depend on how many games others played meanwhile.

A pair's result follows the game's ranking (docs/rules/crosstiles.md): a player not removed
beats a removed one; otherwise the higher final score wins, and equal scores draw.

Computed without rounding any intermediate value; the volatility is found by the Illinois
algorithm of the paper's step 5, to within `EPSILON`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

SCALE = 173.7178  # Glicko-2's scale: (rating - 1500) / SCALE
EPSILON = 0.000001  # the convergence tolerance of the paper's step 5


@dataclass(frozen=True)
class Rating:
    rating: float
    deviation: float  # RD
    volatility: float


@dataclass(frozen=True)
class RatingRules:
    """Where every player starts, and the system constant τ (which constrains how fast the
    volatility may change: the paper suggests 0.3 to 1.2)."""

    rating: float = 1500.0
    deviation: float = 350.0
    volatility: float = 0.06
    tau: float = 0.5

    def start(self) -> Rating:
        return Rating(self.rating, self.deviation, self.volatility)

    @classmethod
    def from_json(cls, given: object) -> RatingRules:
        """The rules a contest names (any of `rating`, `deviation`, `volatility`, `tau`; the
        rest as by default); ValueError with one sentence for anything else."""
        if not isinstance(given, dict):
            raise ValueError("ratings must be an object of rating, deviation, volatility, tau")
        unknown = sorted(set(given) - set(_BOUNDS))
        if unknown:
            raise ValueError(
                f"ratings take rating, deviation, volatility and tau, not {unknown[0]!r}"
            )
        values = {}
        for name, value in given.items():
            low, high = _BOUNDS[name]
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"ratings.{name} must be a number")
            if not low < value <= high:
                raise ValueError(f"ratings.{name} must be over {low:g} and at most {high:g}")
            values[name] = float(value)
        return cls(**values)

    def to_json(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in _BOUNDS}


# What a contest may set each rule to: above the first, at most the second.
_BOUNDS = {
    "rating": (0.0, 10000.0),
    "deviation": (0.0, 1000.0),
    "volatility": (0.0, 1.0),
    "tau": (0.0, 5.0),
}


@dataclass(frozen=True)
class Seat:
    """A player of a valid game, as much as a rating needs."""

    nick: str
    score: int
    removed: bool


def rated(
    player: Rating, results: Sequence[tuple[Rating, float]], tau: float = RatingRules.tau
) -> Rating:
    """`player` after one rating period with `results`: each opponent's rating before the
    period and the player's score against them (1 a win, 0.5 a draw, 0 a loss)."""
    if not results:
        return player
    mu, phi = (player.rating - 1500) / SCALE, player.deviation / SCALE
    terms = []
    for opponent, score in results:
        g = _g(opponent.deviation / SCALE)
        expected = 1 / (1 + math.exp(-g * (mu - (opponent.rating - 1500) / SCALE)))
        terms.append((g, expected, score))
    v = 1 / sum(g * g * e * (1 - e) for g, e, _ in terms)
    improvement = sum(g * (s - e) for g, e, s in terms)
    delta = v * improvement
    sigma = _volatility(phi, player.volatility, v, delta, tau)
    phi_star = math.sqrt(phi * phi + sigma * sigma)
    phi_new = 1 / math.sqrt(1 / (phi_star * phi_star) + 1 / v)
    mu_new = mu + phi_new * phi_new * improvement
    return Rating(SCALE * mu_new + 1500, SCALE * phi_new, sigma)


def _g(phi: float) -> float:
    return 1 / math.sqrt(1 + 3 * phi * phi / (math.pi * math.pi))


def _volatility(phi: float, sigma: float, v: float, delta: float, tau: float) -> float:
    """The paper's step 5: the new volatility, by the Illinois algorithm."""
    a = math.log(sigma * sigma)

    def f(x: float) -> float:
        ex = math.exp(x)
        return ex * (delta * delta - phi * phi - v - ex) / (2 * (phi * phi + v + ex) ** 2) - (
            x - a
        ) / (tau * tau)

    low = a
    if delta * delta > phi * phi + v:
        high = math.log(delta * delta - phi * phi - v)
    else:
        k = 1
        while f(a - k * tau) < 0:
            k += 1
        high = a - k * tau
    f_low, f_high = f(low), f(high)
    while abs(high - low) > EPSILON:
        middle = low + (low - high) * f_low / (f_high - f_low)
        f_middle = f(middle)
        if f_middle * f_high <= 0:
            low, f_low = high, f_high
        else:
            f_low /= 2
        high, f_high = middle, f_middle
    return math.exp(low / 2)


def pair_score(mine: Seat, theirs: Seat) -> float:
    """1, 0.5 or 0: how `mine` fared against `theirs` in their game."""
    if mine.removed != theirs.removed:
        return 0.0 if mine.removed else 1.0
    if mine.score == theirs.score:
        return 0.5
    return 1.0 if mine.score > theirs.score else 0.0


def shown(rating: Rating) -> dict[str, float]:
    """A rating as the standings show it: rating and deviation to two decimals, volatility to
    six (every place that shows standings rounds through here, so they agree to the digit)."""
    return {
        "rating": round(rating.rating, 2),
        "deviation": round(rating.deviation, 2),
        "volatility": round(rating.volatility, 6),
    }


def contest_ratings(
    games: Iterable[Sequence[Seat]], rules: RatingRules = RatingRules()
) -> dict[str, Rating]:
    """Every player's rating after `games`, taken in order (a contest's valid games in receipt
    order), each its own rating period."""
    ratings: dict[str, Rating] = {}
    for seats in games:
        before: Mapping[str, Rating] = {
            seat.nick: ratings.get(seat.nick, rules.start()) for seat in seats
        }
        for seat in seats:
            results = [
                (before[other.nick], pair_score(seat, other))
                for other in seats
                if other.nick != seat.nick
            ]
            ratings[seat.nick] = rated(before[seat.nick], results, rules.tau)
    return ratings
