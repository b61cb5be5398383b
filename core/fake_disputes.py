"""Disputed games in memory (`core.disputes`), for unit tests: the SQL store's rules
(infra/sql/disputes.py) over the tables of an `InMemoryDatabase`, validity read from each live
result's own outcome (its `valid`)."""

from __future__ import annotations

from collections.abc import Callable

from core import clock
from core.disputes import (
    Dispute,
    DisputedLog,
    Settlement,
    check_settlement,
    disputed,
    settling,
)
from core.fake_database import InMemoryDatabase
from core.records import Contest


class InMemoryDisputes(InMemoryDatabase):
    """`InMemoryDatabase` with the settlements table: each passed-over log with the log chosen
    over it, by submission id."""

    def __init__(self, now: Callable[[], str] = clock.now) -> None:
        super().__init__(now)
        self.settlements: dict[str, str] = {}

    def disputes(self, contest: Contest) -> list[Dispute]:
        with self.read("disputes"):
            found = []
            for match in sorted(self._matches(contest.id)):
                valid = self._verdicts(contest.id, match)
                held = disputed(valid, self._passed(valid))
                if held:
                    logs = sorted(
                        (self._log(sid) for sid in held),
                        key=lambda log: (log.received_at, log.submission),
                    )
                    found.append(Dispute(contest.id, match, tuple(logs)))
            return found

    def settle(self, contest: Contest, match: str, chosen: str, by: str) -> Settlement:
        with self.write("settle") as pending:
            valid = self._verdicts(contest.id, match)
            others = check_settlement(contest.id, match, valid, chosen)
            before = self._passed(valid)
            settlement, event = settling(contest.id, match, chosen, others, valid, before, by)
            if event is None:
                return settlement
            self.settlements.pop(chosen, None)
            self.settlements.update({sid: chosen for sid in others})
            pending.append(event)
            return settlement

    def _matches(self, contest_id: str) -> set[str]:
        return {
            s.match_key
            for s in self.submissions.values()
            if s.contest_id == contest_id and s.match_key is not None
        }

    def _verdicts(self, contest_id: str, match: str) -> dict[str, bool | None]:
        """Each log of the game: valid under the live ruleset, or None without a result."""
        found: dict[str, bool | None] = {}
        for s in self.submissions.values():
            if (s.contest_id, s.match_key) == (contest_id, match):
                result = self.live_result(s.id)
                found[s.id] = None if result is None else bool(getattr(result.game, "valid", True))
        return found

    def _passed(self, valid: dict[str, bool | None]) -> dict[str, str]:
        return {sid: self.settlements[sid] for sid in valid if sid in self.settlements}

    def _log(self, sid: str) -> DisputedLog:
        s = self.submissions[sid]
        teams = {s.team_id} | {team for (copied, team) in self.copies if copied == sid}
        result = self.live_result(sid)
        winners = tuple(getattr(result.game, "winners", ())) if result is not None else ()
        return DisputedLog(sid, frozenset(teams), s.received_at, winners)
