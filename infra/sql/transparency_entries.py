"""What each logged fact puts in its contest's transparency log, read in the fact's own
transaction: the contests, receipt times, live verdicts and the results an applied rejudge
compares, read in SQL for the rules of `core.log_entries` to make the entries.
`infra.sql.transparency` numbers them into leaves in the same transaction."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Row, and_, bindparam, select

from core import clock
from core.log_entries import (
    Entry,
    Facts,
    Outcome,
    frozen_now,
    judged_live,
    made,
    receipt_times_wanted,
    verdict,
)
from core.records import Contest
from infra.sql.columns import fields_of
from infra.sql.games import rows_of
from infra.sql.schema import contests, log_heads, results, submissions

__all__ = ["Entry", "entries_for"]

# The contests of a transaction's logged events, built once: each call binds its values.
_CONTESTS = select(contests).where(contests.c.id.in_(bindparam("ids", expanding=True)))


def entries_for(
    conn: Connection, facts: Sequence[dict[str, Any]]
) -> list[tuple[dict[str, Any], list[Entry]]]:
    """Each logged event of one transaction with the entries its fact makes, in order; what
    they are made with (the contests, receipt times, live verdicts) is read once for all."""
    found = conn.execute(
        _CONTESTS, {"ids": sorted({event["contest"] for event in facts})}
    ).mappings()
    held = {row["id"]: Contest(**fields_of(row)) for row in found}
    now = clock.now()
    context = Facts(
        now=now,
        frozen=frozen_now(held, now),
        received=_received(conn, receipt_times_wanted(facts, held)),
        verdicts=_live_verdicts(conn, judged_live(facts, held)),
        closed=lambda contest_id: _closed(conn, contest_id),
        results_under=lambda contest, ruleset: _results_under(conn, contest, ruleset),
    )
    return made(facts, held, context)


def _live_verdicts(conn: Connection, wanted: Mapping[str, Contest]) -> dict[str, dict[str, Any]]:
    """The verdict entry of each live result judged in this transaction, read in one query
    (and one of each game's): a result enters the standings only under its contest's
    ruleset as it is now."""
    if not wanted:
        return {}
    # With each result its game log's match (its seed and players), which rival logs share.
    judged = select(results, submissions.c.match_key).join(
        submissions, submissions.c.id == results.c.submission_id
    )
    rows = [
        row
        for row in conn.execute(judged.where(results.c.submission_id.in_(list(wanted))))
        if (row.lexicon_id, row.layout_id)
        == (wanted[row.submission_id].lexicon_id, wanted[row.submission_id].rules_id)
    ]
    by_game: dict[str, list[Row[Any]]] = {}
    for row in rows:
        by_game.setdefault(wanted[row.submission_id].game, []).append(row)
    fields: dict[int, dict[str, Any]] = {}
    for name, own in by_game.items():
        fields.update(rows_of(name).log_results(conn, own))
    return {
        row.submission_id: verdict(
            row.submission_id,
            (row.lexicon_id, row.layout_id),
            row.judge_version,
            fields.get(row.id),
            row.match_key,
        )
        for row in rows
    }


def _results_under(
    conn: Connection, contest: Contest, ruleset: tuple[str, str]
) -> dict[str, Outcome]:
    """Each of the contest's submissions' result under a ruleset: its judge version, its log
    fields and its match."""
    rows = conn.execute(
        select(results, submissions.c.match_key)
        .join(submissions, submissions.c.id == results.c.submission_id)
        .where(
            and_(
                submissions.c.contest_id == contest.id,
                results.c.lexicon_id == ruleset[0],
                results.c.layout_id == ruleset[1],
            )
        )
    ).all()
    fields = rows_of(contest.game).log_results(conn, rows) if rows else {}
    return {r.submission_id: (r.judge_version, fields.get(r.id), r.match_key) for r in rows}


def _closed(conn: Connection, contest_id: str) -> bool:
    """Whether the contest's close is logged already (by its organiser or the clock)."""
    return bool(
        conn.execute(
            select(log_heads.c.closed).where(log_heads.c.contest_id == contest_id)
        ).scalar()
    )


def _received(conn: Connection, submission_ids: set[str]) -> dict[str, str]:
    if not submission_ids:
        return {}
    rows = conn.execute(
        select(submissions.c.id, submissions.c.received_at).where(
            submissions.c.id.in_(submission_ids)
        )
    )
    return {sid: received_at for sid, received_at in rows}
