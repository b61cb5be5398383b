"""Routes a game has besides the shared ones: by convention its module `api.routes.games.<game
name>` gives a `router`; a game without one has the shared routes alone."""

from __future__ import annotations

import importlib

from fastapi import APIRouter

from core.games import names


def game_routers() -> list[APIRouter]:
    """The routers of the registered games that have routes of their own."""
    found = []
    for name in names():
        module_name = f"{__name__}.{name}"
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue
        found.append(module.router)
    return found
