"""Crosstiles on the team page: a game log's result as valid with its winners or invalid; its
report as its players and scores, or its failing line and why."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from api.team_pages.games import GamePage, e, facts


class CrosstilesPage:
    def result_text(self, fields: Mapping[str, Any]) -> str:
        if not fields.get("valid"):
            return "invalid game log"
        winners = ", ".join(str(nick) for nick in fields.get("winners") or []) or "nobody"
        return f"valid, {fields.get('turns')} turns, won by {winners}"

    def report_html(self, report: Mapping[str, Any]) -> str:
        error = report.get("error")
        if error is None:
            head = facts(
                {
                    "result": "a valid game log",
                    "turns": report.get("turns"),
                    "winners": ", ".join(map(str, report.get("winners") or [])) or "nobody",
                }
            )
        else:
            head = facts(
                {
                    "result": "an invalid game log",
                    "failing line": error.get("line"),
                    "reason": error.get("reason"),
                    "why": error.get("detail"),
                }
            )
        return head + _players(report.get("players") or [], error is not None)


def _players(players: list[Mapping[str, Any]], so_far: bool) -> str:
    heading = "Scores so far" if so_far else "Players and scores"
    if not players:
        return f'<h2>{heading}</h2><p class="empty">none: the header is not complete</p>'
    rows = "".join(
        f'<tr><td>{e(p.get("nick"))}</td><td class="num">{e(p.get("score"))}</td>'
        f"<td>{'removed' if p.get('removed') else ''}</td></tr>"
        for p in players
    )
    return (
        f'<h2>{heading}</h2><div class="table-wrap"><table id="players"><thead><tr>'
        '<th>player</th><th class="num">score</th><th>note</th></tr></thead>'
        f"<tbody>{rows}</tbody></table></div>"
    )


PAGE: GamePage = CrosstilesPage()
