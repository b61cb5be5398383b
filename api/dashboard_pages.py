"""The dashboard's pages written on the server: a contest's leaderboard (with its disputed games
and their settle buttons) and what a rejudge run changes, in the dashboard's look, from the data
their JSON routes answer.

Every value is escaped here: team names, titles and reasons come from teams and organisers.
Tables are drawn from the rows' own keys, so each game's standings and changes show in their
own columns without this module knowing any game.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

ROWS_SHOWN = 2000  # a table's rows on a page; the JSON holds them all
STYLESHEET = "/dashboard/static/dashboard.css"
# Headings of the lists the JSON routes answer; any other list is headed by its key.
HEADINGS = {
    "entries": "Ranking",
    "players": "Players",
    "invalid": "Invalid uploads",
    "changed": "Results that change",
    "rank_changes": "Ranks that change",
}


def page(title: str, body: str, *, json_url: str) -> str:
    """A whole page: the dashboard's header, a link back to it and to the JSON, then `body`
    (HTML already escaped)."""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)} · tilejudge</title><link rel="icon" href="data:,">
<link rel="stylesheet" href="{STYLESHEET}"></head>
<body class="subpage">
<header class="top"><div class="brand">tilejudge <span>operations</span></div>
<nav class="meta"><a href="/dashboard">← dashboard</a><a href="{_e(json_url)}" rel="alternate"
type="application/json">as JSON</a></nav></header>
<main><article class="panel page-panel">
<h1>{_e(title)}</h1>
{body}
</article></main></body></html>"""


def leaderboard_body(board: Mapping[str, Any], contest_title: str) -> str:
    facts = {"contest": board.get("contest"), "title": contest_title, "game": board.get("game")}
    return facts_list(facts) + lists_of(board)


def disputes_body(contest: str, disputes: Sequence[Mapping[str, Any]]) -> str:
    """The contest's disputed games (`GET /v1/contests/{contest}/disputes`): each game's
    rival valid logs, each with a plain form that settles the game for it (no script: the
    page's policy allows none but the dashboard's own file)."""
    head = f"<h2>Disputed games <small>{len(disputes):,}</small></h2>"
    if not disputes:
        return f'{head}<p class="empty" data-field="disputes">none</p>'
    why = (
        '<p class="caption">Rival valid logs of one game (the same seed and players) count for '
        "no one until one is chosen; the others are then passed over.</p>"
    )
    games = "".join(_dispute(contest, dispute) for dispute in disputes[:ROWS_SHOWN])
    return head + why + games


def _dispute(contest: str, dispute: Mapping[str, Any]) -> str:
    match = str(dispute.get("match", ""))
    action = (
        f"/dashboard/contests/{quote(contest, safe='')}/disputes/{quote(match, safe='')}/settle"
    )
    rows = "".join(
        "<tr>"
        f"<td>{_e(str(log.get('submission')))}</td><td>{_e(shown(log.get('teams')))}</td>"
        f"<td>{_e(str(log.get('received_at')))}</td><td>{_e(shown(log.get('winners')))}</td>"
        f'<td><form method="post" action="{_e(action)}">'
        f'<input type="hidden" name="submission" value="{_e(str(log.get("submission")))}">'
        '<button type="submit" class="link">choose</button></form></td>'
        "</tr>"
        for log in dispute.get("logs", [])
    )
    return (
        f'<h3>game {_e(match[:16])}…</h3><div class="table-wrap">'
        f'<table class="table" data-field="disputes" data-match="{_e(match)}"><thead><tr>'
        "<th>submission</th><th>teams</th><th>received at</th><th>winners</th><th>settle</th>"
        f"</tr></thead><tbody>{rows}</tbody></table></div>"
    )


def rejudge_body(run: Mapping[str, Any], names: Mapping[str, str | None]) -> str:
    """A run's figures and rulesets (`names`: its word lists' and layouts' names, by the keys
    of the run's JSON), then its changes once it has them."""
    facts = {
        "contest": run.get("contest"),
        "state": run.get("state"),
        "mode": run.get("mode"),
        "judged": f"{run.get('done', 0):,} / {run.get('total', 0):,}",
        "carried over unchanged": run.get("carried"),
        "word list": _change(run, names, "from_lexicon", "lexicon"),
        "layout": _change(run, names, "from_layout", "layout"),
        "started": run.get("created_at"),
        "finished": run.get("finished_at"),
    }
    if run.get("frozen_at"):
        facts["changes recorded"] = run["frozen_at"]
    if run.get("preview"):
        return facts_list(facts) + lists_of(run)
    if run.get("state") == "running":
        why = "What changes is counted once every submission is judged under the new rules."
    else:
        why = "What this run changed was not recorded: it was applied before changes were kept."
    return facts_list(facts) + f'<p class="caption" data-field="pending">{_e(why)}</p>'


def facts_list(facts: Mapping[str, Any]) -> str:
    items = "".join(
        f"<dt>{_e(name)}</dt><dd>{_e(shown(value))}</dd>" for name, value in facts.items()
    )
    return f'<dl class="facts">{items}</dl>'


def lists_of(data: Mapping[str, Any]) -> str:
    """A table under its heading for each list of rows in `data`, in the JSON's order."""
    return "".join(
        section(key, value)
        for key, value in data.items()
        if isinstance(value, list) and all(isinstance(row, Mapping) for row in value)
    )


def section(key: str, rows: list[Mapping[str, Any]]) -> str:
    heading = HEADINGS.get(key, key.replace("_", " ").capitalize())
    head = f"<h2>{_e(heading)} <small>{len(rows):,}</small></h2>"
    if not rows:
        return f'{head}<p class="empty" data-field="{_e(key)}">none</p>'
    more = ""
    if len(rows) > ROWS_SHOWN:
        more = (
            f'<p class="caption">The first {ROWS_SHOWN:,} of {len(rows):,}: the JSON holds '
            "them all.</p>"
        )
    return head + table(key, rows[:ROWS_SHOWN]) + more


def table(key: str, rows: list[Mapping[str, Any]]) -> str:
    columns = list(dict.fromkeys(column for row in rows for column in row))
    numeric = {
        column
        for column in columns
        if all(_is_number(row.get(column)) for row in rows if row.get(column) is not None)
    }
    head = "".join(
        f"<th{_num(column in numeric)}>{_e(column.replace('_', ' '))}</th>" for column in columns
    )
    body = "".join(
        "<tr>"
        + "".join(
            f"<td{_num(column in numeric)}>{_e(shown(row.get(column)))}</td>" for column in columns
        )
        + "</tr>"
        for row in rows
    )
    return (
        f'<div class="table-wrap"><table class="table" data-field="{_e(key)}">'
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
    )


def shown(value: Any) -> str:
    """A JSON value as a cell's text (not yet escaped)."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{round(value, 3):,}"
    if isinstance(value, Mapping):
        return ", ".join(f"{key} {shown(item)}" for key, item in value.items()) or "–"
    if isinstance(value, Iterable) and not isinstance(value, str):
        return ", ".join(shown(item) for item in value) or "–"
    return str(value)


def _change(run: Mapping[str, Any], names: Mapping[str, str | None], old: str, new: str) -> str:
    before, after = _named(run.get(old), names.get(old)), _named(run.get(new), names.get(new))
    return f"{after} (unchanged)" if run.get(old) == run.get(new) else f"{before} → {after}"


def _named(ruleset_id: Any, name: str | None) -> str:
    short = str(ruleset_id or "")[:12]
    return f"{name} ({short})" if name else short or "–"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _num(numeric: bool) -> str:
    return ' class="num"' if numeric else ""


def _e(text: str | None) -> str:
    return html.escape(text or "", quote=True)
