"""What is read of Crosstiles' disputed games (`core.disputes`): the valid logs that count for
nothing because a rival valid log of the same game stands against them, and every log of one
game with its verdict (for a settlement)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, and_, select, true

from infra.sql.games.crosstiles_tables import (
    crosstiles_players,
    crosstiles_results,
    passed_over_for_valid,
    rival,
    settled_for_another,
    under,
)
from infra.sql.schema import contests, results, submissions
from infra.sql.standings import received_before


def disputed_logs(
    conn: Connection,
    contest_id: str,
    ruleset: tuple[str, str] | None = None,
    before: str | None = None,
) -> list[dict[str, Any]]:
    """The contest's valid game logs under its live ruleset (or the one given) held disputed:
    a rival valid log of the same game stands against each, no log of the game counts, and
    it was not passed over by a settlement for a log still valid (a settled dispute stays
    settled: a later rival disputes the game with the chosen log alone); with `before`, of
    those received before then; by game and receipt: each with its game's match key, team, receipt time and
    winners."""
    query = (
        select(
            submissions.c.id,
            submissions.c.match_key,
            submissions.c.team_id,
            submissions.c.received_at,
            results.c.id.label("result_id"),
        )
        .select_from(
            crosstiles_results.join(results, results.c.id == crosstiles_results.c.result_id)
            .join(submissions, submissions.c.id == results.c.submission_id)
            .join(contests, contests.c.id == submissions.c.contest_id)
        )
        .where(
            and_(
                submissions.c.contest_id == contest_id,
                submissions.c.match_key.is_not(None),
                crosstiles_results.c.valid == true(),
                *under(ruleset),
                *received_before(before),
                rival(ruleset, before),
                ~settled_for_another(ruleset, before),
                ~passed_over_for_valid(ruleset, before),
            )
        )
        .order_by(submissions.c.match_key, submissions.c.received_at, submissions.c.id)
    )
    rows = conn.execute(query).all()
    winners = _winners(conn, [r.result_id for r in rows])
    return [
        {
            "submission": r.id,
            "match": r.match_key,
            "team_id": r.team_id,
            "received_at": r.received_at,
            "winners": winners.get(r.result_id, []),
        }
        for r in rows
    ]


def match_verdicts(conn: Connection, contest_id: str, match_key: str) -> dict[str, bool | None]:
    """Every log of one game (its seed and players) in the contest: whether it is valid under
    the live ruleset, None while it has no result under it."""
    query = (
        select(submissions.c.id, crosstiles_results.c.valid)
        .select_from(
            submissions.join(contests, contests.c.id == submissions.c.contest_id)
            .outerjoin(results, and_(results.c.submission_id == submissions.c.id, *under(None)))
            .outerjoin(crosstiles_results, crosstiles_results.c.result_id == results.c.id)
        )
        .where(and_(submissions.c.contest_id == contest_id, submissions.c.match_key == match_key))
    )
    return {r.id: None if r.valid is None else bool(r.valid) for r in conn.execute(query)}


def _winners(conn: Connection, result_ids: Sequence[int]) -> dict[int, list[str]]:
    found: dict[int, list[str]] = {}
    rows = conn.execute(
        select(crosstiles_players.c.result_id, crosstiles_players.c.nick)
        .where(
            and_(
                crosstiles_players.c.result_id.in_(list(result_ids)),
                crosstiles_players.c.win_twelfths > 0,
            )
        )
        .order_by(crosstiles_players.c.result_id, crosstiles_players.c.seat)
    )
    for result_id, nick in rows:
        found.setdefault(result_id, []).append(nick)
    return found
