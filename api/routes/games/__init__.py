"""Each game's part of the HTTP contract besides the shared routes. By convention its module
`api.routes.games.<game name>` may give a `router` (routes of its own) and a `LEADERBOARD`
(the response model of its contests' leaderboard); a game that gives no router has the shared
routes alone, and one that gives no model ranks teams (`schemas.Leaderboard`)."""

from __future__ import annotations

import functools
import operator
from types import ModuleType
from typing import Any

from fastapi import APIRouter

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


def _modules() -> list[ModuleType | None]:
    return [part_of(__name__, name) for name in names()]
