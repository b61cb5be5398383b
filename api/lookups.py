"""Finding what a route's path names, or answering 404: contests by id, and which ids may be
looked up at all; and a result as its game shows it."""

from __future__ import annotations

import re
from typing import Any

from api.routes.games import M, shown_as
from api.services import Services
from core.errors import NotFound
from core.records import Contest

# Only well-formed ids reach SQL: PostgreSQL refuses a NUL byte with an error, not a miss.
ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def well_formed(contest_id: str) -> str:
    """The id, or 404 for one no contest can have (before it keys a cache or reaches SQL)."""
    if not ID.fullmatch(contest_id):
        raise NotFound(f"no contest {contest_id[:64]!r}")
    return contest_id


def known_contest(svc: Services, contest_id: str) -> Contest:
    found = svc.store.get_contest(contest_id) if ID.fullmatch(contest_id) else None
    if found is None:
        raise NotFound(f"no contest {contest_id[:64]!r}")
    return found


def shown(game: str, model: type[M], row: dict[str, Any], fields: dict[str, Any] | None) -> M:
    """A result as the API shows it, in the game's version of `model` (`shown_as`): the row,
    its game's own fields under `result`, and those of them the model has beside the score
    (every game's score; a move list's line counts), null before it is judged or where its
    game has no such field."""
    own: type[M] = shown_as(game, model)
    beside = ["score", *(name for name in own.model_fields if name not in model.model_fields)]
    lifted = {name: fields.get(name) if fields else None for name in beside}
    return own(**row, **lifted, result=fields)
