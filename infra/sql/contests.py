"""Contests in the results store (the `core.ports.ContestStore` port): created, read, closed and
thawed now, each change with its event in the same transaction."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection, RowMapping, insert, select, update

from core import clock
from core.errors import Duplicate, MissingReference
from core.events import ContestCreated
from core.records import Contest
from core.store_rules import ContestChange, closing, thawing
from infra.sql.base import StoreBase
from infra.sql.columns import columns_of, fields_of
from infra.sql.schema import contests


class SqlContests(StoreBase):
    """`core.ports.ContestStore` in SQL."""

    def create_contest(self, contest: Contest) -> Contest:
        try:
            with self.write() as (conn, pending):
                conn.execute(insert(contests).values(**columns_of(contest.__dict__)))
                pending.append(
                    ContestCreated(
                        contest=contest.id,
                        title=contest.title,
                        opens_at=contest.opens_at,
                        closes_at=contest.closes_at,
                        lexicon=contest.lexicon_id,
                        layout=contest.rules_id,
                        game=contest.game,
                        freeze_at=contest.freeze_at,
                        options=contest.options_json() or None,
                    )
                )
        except MissingReference as exc:
            raise MissingReference(
                f"contest {contest.id!r}: its word list {contest.lexicon_id!r} or its rules data "
                f"{contest.rules_id!r} is not registered"
            ) from exc
        except Duplicate as exc:
            raise Duplicate(f"contest {contest.id!r} exists already") from exc
        return contest

    def get_contest(self, contest_id: str) -> Contest | None:
        with self.read() as conn:
            return contest_by_id(conn, contest_id)

    def close_contest(self, contest_id: str, by: str) -> tuple[Contest, bool] | None:
        """Close a contest now: its closing time becomes the present (and its opening time
        too, if it had not opened), with a `contest.closed` event; (the contest, whether it
        was still to close), or None if there is no such contest.

        Intake's group commit reads the closing time in its own transaction, so uploads
        received from now on are refused in every API process at once. The row is locked
        before the time is taken: a group holding it has committed first, so none of its
        uploads was received after the closing time recorded."""
        return self._change(
            contest_id,
            lambda c: closing(c, clock.now(), by),
            lambda closed: {
                "opens_at": closed.opens_at,
                "closes_at": closed.closes_at,
                "freeze_at": closed.freeze_at,
            },
        )

    def thaw_contest(self, contest_id: str, by: str) -> tuple[Contest, bool] | None:
        """Thaw a contest's standings now (`core.freeze`): its `thawed_at` becomes the present,
        with a `contest.thawed` event; (the contest, whether this call thawed it), or None if
        there is no such contest. A contest thawed already, or without a freeze, is left as it
        is. Before its freeze time, the thaw cancels the freeze: the standings never freeze."""
        return self._change(
            contest_id,
            lambda c: thawing(c, clock.now, by),
            lambda thawed: {"thawed_at": thawed.thawed_at},
        )

    def _change(
        self,
        contest_id: str,
        change: Callable[[Contest], ContestChange | None],
        values: Callable[[Contest], dict[str, Any]],
    ) -> tuple[Contest, bool] | None:
        """A contest closed or thawed by its rule (`core.store_rules`), its row locked before
        the rule reads the time: (the contest, whether the rule changed it, its new `values`
        written with its event), or None if there is no such contest."""
        with self.write() as (conn, pending):
            row = _locked_contest(conn, contest_id)
            if row is None:
                return None
            contest = Contest(**fields_of(row))
            found = change(contest)
            if found is None:
                return contest, False
            changed, event = found
            conn.execute(
                update(contests).where(contests.c.id == contest_id).values(**values(changed))
            )
            pending.append(event)
            return changed, True

    def list_contests(self) -> list[Contest]:
        with self.read() as conn:
            return [
                Contest(**fields_of(r))
                for r in conn.execute(select(contests).order_by(contests.c.id)).mappings()
            ]


def contest_by_id(conn: Connection, contest_id: str) -> Contest | None:
    """A contest by id, on an open connection: `SqlContests` and `SqlSubmissions` read it."""
    row = conn.execute(select(contests).where(contests.c.id == contest_id)).mappings().first()
    return Contest(**fields_of(row)) if row is not None else None


def _locked_contest(conn: Connection, contest_id: str) -> RowMapping | None:
    """The contest's row, locked until the transaction ends (PostgreSQL: FOR UPDATE)."""
    return (
        conn.execute(select(contests).where(contests.c.id == contest_id).with_for_update())
        .mappings()
        .first()
    )
