"""Disputed games in SQL (`core.disputes`): each game's rival valid logs as its game reads them
(`infra.sql.games`), who uploaded each, and the organiser's settlements (`dispute_settlements`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, and_, delete, select

from core import clock
from core.disputes import Dispute, DisputedLog, Settlement, check_settlement, settling
from core.records import Contest
from infra.sql.base import StoreBase, insert_all
from infra.sql.games import rows_of
from infra.sql.schema import contests, dispute_settlements, submission_copies, submissions

_S = dispute_settlements.c


class SqlDisputes(StoreBase):
    """`core.disputes.DisputeStore` in SQL."""

    def disputes(self, contest: Contest) -> list[Dispute]:
        """The contest's disputed games under its live ruleset, by match key, each log with
        the teams that uploaded it."""
        with self.read() as conn:
            logs = rows_of(contest.game).disputed(conn, contest.id)
            teams = parties(conn, [log["submission"] for log in logs])
        by_match: dict[str, list[DisputedLog]] = {}
        for log in logs:
            by_match.setdefault(log["match"], []).append(
                DisputedLog(
                    submission=log["submission"],
                    teams=frozenset(teams.get(log["submission"], ())),
                    received_at=log["received_at"],
                    winners=tuple(log["winners"]),
                )
            )
        return [Dispute(contest.id, match, tuple(own)) for match, own in sorted(by_match.items())]

    def settle(self, contest: Contest, match: str, chosen: str, by: str) -> Settlement:
        """Choose `chosen` among the logs of a disputed game: every other log of the game is
        passed over in its favour, in one transaction with a `dispute.settled` event (and its
        transparency log entry). The contest's row is locked first (on PostgreSQL), so two
        settlements of one contest take turns."""
        with self.write() as (conn, pending):
            conn.execute(
                select(contests.c.id).where(contests.c.id == contest.id).with_for_update()
            ).first()
            valid = rows_of(contest.game).match_verdicts(conn, contest.id, match)
            others = check_settlement(contest.id, match, valid, chosen)
            before = _passed_over(conn, contest.id, match)
            settlement, event = settling(contest.id, match, chosen, others, valid, before, by)
            if event is None:
                return settlement
            now = clock.now()
            conn.execute(
                delete(dispute_settlements).where(
                    and_(_S.contest_id == contest.id, _S.match_key == match)
                )
            )
            insert_all(
                conn,
                dispute_settlements,
                [
                    {
                        "submission_id": sid,
                        "chosen_id": chosen,
                        "contest_id": contest.id,
                        "match_key": match,
                        "settled_at": now,
                        "settled_by": by,
                    }
                    for sid in others
                ],
            )
            pending.append(event)
        return settlement


def _passed_over(conn: Connection, contest_id: str, match: str) -> dict[str, str]:
    """Each log of the game passed over by its settlement, with the log chosen over it."""
    rows = conn.execute(
        select(_S.submission_id, _S.chosen_id).where(
            and_(_S.contest_id == contest_id, _S.match_key == match)
        )
    )
    return {sid: chosen for sid, chosen in rows}


def parties(conn: Connection, submission_ids: Sequence[str]) -> dict[str, set[str]]:
    """The teams that uploaded each submission: its owner and every team with a copy."""
    ids = list(submission_ids)
    found: dict[str, set[str]] = {sid: set() for sid in ids}
    if not ids:
        return found
    queries: list[Any] = [
        select(submissions.c.id, submissions.c.team_id).where(submissions.c.id.in_(ids)),
        select(submission_copies.c.submission_id, submission_copies.c.team_id).where(
            submission_copies.c.submission_id.in_(ids)
        ),
    ]
    for query in queries:
        for sid, team_id in conn.execute(query):
            found[sid].add(team_id)
    return found
