"""Teams ranked by their best judged score, with when they sent it, and a chart of the best
score over contest time of the leading teams: the page part of Wordytaire and of any game
whose standings are a team ranking (`entries`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from api.pages import chart
from api.pages.games.words import StandingsWords
from api.pages.layout import e, seconds_between, when
from api.services import Services
from core import freeze
from core.records import Contest

CHART_TEAMS = 8  # the leading teams the chart follows
CHART_STEP_S = 300  # the lines' ends move on by this much
HISTORY_MOST = 1000  # a team's uploads the chart reads (its first ones, in id order)


class TeamRanked:
    words = StandingsWords(
        leaderboard="each team's best score, ranked",
        scores=("score", "scores"),
        ranks=("rank", "ranks"),
        preview="the scores and ranks that change, team by team",
    )

    def lists(self, board: Mapping[str, Any]) -> str:
        entries = board.get("entries", [])
        if not entries:
            return '<p class="empty">No judged upload counts yet.</p>'
        rows = "".join(
            f'<tr><td class="num">{int(entry["rank"]):,}</td><th scope="row">{e(entry["team"])}'
            f'</th><td class="num">{int(entry["score"]):,}</td>'
            f"<td>{when(entry.get('received_at'))}</td></tr>"
            for entry in entries
        )
        return (
            '<div class="scroll" tabindex="0" role="region" aria-label="Ranking">'
            '<table class="board"><caption>Ranking: each team\'s best judged score</caption>'
            '<thead><tr><th scope="col" class="num">Rank</th><th scope="col">Team</th>'
            '<th scope="col" class="num">Best score</th><th scope="col">When</th></tr></thead>'
            f"<tbody>{rows}</tbody></table></div>"
        )

    def chart(self, svc: Services, contest: Contest, board: Mapping[str, Any], now: str) -> str:
        """The best score over contest time of the leading teams, from their judged uploads
        the public board counts: while frozen, those received before the freeze alone; and
        none while a rejudge applied during the freeze holds the public board to the ruleset
        it replaced (the live results are then not the public's)."""
        top = list(board.get("entries", []))[:CHART_TEAMS]
        if not top:
            return ""
        cut = freeze.public_cut(contest, now)
        if cut is not None and cut[0] != (contest.lexicon_id, contest.rules_id):
            return '<p class="note">The chart shows again at the thaw.</p>'
        before = cut[1] if cut is not None else None
        ids = {team.name: team.id for team in svc.store.contest_teams(contest.id)}
        uploads = {
            entry["team"]: [
                line
                for line in svc.store.results_page(contest.id, "", HISTORY_MOST, ids[entry["team"]])
                if line.result_id is not None and (before is None or line.received_at < before)
            ]
            for entry in top
            if entry["team"] in ids
        }
        result_ids = [line.result_id for lines in uploads.values() for line in lines]
        fields = svc.store.result_fields(contest.game, [r for r in result_ids if r is not None])
        series = []
        for name, lines in uploads.items():
            steps: list[tuple[float, float]] = []
            for line in sorted(lines, key=lambda line: line.received_at):
                score = (fields.get(line.result_id or -1) or {}).get("score")
                if isinstance(score, int | float) and (not steps or score > steps[-1][1]):
                    steps.append((seconds_between(contest.opens_at, line.received_at), score))
            series.append(chart.Series(name, steps))
        series = [s for s in series if s.steps]
        latest = max((s.steps[-1][0] for s in series), default=0.0)
        # The lines run on to now, or to the close, by whole steps of CHART_STEP_S: a chart
        # drawn again from the same data is the same chart, so the page's stream sends it
        # again at most once a step when nothing else changes.
        drawn_to = seconds_between(contest.opens_at, min(now, contest.closes_at))
        until = max(latest, drawn_to - drawn_to % CHART_STEP_S)
        names = ", ".join(s.name for s in series)
        return chart.step_chart(
            "best-over-time",
            f"Best score over contest time, the leading {len(series)} teams",
            f"A step line per team ({names}): its best judged score from the contest's start on.",
            series,
            seconds_between(contest.opens_at, contest.closes_at),
            "close",
            until,
        )


PAGE = TeamRanked()
