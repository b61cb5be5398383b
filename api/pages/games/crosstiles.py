"""Crosstiles' part of the scoreboard page: the players of the contest's valid game logs by
wins, then spread (with their rating and its deviation where the standings carry them), the
games disputed, the invalid logs with the reason each fails, and a chart of the leading
players' wins."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from api.pages import chart
from api.pages.games.words import StandingsWords
from api.pages.layout import e
from api.services import Services
from core.records import Contest

CHART_PLAYERS = 10


class CrosstilesPage:
    words = StandingsWords(
        leaderboard="the players of its valid game logs, ranked, and its invalid logs",
        scores=("game", "games"),
        ranks=("player's standing", "players' standings"),
        preview="the games whose verdict or winners change, and the players whose standing moves",
    )

    def lists(self, board: Mapping[str, Any]) -> str:
        return _players(board) + _disputed(board) + _invalid(board.get("invalid", []))

    def chart(self, svc: Services, contest: Contest, board: Mapping[str, Any], now: str) -> str:
        """Wins of the leading players: the board's own numbers, nothing more read."""
        bars = [(str(p["nick"]), float(p["wins"])) for p in board.get("players", [])]
        bars = bars[:CHART_PLAYERS]
        if not bars:
            return ""
        return chart.bar_chart(
            "wins",
            f"Wins of the leading {len(bars)} players",
            "A bar per player, as long as the games they won (a k-way tie counts 1/k).",
            bars,
        )


def _players(board: Mapping[str, Any]) -> str:
    players = board.get("players", [])
    if not players:
        return '<h2>Players</h2><p class="empty">No valid game counts yet.</p>'
    rated = any("rating" in p for p in players)
    rating_heads = (
        '<th scope="col" class="num">Rating</th><th scope="col" class="num">'
        '<abbr title="rating deviation">RD</abbr></th>'
        if rated
        else ""
    )
    rows = "".join(
        f'<tr><td class="num">{int(p["rank"]):,}</td><th scope="row">{e(p["nick"])}</th>'
        f'<td class="num">{int(p["games"]):,}</td><td class="num">{_wins(p["wins"])}</td>'
        f'<td class="num">{int(p["spread"]):+,}</td>{_rating(p) if rated else ""}</tr>'
        for p in players
    )
    note = board.get("ratings")
    note_html = f'<p class="note">{e(note)}</p>' if isinstance(note, str) and note else ""
    return (
        "<h2>Players</h2>"
        '<div class="scroll" tabindex="0" role="region" aria-label="Players">'
        '<table class="board"><caption>Players by wins, then spread</caption>'
        '<thead><tr><th scope="col" class="num">Rank</th><th scope="col">Player</th>'
        '<th scope="col" class="num">Games</th><th scope="col" class="num">Wins</th>'
        f'<th scope="col" class="num">Spread</th>{rating_heads}</tr></thead>'
        f"<tbody>{rows}</tbody></table></div>{note_html}"
    )


def _rating(player: Mapping[str, Any]) -> str:
    rating, deviation = player.get("rating"), player.get("deviation")
    shown = f"{float(rating):,.0f}" if isinstance(rating, int | float) else "–"
    rd = f"{float(deviation):,.0f}" if isinstance(deviation, int | float) else "–"
    return f'<td class="num">{shown}</td><td class="num">{rd}</td>'


def _wins(wins: object) -> str:
    value = float(wins) if isinstance(wins, int | float) else 0.0
    return f"{value:g}" if value == int(value) else f"{value:.2f}"


def _disputed(board: Mapping[str, Any]) -> str:
    count = board.get("disputed")
    if not isinstance(count, int) or count <= 0:
        return ""
    games = "game" if count == 1 else "games"
    return (
        f'<p class="note">{count:,} disputed {games} (rival valid logs the organiser has '
        "not settled) count for no one.</p>"
    )


def _invalid(invalid: list[Mapping[str, Any]]) -> str:
    if not invalid:
        return ""
    rows = "".join(
        f"<tr><td><code>{e(str(g['submission'])[:12])}</code></td><td>{e(g['team'])}</td>"
        f'<td class="num">{int(g["line"]):,}</td><td><code>{e(g["reason"])}</code></td>'
        f"<td>{e(g.get('detail', ''))}</td></tr>"
        for g in invalid
    )
    return (
        "<h2>Invalid logs</h2>"
        '<div class="scroll" tabindex="0" role="region" aria-label="Invalid logs">'
        '<table class="board"><caption>Uploaded logs that fail, with why</caption>'
        '<thead><tr><th scope="col">Upload</th><th scope="col">Team</th>'
        '<th scope="col" class="num">Line</th><th scope="col">Reason</th>'
        f'<th scope="col">Detail</th></tr></thead><tbody>{rows}</tbody></table></div>'
    )


PAGE = CrosstilesPage()
