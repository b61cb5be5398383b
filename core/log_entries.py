"""The entries each logged fact makes in its contest's transparency log (`core.transparency`):
an upload, a verdict, a failure, an owner handed on, a deleted team, a close, an applied
rejudge with the verdicts it changed, a settled dispute.

Pure: the store that logs a transaction's events reads what the entries are made with (the
contests, receipt times, live verdicts, the results a rejudge compares) its own way, into a
`Facts`, and the rules here make the entries: `infra.sql.transparency_entries` in the
transaction's SQL, `core.fake_logs` from the in-memory database's tables.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.errors import read_failure
from core.events import EventType
from core.freeze import freeze_pending, frozen
from core.freeze import sealed as sealed_verdict
from core.records import Contest

# The events whose facts the log records (those that name a contest).
LOGGED = frozenset(
    {
        EventType.SUBMISSION_STORED,
        EventType.SUBMISSION_COPIED,
        EventType.SUBMISSION_JUDGED,
        EventType.SUBMISSION_FAILED,
        EventType.SUBMISSION_HANDED_ON,
        EventType.TEAM_DELETED,
        EventType.CONTEST_CLOSED,
        EventType.REJUDGE_APPLIED,
        EventType.DISPUTE_SETTLED,
    }
)
# A result as a verdict entry states it: its judge version, the game's log fields (None where
# the store has none) and a game log's match.
Outcome = tuple[str, dict[str, Any] | None, str | None]


@dataclass(frozen=True)
class Entry:
    """One entry of a contest's log, before it is given its leaf."""

    contest_id: str
    fields: dict[str, Any]
    sealed: bool = False  # hidden from the public while the contest is frozen
    submission_id: str | None = None


@dataclass(frozen=True)
class Facts:
    """What the entries of one transaction's events are made with, read once for them all;
    the two look-ups only an apply and a close need are asked when one comes."""

    now: str
    frozen: set[str]  # the contests frozen now
    received: Mapping[str, str]  # receipt times of their submissions (`receipt_times_wanted`)
    verdicts: Mapping[str, dict[str, Any]]  # the verdict entry of each live result judged
    closed: Callable[[str], bool]  # whether a contest's close is logged already
    results_under: Callable[[Contest, tuple[str, str]], Mapping[str, Outcome]]  # by submission


def logged(written: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events of a transaction, as written, whose facts the log records."""
    return [event for event in written if event["type"] in LOGGED and event.get("contest")]


def frozen_now(held: Mapping[str, Contest], now: str) -> set[str]:
    return {cid for cid, contest in held.items() if frozen(contest, now)}


def receipt_times_wanted(facts: Sequence[dict[str, Any]], held: Mapping[str, Contest]) -> set[str]:
    """The submissions whose receipt times decide whether their entries are sealed: those of
    contests whose freeze is set and not thawed (whether a verdict is sealed must not hang on
    this host's clock: `core.freeze.sealed`)."""
    freezing = {cid for cid, contest in held.items() if freeze_pending(contest)}
    return {e["submission"] for e in facts if e["contest"] in freezing and e.get("submission")}


def judged_live(facts: Sequence[dict[str, Any]], held: Mapping[str, Contest]) -> dict[str, Contest]:
    """The submissions judged in these events, each with its contest: their results under the
    contest's ruleset as it is now make verdict entries."""
    return {
        event["submission"]: held[event["contest"]]
        for event in facts
        if event["type"] is EventType.SUBMISSION_JUDGED and event["contest"] in held
    }


def made(
    facts: Sequence[dict[str, Any]], held: Mapping[str, Contest], context: Facts
) -> list[tuple[dict[str, Any], list[Entry]]]:
    """Each logged event (of a contest held) with the entries its fact makes, in order."""
    return [
        (event, entries_of(event, held[event["contest"]], context))
        for event in facts
        if event["contest"] in held
    ]


def entries_of(event: Mapping[str, Any], contest: Contest, context: Facts) -> list[Entry]:
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
        return [entry(cid, verdict, sealed, sid)] if verdict is not None else []
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
        return [entry(cid, fields, sealed, sid)]
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
    if kind is EventType.CONTEST_CLOSED:  # once: a contest closed early is not closed again
        if context.closed(cid):
            return []
        return [Entry(cid, {"type": "close", "closes_at": event.get("closes_at") or context.now})]
    if kind is EventType.REJUDGE_APPLIED:
        return _applied(event, contest, is_frozen, context)
    if kind is EventType.DISPUTE_SETTLED:  # changes what counts: sealed while frozen
        settled = {"type": "settled", "submission": sid, "match": event["match"]}
        return [entry(cid, settled, is_frozen, sid)]
    return []


def entry(contest_id: str, fields: dict[str, Any], sealed: bool, sid: str | None = None) -> Entry:
    """An entry; a sealed one carries a random nonce, so its leaf hash, public in the tiles
    while it is withheld, does not give away which of its few possible verdicts it holds."""
    if sealed:
        fields = {**fields, "nonce": secrets.token_hex(16)}
    return Entry(contest_id, fields, sealed, sid)


def verdict(
    sid: str,
    ruleset: tuple[str, str],
    judge_version: str,
    fields: dict[str, Any] | None,
    match: str | None = None,
) -> dict[str, Any]:
    """A verdict entry; a game log's names its match, so the standings the log implies treat
    rival logs of one game as the served ones do (`core.disputes`), and is sealed with it."""
    found = {
        "type": "verdict",
        "submission": sid,
        "lexicon": ruleset[0],
        "layout": ruleset[1],
        "judge_version": judge_version,
        "result": fields,
    }
    return found if match is None else {**found, "match": match}


def _applied(
    event: Mapping[str, Any], contest: Contest, is_frozen: bool, context: Facts
) -> list[Entry]:
    """The run's entry, then a verdict for each submission whose result under the new
    ruleset differs from its result under the old one (or that had none), by id."""
    run_id, new = event["rejudge"], (event["lexicon"], event["layout"])
    old = (event["from_lexicon"], event["from_layout"])
    head = {"type": "rejudge", "run": run_id, "lexicon": new[0], "layout": new[1]}
    entries = [entry(contest.id, head, is_frozen)]
    before, after = context.results_under(contest, old), context.results_under(contest, new)
    for sid in sorted(after):
        version, fields, match = after[sid]
        if before.get(sid, (None, None, None))[1] != fields:
            changed = {**verdict(sid, new, version, fields, match), "rejudge": run_id}
            entries.append(entry(contest.id, changed, is_frozen, sid))
    return entries
