"""The deadline mix `benchmarks.local_stack` sends: uploads of 300 to 3,000 moves of the default
game, and a few (1 %) just under the upload limit, each with the offline judge's score."""

from __future__ import annotations

import math
import random

from core.games import DEFAULT, game
from devstack.plan import Corpus
from judge import Lexicon

FEWEST_MOVES, MOST_MOVES = 300, 3000
NEAR_LIMIT_SHARE = 0.01
# A near-limit upload ends this far below the limit at most (then at a line's end): a bot's
# log of several games that just fits, not the limit's exact size every time.
NEAR_LIMIT_SLACK = 64 * 1024


def near_limit_count(uploads: int) -> int:
    """How many of `uploads` are near the limit: 1 %, at least one."""
    return max(1, round(uploads * NEAR_LIMIT_SHARE)) if uploads else 0


def deadline_corpus(
    lexicon: Lexicon, uploads: int, teams: int, seed: int, limit_bytes: int
) -> Corpus:
    """`uploads` uploads of the default game (upload n from team n % `teams`): each a game of
    300 to 3,000 moves (fewer where the bag runs out first), but for `near_limit_count` of them
    several games written one after the other up to just under `limit_bytes`: the later
    games' lines collide with the first one's tiles, as a bot replaying its games would send."""
    played = game(DEFAULT)
    rules = played.default_rules()
    chance = random.Random(seed)
    data = [
        played.sample(
            lexicon, rules, seed * 1_000_003 + n, chance.randint(FEWEST_MOVES, MOST_MOVES)
        )
        for n in range(uploads)
    ]
    for n in chance.sample(range(uploads), near_limit_count(uploads)):
        data[n] = _near_limit(data, chance.randrange(uploads), limit_bytes, chance)
    seen: set[tuple[int, bytes]] = set()
    for n in range(uploads):
        while (n % teams, data[n]) in seen:  # one team's same bytes would be one submission
            data[n] += b"\n"  # a blank line changes the bytes, not the score
        seen.add((n % teams, data[n]))
    expected = [played.judge(d, lexicon, rules, "").result.score for d in data]
    return Corpus(data, expected, lexicon, rules.id)


def _near_limit(games: list[bytes], first: int, limit_bytes: int, chance: random.Random) -> bytes:
    """The games from `first` on (round again if need be), cut at a line's end just under
    `limit_bytes`."""
    size = limit_bytes - chance.randint(1, NEAR_LIMIT_SLACK)
    pieces, total, at = [], 0, first
    while total < size:
        pieces.append(games[at % len(games)])
        total += len(pieces[-1])
        at += 1
    joined = b"".join(pieces)[:size]
    return joined[: joined.rindex(b"\n") + 1]


def teams_needed(uploads: int, per_minute: int) -> int:
    """The fewest teams that send `uploads` in a minute without one of them passing the
    per-team limit of `per_minute` uploads a minute (0: no limit)."""
    return 1 if per_minute <= 0 else math.ceil(uploads / per_minute)
