"""Each game's part of the public scoreboard page (and of the words the operations dashboard
speaks of its standings with).

By convention the module `api.pages.games.<game name>` gives a game's `PAGE` (a `GamePage`):
how one page of its public standings is drawn as HTML, its chart (what the chart shows is the
game's choice, and it may read what it needs) and its words (`api.pages.games.words`). A game
without such a module is drawn as teams ranked by their best score (`api.pages.games.ranked`),
the shape every game's standings take unless its SQL module says otherwise
(`infra.sql.games`). The generic page (`api.pages.board`) never asks which game it draws."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from api.pages.games.words import StandingsWords
from api.services import Services
from core.games import part_of
from core.records import Contest


class GamePage(Protocol):
    @property
    def words(self) -> StandingsWords: ...  # how the dashboard speaks of its standings

    def lists(self, board: Mapping[str, Any]) -> str:
        """One page of the public board (each list sliced, ranks as the whole board has them)
        as HTML, every value escaped; wide tables inside a `.scroll` box of their own."""
        ...

    def chart(self, svc: Services, contest: Contest, board: Mapping[str, Any], now: str) -> str:
        """The chart of the whole public board `board` (run on a public thread: it may read
        the store, and must show nothing the public board hides), or "" for none. Drawn the
        same from the same data, so the page's live stream sends it again only on a change."""
        ...


def page_of(game: str) -> GamePage:
    """The game's page part (Invalid for a game not registered)."""
    module = part_of(__name__, game)
    if module is None:
        from api.pages.games.ranked import PAGE as RANKED

        return RANKED
    found: GamePage = module.PAGE
    return found
