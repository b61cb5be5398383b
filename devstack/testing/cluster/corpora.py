"""Hidden corpora for the cluster: generated games of the default game (the cluster's contests
name none), distinct per team, each with the offline judge's total."""

from __future__ import annotations

from dataclasses import dataclass

from core.games import DEFAULT, game
from judge import Lexicon


@dataclass(frozen=True)
class Corpus:
    """Hidden uploads and the offline judge's total for each."""

    data: list[bytes]
    expected: list[int]
    teams: int


# Generated games by (lexicon id, seed): the longest asked so far, and its length in moves.
_GAMES: dict[tuple[str, int], tuple[bytes, int]] = {}


def make_corpus(lexicon: Lexicon, uploads: int, *, teams: int, moves: int, seed: int) -> Corpus:
    """Generated games, distinct per team (a team's same bytes are one submission), each judged
    offline with `lexicon` and the default rules.

    Game n of a seed is the same whatever the number of moves: the bot's first k moves do not
    depend on how many follow. So corpora of one seed share their games, generated once (most
    of a corpus's cost), the shorter ones as the first lines of the longer."""
    data: list[bytes] = []
    seen: set[tuple[int, bytes]] = set()
    for n in range(uploads):
        one = _game(lexicon, seed * 1_000_003 + n, moves)
        while (n % teams, one) in seen:
            one += b"\n"  # a blank line changes the bytes, not the score
        seen.add((n % teams, one))
        data.append(one)
    played = game(DEFAULT)
    rules = played.default_rules()
    return Corpus(data, [played.judge(d, lexicon, rules, "").result.score for d in data], teams)


def _game(lexicon: Lexicon, seed: int, moves: int) -> bytes:
    """The default game's sample of `moves` moves (fewer if the bag runs out) for this seed."""
    known = _GAMES.get((lexicon.id, seed))
    if known is None or known[1] < moves:
        played = game(DEFAULT)
        made = played.sample(lexicon, played.default_rules(), seed, moves)
        known = _GAMES[lexicon.id, seed] = (made, moves)
    return b"".join(known[0].splitlines(keepends=True)[:moves])
