"""What each logged fact puts in its contest's transparency log, read in the fact's own
transaction: the entries an event makes (an upload, a verdict, a failure, an owner handed on, a
deleted team, a close, an applied rejudge with the verdicts it changed, a settled dispute).
`infra.sql.transparency` numbers them into leaves in the same transaction."""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Row, and_, bindparam, select

from core import clock
from core.errors import read_failure
from core.events import EventType
from core.freeze import freeze_pending, frozen
from core.freeze import sealed as sealed_verdict
from core.records import Contest
from infra.sql.games import rows_of
from infra.sql.schema import contests, log_heads, results, submissions

# The contests of a transaction's logged events, built once: each call binds its values.
_CONTESTS = select(contests).where(contests.c.id.in_(bindparam("ids", expanding=True)))


@dataclass(frozen=True)
class Entry:
    """One entry of a contest's log, before it is given its leaf."""

    contest_id: str
    fields: dict[str, Any]
    sealed: bool = False  # hidden from the public while the contest is frozen
    submission_id: str | None = None


def entries_for(
    conn: Connection, facts: Sequence[dict[str, Any]]
) -> list[tuple[dict[str, Any], list[Entry]]]:
    """Each logged event of one transaction with the entries its fact makes, in order; what
    they are made with (the contests, receipt times, live verdicts) is read once for all."""
    found = conn.execute(
        _CONTESTS, {"ids": sorted({event["contest"] for event in facts})}
    ).mappings()
    held = {row["id"]: Contest(**row) for row in found}
    now = clock.now()
    frozen_now = {cid for cid, contest in held.items() if frozen(contest, now)}
    # Receipt times where a freeze is set and not thawed: whether a verdict is sealed
    # must not hang on this host's clock (`core.freeze.sealed`).
    freezing = {cid for cid, contest in held.items() if freeze_pending(contest)}
    context = _Context(
        now=now,
        frozen=frozen_now,
        received=_received(
            conn,
            {e["submission"] for e in facts if e["contest"] in freezing and e.get("submission")},
        ),
        verdicts=_live_verdicts(conn, facts, held),
    )
    made: list[tuple[dict[str, Any], list[Entry]]] = []
    for event in facts:
        contest = held.get(event["contest"])
        if contest is not None:
            made.append((event, _entries_of(conn, event, contest, context)))
    return made


@dataclass(frozen=True)
class _Context:
    """What the entries of one transaction's events are made with, read once for them all."""

    now: str
    frozen: set[str]  # the contests frozen now
    received: Mapping[str, str]  # receipt times of their submissions
    verdicts: Mapping[str, dict[str, Any]]  # the verdict entry of each live result judged


def _entries_of(
    conn: Connection, event: Mapping[str, Any], contest: Contest, context: _Context
) -> list[Entry]:
    """The log entries one event's fact makes: none, one, or (an applied rejudge) one and a
    verdict for each result it changed."""
    kind, cid, sid = event["type"], contest.id, event.get("submission")
    is_frozen = cid in context.frozen
    sealed = sid is not None and sealed_verdict(contest, context.received.get(sid))
    if kind in (EventType.SUBMISSION_STORED, EventType.SUBMISSION_COPIED):
        fields = {
            "type": "upload",
            "submission": sid,
            "team": event["team"],
            "sha256": event["sha256"],
            "size": event["size"],
            "received_at": event["received_at"],
        }
        return [Entry(cid, fields, submission_id=sid)]
    if kind is EventType.SUBMISSION_JUDGED:
        verdict = context.verdicts.get(sid or "")
        return [_entry(cid, verdict, sealed, sid)] if verdict is not None else []
    if kind is EventType.SUBMISSION_FAILED:
        failure = read_failure(event.get("reason"))
        fields = {
            "type": "failed",
            "submission": sid,
            "reason": failure[0].value if failure else "judging_failed",
        }
        if event.get("rejudge"):
            fields["rejudge"] = event["rejudge"]
        sealed = sealed or (is_frozen and bool(event.get("rejudge")))
        return [_entry(cid, fields, sealed, sid)]
    if kind is EventType.SUBMISSION_HANDED_ON:
        owner = {
            "type": "owner",
            "submission": sid,
            "team": event["team"],
            "received_at": event["received_at"],
            "sha256": event["sha256"],
        }
        return [Entry(cid, owner, False, sid)]
    if kind is EventType.TEAM_DELETED:
        return [Entry(cid, {"type": "team_deleted", "team": event["team"]})]
    if kind is EventType.CONTEST_CLOSED:
        return _close(conn, cid, event.get("closes_at") or context.now)
    if kind is EventType.REJUDGE_APPLIED:
        return _applied(conn, event, contest, is_frozen)
    if kind is EventType.DISPUTE_SETTLED:  # changes what counts: sealed while frozen
        settled = {"type": "settled", "submission": sid, "match": event["match"]}
        return [_entry(cid, settled, is_frozen, sid)]
    return []


def _entry(contest_id: str, fields: dict[str, Any], sealed: bool, sid: str | None = None) -> Entry:
    """An entry; a sealed one carries a random nonce, so its leaf hash, public in the tiles
    while it is withheld, does not give away which of its few possible verdicts it holds."""
    if sealed:
        fields = {**fields, "nonce": secrets.token_hex(16)}
    return Entry(contest_id, fields, sealed, sid)


def _live_verdicts(
    conn: Connection, facts: Sequence[Mapping[str, Any]], held: Mapping[str, Contest]
) -> dict[str, dict[str, Any]]:
    """The verdict entry of each live result judged in this transaction, read in one query
    (and one of each game's): a result enters the standings only under its contest's
    ruleset as it is now."""
    wanted = {
        event["submission"]: held[event["contest"]]
        for event in facts
        if event["type"] is EventType.SUBMISSION_JUDGED and event["contest"] in held
    }
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
        == (wanted[row.submission_id].lexicon_id, wanted[row.submission_id].layout_id)
    ]
    by_game: dict[str, list[Row[Any]]] = {}
    for row in rows:
        by_game.setdefault(wanted[row.submission_id].game, []).append(row)
    fields: dict[int, dict[str, Any]] = {}
    for name, own in by_game.items():
        fields.update(rows_of(name).log_results(conn, own))
    return {
        row.submission_id: _verdict(
            row.submission_id,
            (row.lexicon_id, row.layout_id),
            row.judge_version,
            fields.get(row.id),
            row.match_key,
        )
        for row in rows
    }


def _verdict(
    sid: str,
    ruleset: tuple[str, str],
    judge_version: str,
    fields: dict[str, Any] | None,
    match: str | None = None,
) -> dict[str, Any]:
    """A verdict entry; a game log's names its match, so the standings the log implies treat
    rival logs of one game as the served ones do (`core.disputes`), and is sealed with it."""
    verdict = {
        "type": "verdict",
        "submission": sid,
        "lexicon": ruleset[0],
        "layout": ruleset[1],
        "judge_version": judge_version,
        "result": fields,
    }
    return verdict if match is None else {**verdict, "match": match}


def _applied(
    conn: Connection, event: Mapping[str, Any], contest: Contest, is_frozen: bool
) -> list[Entry]:
    """The run's entry, then a verdict for each submission whose result under the new
    ruleset differs from its result under the old one (or that had none), by id."""
    run_id, new = event["rejudge"], (event["lexicon"], event["layout"])
    old = (event["from_lexicon"], event["from_layout"])
    head = {"type": "rejudge", "run": run_id, "lexicon": new[0], "layout": new[1]}
    entries = [_entry(contest.id, head, is_frozen)]
    before, after = _results_under(conn, contest, old), _results_under(conn, contest, new)
    for sid in sorted(after):
        version, fields, match = after[sid]
        if before.get(sid, (None, None, None))[1] != fields:
            verdict = {**_verdict(sid, new, version, fields, match), "rejudge": run_id}
            entries.append(_entry(contest.id, verdict, is_frozen, sid))
    return entries


def _results_under(
    conn: Connection, contest: Contest, ruleset: tuple[str, str]
) -> dict[str, tuple[str, dict[str, Any] | None, str | None]]:
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


def _close(conn: Connection, contest_id: str, closes_at: str) -> list[Entry]:
    """The close, once: a contest closed early by its organiser is not closed again by the
    clock."""
    closed = conn.execute(
        select(log_heads.c.closed).where(log_heads.c.contest_id == contest_id)
    ).scalar()
    if closed:
        return []
    return [Entry(contest_id, {"type": "close", "closes_at": closes_at})]


def _received(conn: Connection, submission_ids: set[str]) -> dict[str, str]:
    if not submission_ids:
        return {}
    rows = conn.execute(
        select(submissions.c.id, submissions.c.received_at).where(
            submissions.c.id.in_(submission_ids)
        )
    )
    return {sid: received_at for sid, received_at in rows}
