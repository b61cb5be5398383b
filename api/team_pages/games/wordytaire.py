"""Wordytaire on the team page: a result as its score and line counts; a report as its total,
its counts by reason, and each illegal line with its reason in words, each run of lines that
fail alike folded into one row (as `tilejudge report --runs` prints them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from api.team_pages.games import GamePage, e, facts

ROWS_SHOWN = 1000  # illegal rows (runs folded) on the page; the JSON holds them all
# SPEC's reason codes in words, in the order its checks run.
REASONS = {
    "malformed": "not a move: five fields x1 y1 x2 y2 word were expected",
    "bad_letters": "the word holds something other than the letters a to z",
    "too_short": "the move covers a single cell",
    "bad_direction": "the move runs neither right nor down",
    "length_mismatch": "the cells covered do not match the word's length",
    "not_in_dictionary": "the word is not in the contest's word list",
    "must_cover_origin": "the first word must cover the origin (0, 0)",
    "not_connected": "the word touches no tile already on the board",
    "conflict": "the word crosses a tile holding another letter",
    "no_new_tiles": "the move places no new tile",
    "bag_empty": "the bag holds too few of the letters the move places",
}


class WordytairePage:
    def result_text(self, fields: Mapping[str, Any]) -> str:
        score, legal, illegal = fields.get("score"), fields.get("legal"), fields.get("illegal")
        return f"{score} points, {legal} legal and {illegal} illegal lines"

    def report_html(self, report: Mapping[str, Any]) -> str:
        head = facts(
            {
                "total": f"{report.get('total')} points",
                "legal lines": report.get("legal"),
                "illegal lines": report.get("illegal"),
                "tiles placed": report.get("tiles_placed"),
            }
        )
        return head + _reasons(report.get("reasons") or {}) + _illegal(report.get("lines") or [])


def _reasons(counts: Mapping[str, int]) -> str:
    if not counts:
        return '<h2>Counts by reason</h2><p class="empty">no illegal line</p>'
    rows = "".join(
        f"<tr><td><code>{e(code)}</code></td><td>{e(REASONS.get(code, code))}</td>"
        f'<td class="num">{e(f"{count:,}")}</td></tr>'
        for code, count in counts.items()
    )
    return (
        '<h2>Counts by reason</h2><div class="table-wrap"><table id="reasons">'
        '<thead><tr><th>reason</th><th>what it means</th><th class="num">lines</th></tr>'
        f"</thead><tbody>{rows}</tbody></table></div>"
    )


def _illegal(lines: list[Mapping[str, Any]]) -> str:
    illegal = [line for line in lines if not line.get("ok")]
    if not illegal:
        return ""
    rows = "".join(_row(line) for line in illegal[:ROWS_SHOWN])
    more = ""
    if len(illegal) > ROWS_SHOWN:
        more = (
            f'<p class="caption">The first {ROWS_SHOWN:,} of {len(illegal):,} rows: the JSON '
            "report holds them all.</p>"
        )
    return (
        f"<h2>Illegal lines <small>{len(illegal):,} rows</small></h2>"
        '<div class="table-wrap"><table id="illegal"><thead><tr><th>lines</th>'
        "<th>reason</th><th>detail</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></div>{more}"
    )


def _row(line: Mapping[str, Any]) -> str:
    where = f"line {line.get('line')}"
    css = ""
    if "count" in line:  # a run of lines that fail alike, folded
        where = f"lines {line.get('line')}–{line.get('through')} ({line.get('count')} lines)"
        css = ' class="run"'
    reason = str(line.get("reason", ""))
    return (
        f"<tr{css}><td>{e(where)}</td><td>{e(REASONS.get(reason, reason))} "
        f"<code>{e(reason)}</code></td><td>{e(line.get('detail', ''))}</td></tr>"
    )


PAGE: GamePage = WordytairePage()
