"""Results as the API shows them (the `core.ports.ResultReads` port): live results, a contest's
results page by page and the event feed (`infra.sql.standings`), and each result and standings
in its game's own shape (`infra.sql.games`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.records import Contest
from infra.sql.games import rows_of
from infra.sql.standings import StandingsMixin


class SqlResultReads(StandingsMixin):
    """`core.ports.ResultReads` in SQL; a game's standings read its leaderboard from it."""

    def result_fields(self, game: str, result_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """The game's own fields of each result (`infra.sql.games`)."""
        return rows_of(game).fields(self, result_ids) if result_ids else {}

    def standings(
        self,
        contest: Contest,
        ruleset: tuple[str, str] | None = None,
        before: str | None = None,
    ) -> dict[str, Any]:
        """The contest's standings under its live ruleset (or the (lexicon id, rules id)
        given), in its game's own shape; with `before`, only of uploads received before that
        time (the public's while frozen, `core.freeze`), and how many came since: `pending`."""
        found = rows_of(contest.game).standings(self, contest.id, ruleset, before)
        if before is None:
            return found
        return {**found, "pending": self.received_since(contest.id, before)}
