"""The Contest API's `score` scoreboard (`core.clics`): ranked exactly as tilejudge's
leaderboard ranks, from the judgements the viewer sees."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.clics import (
    ACCEPTED,
    ContestData,
    Sight,
    Viewer,
    abstime,
    game_of,
    judgements_of,
    reltime,
    sight,
    state_object,
)
from core.records import Contest


@dataclass(frozen=True)
class Best:
    """A team's best scoring upload as its viewer sees it, and its counts."""

    score: int
    received_at: str
    submission_id: str
    judged: int
    pending: int


def best_by_team(data: ContestData, seen: Sight) -> dict[str, Best]:
    """Each team's best current score, tilejudge's standings' way: the highest score, ties to
    the earlier receipt, then the smaller submission id; with the team's judged and pending
    counts (uploads the freeze hides count as pending)."""
    found: dict[str, Best] = {}
    counts: dict[str, list[int]] = {}
    for upload in data.uploads:
        tally = counts.setdefault(upload.team_id, [0, 0])
        shown = judgements_of(data.contest, upload, data.by_submission.get(upload.id, ()), seen)
        current = next((j for j in shown if j["current"]), None)
        if current is None:
            tally[1] += 1
            continue
        tally[0] += 1
        if current["judgement_type_id"] != ACCEPTED:
            continue
        mine = (current["score"], upload.received_at, upload.id)
        held = found.get(upload.team_id)
        if held is None or _ahead(mine, (held.score, held.received_at, held.submission_id)):
            found[upload.team_id] = Best(*mine, 0, 0)
    return {
        team: Best(best.score, best.received_at, best.submission_id, *counts[team])
        for team, best in found.items()
    } | {team: Best(0, "", "", *tally) for team, tally in counts.items() if team not in found}


def _ahead(a: tuple[int, str, str], b: tuple[int, str, str]) -> bool:
    return (-a[0], a[1], a[2]) < (-b[0], b[1], b[2])


def scoreboard(data: ContestData, viewer: Viewer, now: str) -> dict[str, Any]:
    """Ranked as tilejudge's leaderboard ranks (`infra.sql.standings.leaderboard_in`): teams
    with a judged upload by best score, ties to the earlier receipt of it (so no two share a
    rank); then, sharing the next rank, by name, the teams with none."""
    contest = data.contest
    best = best_by_team(data, sight(data, now, viewer.full_board))
    ranked = sorted(
        (b for b in best.values() if b.submission_id),
        key=lambda b: (-b.score, b.received_at, b.submission_id),
    )
    team_of = {b.submission_id: team for team, b in best.items() if b.submission_id}
    rows = [_row(contest, i, team_of[b.submission_id], b) for i, b in enumerate(ranked, 1)]
    placed = set(team_of.values())
    rest = sorted((t for t in data.teams if t.id not in placed), key=lambda t: (t.name, t.id))
    empty = Best(0, "", "", 0, 0)
    rows += [_row(contest, len(ranked) + 1, t.id, best.get(t.id, empty)) for t in rest]
    return {
        "time": abstime(now),
        "contest_time": reltime(contest.opens_at, now),
        "state": state_object(contest, now),
        "rows": rows,
    }


def _row(contest: Contest, rank: int, team_id: str, best: Best) -> dict[str, Any]:
    when = reltime(contest.opens_at, best.received_at) if best.submission_id else None
    problem: dict[str, Any] = {
        "problem_id": game_of(contest).problem_id,
        "num_judged": best.judged,
        "num_pending": best.pending,
        "score": best.score,
    }
    if best.score > 0 and when is not None:
        problem["time"] = when
    return {
        "rank": rank,
        "team_id": team_id,
        "score": {"score": best.score, "time": when},
        "problems": [problem],
    }
