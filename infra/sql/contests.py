"""Contests in the results store (the `core.ports.ContestStore` port): created, read, closed and
thawed now, each change with its event in the same transaction."""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy import Connection, RowMapping, insert, select, update

from core import clock
from core.errors import Duplicate, MissingReference
from core.events import ContestClosed, ContestCreated, ContestThawed
from core.records import Contest
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
        with self.write() as (conn, pending):
            row = _locked_contest(conn, contest_id)
            if row is None:
                return None
            contest, now = Contest(**fields_of(row)), clock.now()
            if contest.closes_at <= now:
                return contest, False
            # Closed before its freeze time, it never froze: no freeze left after its end.
            freeze_at = contest.freeze_at if (contest.freeze_at or "") <= now else None
            closing = replace(
                contest, opens_at=min(contest.opens_at, now), closes_at=now, freeze_at=freeze_at
            )
            conn.execute(
                update(contests)
                .where(contests.c.id == contest_id)
                .values(
                    opens_at=closing.opens_at,
                    closes_at=closing.closes_at,
                    freeze_at=closing.freeze_at,
                )
            )
            pending.append(
                ContestClosed(
                    contest=contest_id,
                    closes_at=closing.closes_at,
                    was_to_close_at=contest.closes_at,
                    opens_at=closing.opens_at,
                    by=by,
                )
            )
            return closing, True

    def thaw_contest(self, contest_id: str, by: str) -> tuple[Contest, bool] | None:
        """Thaw a contest's standings now (`core.freeze`): its `thawed_at` becomes the present,
        with a `contest.thawed` event; (the contest, whether this call thawed it), or None if
        there is no such contest. A contest thawed already, or without a freeze, is left as it
        is. Before its freeze time, the thaw cancels the freeze: the standings never freeze."""
        with self.write() as (conn, pending):
            row = _locked_contest(conn, contest_id)
            if row is None:
                return None
            contest = Contest(**fields_of(row))
            if contest.freeze_at is None or contest.thawed_at is not None:
                return contest, False
            thawed = replace(contest, thawed_at=clock.now())
            conn.execute(
                update(contests)
                .where(contests.c.id == contest_id)
                .values(thawed_at=thawed.thawed_at)
            )
            pending.append(
                ContestThawed(
                    contest=contest_id,
                    freeze_at=contest.freeze_at,
                    thawed_at=thawed.thawed_at,
                    by=by,
                )
            )
            return thawed, True

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
