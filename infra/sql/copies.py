"""Copies of shared submissions: a game another team uploaded first is one submission, and each
later uploader's own bytes are kept beside it (`submission_copies`), so that deleting one club
removes its bytes and leaves a game the others uploaded too, passed to the earliest of them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, and_, delete, insert, select, update

from core import clock
from core.events import Event, SubmissionHandedOn
from core.records import Submission
from core.states import SubmissionState
from core.store_rules import kept_copies
from infra.sql.base import RowsAmong
from infra.sql.games import drop_details
from infra.sql.schema import contests, results, submission_copies, submissions

_HELD_ROWS = RowsAmong("held", (submission_copies.c.submission_id, submission_copies.c.team_id))
_HELD = select(submission_copies.c.submission_id, submission_copies.c.team_id).where(
    _HELD_ROWS.clause
)


@dataclass(frozen=True)
class HandedOn:
    """A shared submission whose uploader was deleted, now another uploader's: judged again
    from that uploader's bytes (its results' reports came from the deleted team's)."""

    submission_id: str
    team_id: str


def keep_copies(
    conn: Connection, pending: list[Event], copies: Sequence[tuple[str, Submission]]
) -> None:
    """Record each team's copy of a submission (by id) it was not the first to send, unless it
    sent one already (its first copy stays)."""
    if not copies:
        return
    wanted = list(dict.fromkeys((sid, upload.team_id) for sid, upload in copies))
    found = conn.execute(_HELD, _HELD_ROWS.values(wanted))
    held = {(r[0], r[1]) for r in _HELD_ROWS.among(found, wanted)}
    rows = []
    for sid, upload, event in kept_copies(copies, held):
        rows.append(
            {
                "submission_id": sid,
                "team_id": upload.team_id,
                "sha256": upload.sha256,
                "size": upload.size,
                "blob_key": upload.blob_key,
                "received_at": upload.received_at,
            }
        )
        pending.append(event)
    if rows:
        conn.execute(insert(submission_copies), rows)


def drop_team_copies(conn: Connection, team_id: str) -> list[str]:
    """Delete the team's copies of submissions others sent first; their blob keys."""
    where = submission_copies.c.team_id == team_id
    keys = list(conn.execute(select(submission_copies.c.blob_key).where(where)).scalars())
    conn.execute(delete(submission_copies).where(where))
    return keys


def hand_on(
    conn: Connection, pending: list[Event], team_id: str
) -> tuple[list[HandedOn], list[str]]:
    """Pass each shared submission the team sent first, that other teams sent too, to the
    earliest of them: the submission takes that team's copy (bytes, hash, size, receipt time)
    and goes back to `stored` to be judged again from it, its result under the contest's live
    ruleset staying (the same game, the same verdict) until the new judging replaces it. Its
    results under other rulesets go (an open rejudge run counts it again once the new judging
    hands it on). Returns what was handed on, and the blob keys of the team's bytes and of the
    reports made from them."""
    owned = select(submissions.c.id).where(
        and_(submissions.c.team_id == team_id, submissions.c.game_key.is_not(None))
    )
    copies = conn.execute(
        select(submission_copies)
        .where(submission_copies.c.submission_id.in_(owned))
        .order_by(
            submission_copies.c.submission_id,
            submission_copies.c.received_at,
            submission_copies.c.team_id,
        )
    ).mappings()
    heirs: dict[str, Any] = {}
    for copy in copies:
        heirs.setdefault(copy["submission_id"], copy)
    handed: list[HandedOn] = []
    keys: list[str] = []
    now = clock.now()
    for sid, heir in heirs.items():
        old = conn.execute(
            select(
                submissions.c.blob_key,
                submissions.c.contest_id,
                contests.c.lexicon_id,
                contests.c.layout_id,
            )
            .join(contests, contests.c.id == submissions.c.contest_id)
            .where(submissions.c.id == sid)
        ).one()
        keys.append(old.blob_key)
        judged = conn.execute(
            select(
                results.c.id, results.c.report_key, results.c.lexicon_id, results.c.layout_id
            ).where(results.c.submission_id == sid)
        ).all()
        keys += [r.report_key for r in judged]
        live = (old.lexicon_id, old.layout_id)
        stale = [r.id for r in judged if (r.lexicon_id, r.layout_id) != live]
        drop_details(conn, stale)
        if stale:
            conn.execute(delete(results).where(results.c.id.in_(stale)))
        conn.execute(
            update(submissions)
            .where(submissions.c.id == sid)
            .values(
                team_id=heir["team_id"],
                sha256=heir["sha256"],
                size=heir["size"],
                blob_key=heir["blob_key"],
                received_at=heir["received_at"],
                state=SubmissionState.STORED,
                state_at=now,
                failure=None,
            )
        )
        conn.execute(
            delete(submission_copies).where(
                and_(
                    submission_copies.c.submission_id == sid,
                    submission_copies.c.team_id == heir["team_id"],
                )
            )
        )
        pending.append(
            SubmissionHandedOn(
                submission=sid,
                contest=old.contest_id,
                team=heir["team_id"],
                from_team=team_id,
                sha256=heir["sha256"],  # its copy, which the submission now is
                received_at=heir["received_at"],
            )
        )
        handed.append(HandedOn(sid, heir["team_id"]))
    return handed, keys
