"""What a rejudge run changes: the preview of a ready or cancelled run, computed again only when
the data it reads has changed, and an applied run's summary as `apply` recorded it."""

from __future__ import annotations

import json
import threading
from typing import Any

from sqlalchemy import Connection, and_, func, or_, select

from core.errors import NotFound
from core.records import Run, RunSummary
from core.states import RejudgeState
from infra.sql.base import Transactions
from infra.sql.games import GameRows, rows_of
from infra.sql.schema import contests, rejudge_summaries, results, submissions

# Runs whose summary a process remembers; more open or recent at once is not expected.
SUMMARIES_KEPT = 64


class SummariesMixin:
    """A run's preview and summary (`infra.sql.rejudges.SqlRejudgeRuns` is made of it)."""

    store: Transactions
    # Each run's summary with the key it was computed under (`_data_key`); both set by
    # `SqlRejudgeRuns.__init__`.
    _summaries: dict[str, tuple[tuple[Any, ...], RunSummary | None]]
    _summaries_lock: threading.Lock

    def changes(self, run: Run) -> list[dict[str, Any]]:
        """What a preview lists as changed between the run's ruleset and the one it replaces,
        by the contest's game, over the data as it is now: the submissions whose score
        differs, or (game logs) the games whose verdict or winners do."""
        with self.store.read() as conn:
            return game_rows(conn, run).changes(conn, run)

    def rank_changes(self, run: Run) -> list[dict[str, Any]]:
        """Who moves between the two rulesets, by the contest's game, over the data as it is
        now: the teams whose rank differs, or (game logs) the players whose standing does."""
        with self.store.read() as conn:
            return game_rows(conn, run).rank_changes(conn, run)

    def summary(self, run: Run) -> RunSummary | None:
        """What the run changes: an applied run's summary as `apply` recorded it (None for a
        run applied before summaries were recorded); a ready or cancelled run's preview of the
        data as it is now; None while it runs.

        A preview is computed again only when the data it reads has changed (`_data_key`): a
        dashboard and a progress bar ask every second, and over a large contest the two
        leaderboards a preview compares cost several times the key's one indexed query."""
        if run.state is RejudgeState.RUNNING:
            return None
        if run.state is RejudgeState.APPLIED:
            key: tuple[Any, ...] = (run.state,)  # recorded once, never changed
        else:
            with self.store.read() as conn:
                key = _data_key(conn, run)
        with self._summaries_lock:
            known = self._summaries.get(run.id)
        if known is not None and known[0] == key:
            return known[1]
        if run.state is RejudgeState.APPLIED:
            found = self._recorded(run.id)
        else:
            # Read after the key: data changing in between costs one more computation, never
            # a stale preview kept under a newer key.
            found = RunSummary(tuple(self.changes(run)), tuple(self.rank_changes(run)))
        with self._summaries_lock:
            if len(self._summaries) >= SUMMARIES_KEPT:
                self._summaries.clear()
            self._summaries[run.id] = (key, found)
        return found

    def _recorded(self, run_id: str) -> RunSummary | None:
        with self.store.read() as conn:
            row = conn.execute(
                select(rejudge_summaries).where(rejudge_summaries.c.run_id == run_id)
            ).first()
        if row is None:
            return None
        return RunSummary(
            tuple(json.loads(row.changed)), tuple(json.loads(row.rank_changes)), row.frozen_at
        )


def game_rows(conn: Connection, run: Run) -> GameRows:
    """The rows of the run's contest's game, which say what its preview lists."""
    game = conn.execute(select(contests.c.game).where(contests.c.id == run.contest_id)).first()
    if game is None:
        raise NotFound(f"no contest {run.contest_id}")
    return rows_of(game.game)


def as_json(rows: list[dict[str, Any]]) -> str:
    return json.dumps(rows, separators=(",", ":"))  # ASCII: a NUL in a name stays escaped


def _data_key(conn: Connection, run: Run) -> tuple[Any, ...]:
    """What a run's summary depends on: the run's own row, and the contest's results under
    the two rulesets it compares (their number, newest id and newest judging: a result added,
    deleted or judged again in place moves one of them; a game's own rows and a submission's
    team move only with its result rows)."""
    rulesets = or_(
        and_(results.c.lexicon_id == run.lexicon_id, results.c.layout_id == run.rules_id),
        and_(
            results.c.lexicon_id == run.from_lexicon_id,
            results.c.layout_id == run.from_rules_id,
        ),
    )
    counted = conn.execute(
        select(func.count(), func.max(results.c.id), func.max(results.c.judged_at))
        .select_from(results.join(submissions, submissions.c.id == results.c.submission_id))
        .where(and_(submissions.c.contest_id == run.contest_id, rulesets))
    ).one()
    return (run.state, run.total, run.done, run.carried, run.updated_at, *counted)
