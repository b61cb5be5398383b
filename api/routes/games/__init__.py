"""Each game's part of the HTTP contract besides the shared routes. By convention its module
`api.routes.games.<game name>` may give a `router` (routes of its own), a `LEADERBOARD` (the
response model of its contests' leaderboard) and `SHOWN` (its own version of each shared model
of a submission, by the model it extends: fields of its result shown beside the score too); a
game that gives no router has the shared routes alone, one that gives no leaderboard model
ranks teams (`schemas.Leaderboard`), and one that shows nothing more has the shared models."""

from __future__ import annotations

import functools
import operator
from types import ModuleType
from typing import Any, TypeVar

from fastapi import APIRouter
from pydantic import BaseModel

from api import schemas
from core.games import names, part_of


def game_routers() -> list[APIRouter]:
    """The routers of the registered games that have routes of their own."""
    return [module.router for module in _modules() if module and hasattr(module, "router")]


def leaderboard_model() -> Any:
    """The leaderboard route's response model: the union of the registered games' leaderboard
    models, in the order the games were registered."""
    models = (getattr(module, "LEADERBOARD", schemas.Leaderboard) for module in _modules())
    return functools.reduce(operator.or_, dict.fromkeys(models))  # each model once


M = TypeVar("M", bound=BaseModel)


@functools.cache
def shown_as(game: str, model: type[M]) -> type[M]:
    """The game's version of a shared model of a submission (`schemas.SubmissionOut`,
    `OwnSubmission`, `ResultRow`), or that model where the game has none."""
    module = part_of(__name__, game)
    found: type[M] = getattr(module, "SHOWN", {}).get(model, model)
    return found


def submission_model() -> Any:
    """A submission's response model: the shared one, or a registered game's version of it."""
    models = [shown_as(name, schemas.SubmissionOut) for name in names()]
    return functools.reduce(operator.or_, dict.fromkeys([schemas.SubmissionOut, *models]))


def _modules() -> list[ModuleType | None]:
    return [part_of(__name__, name) for name in names()]
