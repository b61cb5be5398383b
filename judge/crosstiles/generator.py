"""A deterministic bot that plays whole valid Crosstiles games and writes their logs, and
``corrupt``, which spoils one line of a valid log in a chosen way.

Used by tests, demos and benchmarks. The bot keeps its own plain board (``moves.Position``)
and follows CROSSTILES.md's turn order, removals and ends; the tests check every log it
writes against the engine and against an independent reading of the spec.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from judge.crosstiles.bag import Bag
from judge.crosstiles.board import TILE_NAMES, Board
from judge.crosstiles.moves import Move, Position, WordIndex, find_move, word_index
from judge.crosstiles.report import Reason
from judge.lexicon import Lexicon

NICKS = ("ann", "bob", "cy", "dee")
_SEARCH_BUDGET = 4000  # candidate placements checked per turn
_TIMEOUT_SHARE = 0.05
_PASS_SHARE = 0.04
_EXCHANGE_SHARE = 0.06
_RACK = 7
_SCORELESS_TURNS_TO_END = 6


@dataclass
class _Game:
    board: Board
    nicks: tuple[str, ...]
    bag: Bag
    racks: list[list[str]]
    position: Position
    totals: list[int] = field(default_factory=list)
    removed: list[bool] = field(default_factory=list)
    timeouts: list[int] = field(default_factory=list)
    scoreless: int = 0
    turn: int = 0
    went_out: int = -1
    lines: list[str] = field(default_factory=list)

    def rack_text(self, player: int) -> str:
        return "".join(self.racks[player])

    def rack_value(self, player: int) -> int:
        return sum(self.board.values[TILE_NAMES.index(tile)] for tile in self.racks[player])

    def ended(self) -> bool:
        """Somebody went out, six turns in a row scored nothing, or one player is left."""
        scoreless = self.scoreless >= _SCORELESS_TURNS_TO_END
        return self.went_out >= 0 or scoreless or self.removed.count(False) < 2

    def draw(self, player: int, wanted: int) -> None:
        self.racks[player].extend(TILE_NAMES[code] for code in self.bag.draw(wanted))


def generate(
    players: int,
    seed: str,
    lexicon: Lexicon,
    board: Board,
    *,
    exchanges: bool = False,
    passes: bool = False,
    timeouts: bool = False,
    rng_seed: int = 0,
) -> bytes:
    """The log of one whole valid game between ``players`` bots, its bag following ``seed``.

    ``exchanges``, ``passes`` and ``timeouts`` make the bots exchange, pass and miss
    deadlines now and then; with ``timeouts`` in a game of three or four, one player misses
    three turns in a row and is removed.
    """
    if not 2 <= players <= len(NICKS):
        raise ValueError(f"a game has 2 to {len(NICKS)} players, not {players}")
    if not 1 <= len(seed) <= 128 or not all("!" <= char <= "~" for char in seed):
        raise ValueError("a seed is 1 to 128 printable ASCII characters without spaces")
    rng = random.Random(f"{rng_seed}:{seed}")
    index = word_index(lexicon)
    bag = Bag(board.counts, seed)
    nicks = NICKS[:players]
    racks = [[TILE_NAMES[code] for code in bag.draw(_RACK)] for _ in nicks]
    game = _Game(board, nicks, bag, racks, Position(board))
    game.totals, game.removed, game.timeouts = [0] * players, [False] * players, [0] * players
    game.lines = ["#crosstiles 1", f"#seed {seed}", "#lexicon crosstiles"]
    game.lines += [f"#player{n} {nick} Bot {nick.title()}" for n, nick in enumerate(nicks, 1)]
    victim = rng.randrange(players) if timeouts and players > 2 else -1
    victim_from = rng.randrange(1, 4) * players
    # Each option asked for shows at least once, early: on turns drawn now.
    kinds = (("exchange", exchanges), ("-", passes), ("timeout", timeouts))
    asked = [kind for kind, on in kinds if on]
    forced = dict(zip(rng.sample(range(1, 4 * players), len(asked)), asked, strict=True))
    player = 0
    while True:
        if timeouts and game.turn >= victim_from and player == victim:
            _timeout(game, player)
        else:
            options = (exchanges, passes, timeouts)
            _turn(game, player, index, rng, options, forced.get(game.turn, ""))
        game.turn += 1
        if game.ended():
            break
        player = (player + 1) % players
        while game.removed[player]:
            player = (player + 1) % players
    _end_lines(game)
    return "".join(line + "\n" for line in game.lines).encode()


def _turn(
    game: _Game,
    player: int,
    index: WordIndex,
    rng: random.Random,
    options: tuple[bool, bool, bool],
    forced: str,
) -> None:
    """One turn of a player who is not being removed: now and then (or when ``forced``) a
    missed deadline, a pass or an exchange, else the best placement found, else an exchange
    or a pass."""
    exchanges, passes, timeouts = options
    draw = rng.random()
    if (forced == "timeout" or (timeouts and draw < _TIMEOUT_SHARE)) and game.timeouts[player] < 2:
        _timeout(game, player)
        return
    if forced == "-" or (passes and draw > 1 - _PASS_SHARE):
        _zero(game, player, "-")
        return
    can_exchange = exchanges and game.bag.left >= _RACK
    exchange_now = _TIMEOUT_SHARE <= draw < _TIMEOUT_SHARE + _EXCHANGE_SHARE
    if can_exchange and (forced == "exchange" or exchange_now):
        _exchange(game, player, rng)
        return
    move = find_move(index, game.position, game.racks[player], rng, budget=_SEARCH_BUDGET)
    if move is not None:
        _place(game, player, move)
    elif can_exchange:
        _exchange(game, player, rng)
    else:
        _zero(game, player, "-")


def _timeout(game: _Game, player: int) -> None:
    _zero(game, player, "(timeout)")
    game.timeouts[player] += 1
    if game.timeouts[player] == 3:
        game.removed[player] = True


def _zero(game: _Game, player: int, written: str) -> None:
    """A pass or a missed deadline: scores 0, changes nothing else."""
    game.lines.append(
        f">{game.nicks[player]}: {game.rack_text(player)} {written} +0 {game.totals[player]}"
    )
    game.scoreless += 1
    if written != "(timeout)":
        game.timeouts[player] = 0


def _exchange(game: _Game, player: int, rng: random.Random) -> None:
    rack = game.racks[player]
    aside = rng.sample(rack, rng.randint(1, len(rack)))
    written = game.rack_text(player)
    for tile in aside:
        rack.remove(tile)
    rack.extend(
        TILE_NAMES[code] for code in game.bag.exchange([TILE_NAMES.index(t) for t in aside])
    )
    game.lines.append(
        f">{game.nicks[player]}: {written} -{''.join(aside)} +0 {game.totals[player]}"
    )
    game.scoreless += 1
    game.timeouts[player] = 0


def _place(game: _Game, player: int, move: Move) -> None:
    rack = game.racks[player]
    written = game.rack_text(player)
    for tile in move.tiles:
        rack.remove(tile)
    game.position.play(move)
    game.draw(player, _RACK - len(rack))
    game.totals[player] += move.score
    game.lines.append(
        f">{game.nicks[player]}: {written} {move.position} {move.play} +{move.score} "
        f"{game.totals[player]}"
    )
    game.scoreless = 0 if move.score > 0 else game.scoreless + 1
    game.timeouts[player] = 0
    if not rack:
        game.went_out = player


def _end_lines(game: _Game) -> None:
    """Every non-empty rack's penalty in player order, then the going-out gain."""
    gain = 0
    others: list[str] = []
    for player, nick in enumerate(game.nicks):
        if game.racks[player]:
            value = game.rack_value(player)
            gain += value
            others += game.racks[player]
            game.totals[player] -= value
            rack = game.rack_text(player)
            game.lines.append(f">{nick}: {rack} ({rack}) -{value} {game.totals[player]}")
    if game.went_out >= 0:
        game.totals[game.went_out] += gain
        nick = game.nicks[game.went_out]
        game.lines.append(f">{nick}: ({''.join(others)}) +{gain} {game.totals[game.went_out]}")


# What each kind of corruption is meant to make the verifier report, on the line it changes
# (or past the last line, for "truncate"). "word" changes one placed letter to another on the
# rack; the result is almost always no word, but can happen to be one.
CORRUPTIONS: dict[str, Reason] = {
    "form": Reason.MALFORMED,
    "turn": Reason.WRONG_TURN,
    "rack": Reason.RACK_MISMATCH,
    "tiles": Reason.NOT_ON_RACK,
    "word": Reason.NOT_IN_DICTIONARY,
    "score": Reason.SCORE_MISMATCH,
    "end": Reason.END_MISMATCH,
    "total": Reason.TOTAL_MISMATCH,
    "extra": Reason.AFTER_END,
    "truncate": Reason.UNFINISHED,
}
_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def corrupt(log: bytes, kind: str, rng: random.Random) -> bytes:
    """A valid log (as ``generate`` writes it) with one line spoilt in the way ``kind``
    names (a key of CORRUPTIONS); the lines before it stay valid."""
    lines = log.decode("utf-8").split("\n")[:-1]
    moves = [n for n, line in enumerate(lines) if line.startswith(">")]
    fields = {n: lines[n].split(" ") for n in moves}
    turns = [n for n in moves if not _is_end_line(fields[n])]
    ends = [n for n in moves if n not in turns]
    placements = [n for n in turns if len(fields[n]) == 6]
    if kind == "extra":
        return (log.decode("utf-8") + lines[rng.choice(moves)] + "\n").encode()
    if kind == "truncate":
        return "".join(line + "\n" for line in lines[: -rng.randint(1, len(ends))]).encode()
    spoilt = _spoil(kind, fields, turns, ends, placements, lines, rng)
    number, line = spoilt
    lines[number] = line
    return "".join(line + "\n" for line in lines).encode()


def _is_end_line(fields: list[str]) -> bool:
    return fields[1].startswith("(") or (fields[2].startswith("(") and fields[2] != "(timeout)")


def _spoil(
    kind: str,
    fields: dict[int, list[str]],
    turns: list[int],
    ends: list[int],
    placements: list[int],
    lines: list[str],
    rng: random.Random,
) -> tuple[int, str]:
    """The number (0-based) and new text of the line that ``kind`` spoils."""
    if kind == "form":
        number = rng.choice(list(fields))
        return number, " ".join(fields[number][:-1])  # no TOTAL
    if kind == "end":
        number = rng.choice(ends)
        words = list(fields[number])
        points = int(words[-2][1:]) + rng.randint(1, 9)
        words[-2] = words[-2][0] + str(points)
        return number, " ".join(words)
    if kind == "total":
        number = rng.choice(list(fields))
        words = list(fields[number])
        words[-1] = str(int(words[-1]) + rng.choice([-1, 1]) * rng.randint(1, 9))
        return number, " ".join(words)
    number = rng.choice(placements if kind in ("tiles", "word", "score") else turns)
    words = list(fields[number])
    if kind == "turn":
        nicks = [line.split()[1] for line in lines if line.startswith("#player")]
        words[0] = f">{rng.choice([nick for nick in nicks if f'>{nick}:' != words[0]])}:"
    elif kind == "rack":
        at = rng.randrange(len(words[1]))
        other = rng.choice([tile for tile in _UPPER + "?" if tile != words[1][at]])
        words[1] = words[1][:at] + other + words[1][at + 1 :]
    elif kind == "score":
        words[4] = f"+{int(words[4][1:]) + rng.randint(1, 9)}"
    else:
        words[3] = _respell(words[1], words[3], kind, rng)
    return number, " ".join(words)


def _respell(rack: str, play: str, kind: str, rng: random.Random) -> str:
    """PLAY with one placed letter changed: to a letter not on the rack ("tiles"), or to
    one the rack has to spare ("word", or a letter swapped with another when none is)."""
    placed = [at for at, char in enumerate(play) if char.isupper()]
    if not placed:
        placed = [at for at, char in enumerate(play) if char != "."]
    at = rng.choice(placed)
    if kind == "tiles":
        return play[:at] + rng.choice([c for c in _UPPER if c not in rack]) + play[at + 1 :]
    spare = [c for c in set(rack) - {"?"} if rack.count(c) > play.count(c) and c != play[at]]
    if spare:
        return play[:at] + rng.choice(sorted(spare)) + play[at + 1 :]
    others = [b for b in placed if play[b] != play[at]]
    if not others:
        return play
    swap = rng.choice(others)
    chars = list(play)
    chars[at], chars[swap] = chars[swap], chars[at]
    return "".join(chars)
