"""Routes a game has besides the shared ones: by convention its module `api.routes.games.<game
name>` gives a `router`; a game without one has the shared routes alone."""

from __future__ import annotations

from fastapi import APIRouter

from core.games import names, part_of


def game_routers() -> list[APIRouter]:
    """The routers of the registered games that have routes of their own."""
    modules = (part_of(__name__, name) for name in names())
    return [module.router for module in modules if module is not None]
