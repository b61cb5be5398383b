"""The games the Contest API maps: a module here named after each (found through the registry,
`core.games.part_of`), holding its `MAPPED`: the one problem a contest of it is and the
language its uploads are in. A game without a module here stays outside the Contest API."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.errors import Invalid
from core.games import names, part_of


@dataclass(frozen=True)
class Mapped:
    problem_id: str
    problem_name: str
    language: dict[str, Any]  # the language object, as `languages` lists it

    @property
    def language_id(self) -> str:
        return str(self.language["id"])


def mapped(game: str) -> Mapped | None:
    """How the Contest API shows a contest of `game`, or None if it does not."""
    try:
        module = part_of(__name__, game)
    except Invalid:  # no such game
        return None
    found = getattr(module, "MAPPED", None)
    return found if isinstance(found, Mapped) else None


def mapped_games() -> list[str]:
    return [name for name in names() if mapped(name) is not None]
