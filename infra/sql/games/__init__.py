"""How each game's results are kept and read in SQL beyond the row every result has.

By convention the module `infra.sql.games.<game name>` gives a game's `ROWS` (a `GameRows`):
the tables hanging off a result row, how a judged result's own fields are written and read
back, its standings and what a rejudge preview lists. A game without such a module keeps only
the row every result has (`results`: its score) and ranks teams by their best score
(`TeamRanked`), so a game that needs nothing more is one registration call in `core.games`.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence
from functools import cache
from typing import Any, Protocol

from sqlalchemy import Connection, MetaData, Row, Table, and_, delete, insert, select
from sqlalchemy.sql import Select

from core.games import names, part_of
from core.records import Run
from infra.sql.base import StoreBase
from infra.sql.schema import metadata, results, submissions, teams
from infra.sql.standings import leaderboard_in


class GameRows(Protocol):
    """A game's rows in SQL, and what is read of them."""

    @property
    def tables(self) -> tuple[Table, ...]: ...  # hanging off a result row, by `result_id`
    def put(self, conn: Connection, judged: Sequence[tuple[int, object]]) -> None:
        """The rows of each result (by its row's id) whose detail (`JudgedResult.game`) is
        this game's; others are left alone."""
        ...

    def fields(self, store: StoreBase, result_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """The game's own fields of each result, as the API and the export show them."""
        ...

    # Under the live ruleset or the (lexicon id, rules id) given; with `before`, of the
    # uploads received before that time alone (a frozen board, `core.freeze`).
    def standings(
        self,
        store: StoreBase,
        contest_id: str,
        ruleset: tuple[str, str] | None = None,
        before: str | None = None,
    ) -> dict[str, Any]: ...
    def log_results(self, conn: Connection, rows: Sequence[Row[Any]]) -> dict[int, dict[str, Any]]:
        """Each result (its row of `results`, every column) as its verdict entry in the
        transparency log states it (`core.transparency`): what the standings are computed
        from, nothing of the upload."""
        ...

    # A rejudge preview's two lists, read on an open connection: a read of their own, or the
    # transaction of `apply`, which records them as the run's summary.
    def changes(self, conn: Connection, run: Run) -> list[dict[str, Any]]: ...
    def rank_changes(self, conn: Connection, run: Run) -> list[dict[str, Any]]: ...

    # Rival logs of one game (`core.disputes`), under the live ruleset: the valid ones that
    # count for nothing while disputed (submission, match, team_id, received_at, winners), and
    # every log of one game with whether it is valid (None: not judged under it yet).
    def disputed(self, conn: Connection, contest_id: str) -> list[dict[str, Any]]: ...
    def match_verdicts(
        self, conn: Connection, contest_id: str, match_key: str
    ) -> dict[str, bool | None]: ...


class TeamRanked:
    """A game whose result is the shared row alone: each team ranked by its best score (ties
    to the earlier receipt); a rejudge lists the submissions whose score changes and the teams
    whose rank does."""

    tables: tuple[Table, ...] = ()

    def put(self, conn: Connection, judged: Sequence[tuple[int, object]]) -> None:
        return None

    def disputed(self, conn: Connection, contest_id: str) -> list[dict[str, Any]]:
        return []  # each team's uploads are its own: no rival logs

    def match_verdicts(
        self, conn: Connection, contest_id: str, match_key: str
    ) -> dict[str, bool | None]:
        return {}

    def fields(self, store: StoreBase, result_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        with store.read() as conn:
            rows = conn.execute(
                select(results.c.id, results.c.score).where(results.c.id.in_(list(result_ids)))
            )
            return {r.id: {"score": r.score} for r in rows}

    def standings(
        self,
        store: StoreBase,
        contest_id: str,
        ruleset: tuple[str, str] | None = None,
        before: str | None = None,
    ) -> dict[str, Any]:
        return {"entries": store.leaderboard(contest_id, ruleset, before)}  # type: ignore[attr-defined]

    def log_results(self, conn: Connection, rows: Sequence[Row[Any]]) -> dict[int, dict[str, Any]]:
        return {r.id: {"score": r.score} for r in rows}

    def changes(self, conn: Connection, run: Run) -> list[dict[str, Any]]:
        old, new = results.alias("old"), results.alias("new")
        query: Select[Any] = (
            select(
                submissions.c.id,
                teams.c.name,
                old.c.score.label("old_score"),
                new.c.score.label("new_score"),
            )
            .join(teams, teams.c.id == submissions.c.team_id)
            .join(
                old,
                and_(
                    old.c.submission_id == submissions.c.id,
                    old.c.lexicon_id == run.from_lexicon_id,
                    old.c.layout_id == run.from_rules_id,
                ),
            )
            .join(
                new,
                and_(
                    new.c.submission_id == submissions.c.id,
                    new.c.lexicon_id == run.lexicon_id,
                    new.c.layout_id == run.rules_id,
                ),
            )
            .where(and_(submissions.c.contest_id == run.contest_id, old.c.score != new.c.score))
            .order_by(submissions.c.id)
        )
        return [
            {
                "submission": r.id,
                "team": r.name,
                "old_score": r.old_score,
                "new_score": r.new_score,
            }
            for r in conn.execute(query)
        ]

    def rank_changes(self, conn: Connection, run: Run) -> list[dict[str, Any]]:
        before = {
            e["team"]: e["rank"]
            for e in leaderboard_in(conn, run.contest_id, (run.from_lexicon_id, run.from_rules_id))
        }
        after = {
            e["team"]: e["rank"]
            for e in leaderboard_in(conn, run.contest_id, (run.lexicon_id, run.rules_id))
        }
        return [
            {"team": team, "old_rank": before.get(team), "new_rank": after.get(team)}
            for team in sorted(set(before) | set(after), key=lambda t: (after.get(t) or 10**9, t))
            if before.get(team) != after.get(team)
        ]


TEAM_RANKED = TeamRanked()


@cache
def rows_of(name: str) -> GameRows:
    """The game's rows (Invalid for a game not registered)."""
    module = part_of(__name__, name)
    if module is None:
        return TEAM_RANKED
    found: GameRows = module.ROWS
    return found


def load_all() -> MetaData:
    """The schema with every game's own tables on it (`metadata` of `infra.sql.schema`): each
    module of this package is imported, as Alembic needs to compare or create them all."""
    for found in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{found.name}")
    return metadata


def detail_tables() -> tuple[Table, ...]:
    """Every registered game's tables hanging off result rows."""
    return tuple(table for name in names() for table in rows_of(name).tables)


def put_details(conn: Connection, judged: Sequence[tuple[int, object]]) -> None:
    """Each result's own rows, by its game (results with no detail get none)."""
    if any(detail is not None for _, detail in judged):
        for name in names():
            rows_of(name).put(conn, judged)


def drop_details(conn: Connection, result_ids: Sequence[int] | Select[Any]) -> None:
    """Before their result rows go (or are judged again): the rows that hang off them."""
    if isinstance(result_ids, Sequence) and not result_ids:
        return
    for table in detail_tables():
        conn.execute(delete(table).where(table.c.result_id.in_(result_ids)))


def copy_details(
    conn: Connection, result_ids: Sequence[int], lexicon_id: str, layout_id: str
) -> None:
    """Give results just copied to another ruleset (an affected-only rejudge carries them) the
    rows of the result each was copied from, under (`lexicon_id`, `layout_id`)."""
    if not result_ids:
        return
    old, new = results.alias("old"), results.alias("new")
    pairs = (
        select(new.c.id.label("new_id"), old.c.id.label("old_id"))
        .join(old, old.c.submission_id == new.c.submission_id)
        .where(
            and_(
                new.c.id.in_(result_ids),
                old.c.lexicon_id == lexicon_id,
                old.c.layout_id == layout_id,
            )
        )
        .subquery()
    )
    for table in detail_tables():
        copied = [column for column in table.c if column.name != "result_id"]
        conn.execute(
            insert(table).from_select(
                ["result_id", *(column.name for column in copied)],
                select(pairs.c.new_id, *copied).select_from(
                    table.join(pairs, pairs.c.old_id == table.c.result_id)
                ),
            )
        )
