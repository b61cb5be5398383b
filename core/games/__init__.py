"""The registry of games: the one place a game is made known to the pipeline, by name.

Generic modules ask `game(contest.game)` for a contest's game and never name one. A game
defined elsewhere (a test's toy game, say) joins with `register`.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from core.errors import Invalid
from core.game import Game
from core.games.crosstiles import Crosstiles
from core.games.wordytaire import Wordytaire

_GAMES: dict[str, Game] = {}
DEFAULT = "wordytaire"  # a contest created without naming its game


def register(found: Game) -> Game:
    """Make a game known under its name (again: replaced)."""
    _GAMES[found.name] = found
    return found


def unregister(name: str) -> None:
    _GAMES.pop(name, None)


def game(name: str) -> Game:
    """The game of that name; Invalid naming the known ones if there is none."""
    found = _GAMES.get(name)
    if found is None:
        raise Invalid(f"no game {name[:64]!r}; known: {', '.join(names())}")
    return found


def part_of(package: str, name: str) -> ModuleType | None:
    """A registered game's module in a layer's package (`infra.sql.games` → its module
    `infra.sql.games.<name>`), or None where the game has none there; only registered names
    are looked up, so no string from outside picks a module to import."""
    game(name)
    module_name = f"{package}.{name}"
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise  # the game's module is there, and something it imports is not
        return None


def names() -> tuple[str, ...]:
    """The games' names, in the order they were registered."""
    return tuple(_GAMES)


register(Wordytaire())
register(Crosstiles())
