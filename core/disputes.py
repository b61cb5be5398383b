"""Rival logs of one game, and the organiser's settlement of a disputed one.

A game whose uploads name their players (a Crosstiles log) is known by its seed and players
(`Submission.match_key`). Every log with that key is stored and judged, whoever sent it first:
a club that knows a game's seed and players cannot block the real log by uploading a spoilt one
first. Under a ruleset the logs of one game then stand so:

- an invalid or unfinished log counts for nothing, and never stands in a valid one's way: it
  stays its uploader's submission, listed among the invalid logs with its reason;
- one valid log: it is the game, and counts;
- two or more valid logs that disagree: the game is **disputed**. None counts (no standings
  rows from any) until the organiser settles it by choosing one; the others are then passed
  over in its favour, and it counts.

A settled dispute stays settled: a valid log uploaded later (before the close) is not passed
over by it, so it disputes the game again with the chosen one, and the organiser settles
again. A settlement holds under every ruleset: if a rejudge makes the chosen log invalid, the
logs passed over in its favour are as if never settled (one valid log left counts; several
are disputed again). Settling is no upload: it is allowed after the close, and while the
contest is frozen.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from core.errors import Conflict, Invalid, NotAllowed, NotFound
from core.events import DisputeSettled
from core.records import Contest, Team


@dataclass(frozen=True)
class DisputedLog:
    """A valid log of a disputed game: who uploaded it (its first uploader and every team
    that sent a copy), when it was received, and whom it makes the winners."""

    submission: str
    teams: frozenset[str]  # team ids
    received_at: str
    winners: tuple[str, ...]


@dataclass(frozen=True)
class Dispute:
    """A game with rival valid logs under the live ruleset, none of which counts."""

    contest_id: str
    match: str
    logs: tuple[DisputedLog, ...]

    def party(self, team_id: str) -> bool:
        """Whether the team uploaded one of the game's rival logs."""
        return any(team_id in log.teams for log in self.logs)


@dataclass(frozen=True)
class Settlement:
    """A settled game: the log chosen, those passed over in its favour, and whether this
    settlement changed anything (settling again as settled already records nothing)."""

    contest_id: str
    match: str
    chosen: str
    passed_over: tuple[str, ...]
    changed: bool


class DisputeStore(Protocol):
    """The disputed games of a contest, and their settlement."""

    def disputes(self, contest: Contest) -> list[Dispute]: ...
    # In one transaction: the game's logs read, `check_settlement` applied, the chosen log's
    # rivals passed over in its favour, a `dispute.settled` event (and its log entry) written.
    def settle(self, contest: Contest, match: str, chosen: str, by: str) -> Settlement: ...


def counting(valid: Mapping[str, bool | None], passed_over: Mapping[str, str]) -> set[str]:
    """The logs of one game that count: `valid` holds each log's verdict (None: not judged),
    `passed_over` the log each passed-over one was passed over for. A valid log counts when
    every other valid log is passed over in its favour (so at most one does)."""
    rivals = [sid for sid, ok in valid.items() if ok]
    return {
        sid
        for sid in rivals
        if all(passed_over.get(other) == sid for other in rivals if other != sid)
    }


def disputed(valid: Mapping[str, bool | None], passed_over: Mapping[str, str]) -> set[str]:
    """The logs of one game held disputed: valid, none of the game's logs counting, and not
    passed over for a log still valid (empty when one log counts, or none is valid)."""
    if counting(valid, passed_over):
        return set()
    rivals = {sid for sid, ok in valid.items() if ok}
    held = {sid for sid in rivals if passed_over.get(sid) not in rivals}
    return held if len(rivals) > 1 else set()


def check_settlement(
    contest_id: str, match: str, valid: Mapping[str, bool | None], chosen: str
) -> list[str]:
    """The logs a settlement choosing `chosen` passes over (every other log of the game), or
    why it cannot be made: NotFound for a log that is not of this game, Conflict for a log
    not judged yet or a game with no rival valid log, Invalid for an invalid log."""
    if chosen not in valid:
        if not valid:
            raise NotFound(f"contest {contest_id} has no game with match key {match[:64]!r}")
        raise NotFound(f"submission {chosen[:64]!r} is not a log of game {match} in {contest_id}")
    if valid[chosen] is None:
        raise Conflict(f"submission {chosen} is not judged yet: settle the game once it is")
    if not valid[chosen]:
        raise Invalid(f"submission {chosen} is an invalid log: only a valid log can be chosen")
    if not any(ok for sid, ok in valid.items() if sid != chosen):
        raise Conflict(f"game {match} has no other valid log: there is nothing to settle")
    return sorted(sid for sid in valid if sid != chosen)


def settling(
    contest_id: str,
    match: str,
    chosen: str,
    others: list[str],
    valid: Mapping[str, bool | None],
    before: Mapping[str, str],
    by: str,
) -> tuple[Settlement, DisputeSettled | None]:
    """The settlement choosing `chosen` over `others` (`check_settlement`'s), given the game's
    verdicts and what it had passed over (`before`, each log with the one chosen over it):
    unchanged, with no event, where the game stands so already; else changed, with its
    `dispute.settled` event."""
    passed_over = tuple(others)
    if counting(valid, before) == {chosen} and all(before.get(sid) == chosen for sid in others):
        return Settlement(contest_id, match, chosen, passed_over, changed=False), None
    event = DisputeSettled(
        contest=contest_id, submission=chosen, match=match, passed_over=passed_over, by=by
    )
    return Settlement(contest_id, match, chosen, passed_over, changed=True), event


def visible(disputes: list[Dispute], contest: Contest, team: Team | None) -> list[Dispute]:
    """The disputes a caller may see: the organiser (`team` None) every one, a team those it
    is party to, of its own contest only (NotAllowed for another contest's)."""
    if team is None:
        return disputes
    if team.contest_id != contest.id:
        raise NotAllowed(f"team {team.id} may read the disputes of its own contest only")
    return [dispute for dispute in disputes if dispute.party(team.id)]
