"""Each game's part of the team page: how one of its results reads in the team's list of
submissions, and how its report is drawn. By convention the module
`api.team_pages.games.<game name>` gives a `PAGE` (a `GamePage`); a game without one is shown
by `AsJson` (its result's fields, its report as indented JSON). Nothing else on the page
knows any game."""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from functools import cache
from typing import Any, Protocol

from core import clock
from core.games import names, part_of


class GamePage(Protocol):
    def result_text(self, fields: Mapping[str, Any]) -> str:
        """A judged result in a few words (its game's fields, as the results store keeps
        them), for the team's list of submissions."""
        ...

    def report_html(self, report: Mapping[str, Any]) -> str:
        """The report (SPEC JSON, its runs of alike lines folded) as HTML, escaped."""
        ...


class AsJson:
    """A game with no page module: its fields listed, its report as JSON."""

    def result_text(self, fields: Mapping[str, Any]) -> str:
        return ", ".join(f"{key} {value}" for key, value in fields.items())

    def report_html(self, report: Mapping[str, Any]) -> str:
        return f'<pre class="json">{e(json.dumps(report, indent=2)[:200_000])}</pre>'


@cache
def game_page(name: str) -> GamePage:
    """The page part of the game of that name (`AsJson` for one with no module of its own)."""
    if name not in names():  # a stored string never picks a module to import
        return AsJson()
    module = part_of(__name__, name)
    if module is None:
        return AsJson()
    found: GamePage = module.PAGE
    return found


def e(value: object) -> str:
    """A value as escaped HTML text."""
    return html.escape(str(value), quote=True)


def when(stamp: str | None) -> str:
    """A stored time as people read it: to the second, in UTC."""
    if not stamp:
        return "–"
    try:
        return clock.parse_time(stamp).strftime("%Y-%m-%d %H:%M:%S UTC")
    except ValueError:
        return stamp


def facts(pairs: Mapping[str, object]) -> str:
    """A definition list of the pairs, escaped."""
    items = "".join(f"<dt>{e(name)}</dt><dd>{e(value)}</dd>" for name, value in pairs.items())
    return f'<dl class="facts">{items}</dl>'
