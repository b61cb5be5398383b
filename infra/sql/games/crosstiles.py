"""A judged game log's rows and what is read of them: each player of a valid game (`game_players`)
or its error (`game_errors`), hung off its result row; the standings and invalid games of a
contest under a ruleset; and a rejudge preview's changed games and moved players.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, and_, delete, func, insert, select
from sqlalchemy.sql.elements import ColumnElement

from core.games import WIN_TWELFTHS, GameOutcome
from core.records import Run
from infra.sql.base import StoreBase
from infra.sql.schema import contests, game_errors, game_players, results, submissions, teams


class GamesMixin(StoreBase):
    def game_standings(
        self, contest_id: str, ruleset: tuple[str, str] | None = None
    ) -> list[dict[str, Any]]:
        """Every player named in the contest's valid game logs under the live ruleset (or the
        given one), ranked by wins (a k-way tie for the win counts 1/k to each), then total
        spread, then nick: games played, wins, spread."""
        query = (
            select(
                game_players.c.nick,
                func.count().label("games"),
                func.sum(game_players.c.win_twelfths).label("twelfths"),
                func.sum(game_players.c.spread).label("spread"),
            )
            .select_from(
                game_players.join(results, results.c.id == game_players.c.result_id)
                .join(submissions, submissions.c.id == results.c.submission_id)
                .join(contests, contests.c.id == submissions.c.contest_id)
            )
            .where(and_(submissions.c.contest_id == contest_id, *_under(ruleset)))
            .group_by(game_players.c.nick)
        )
        with self.read() as conn:
            found = conn.execute(query).all()
        # Sorted here, not in SQL: nicks compare by code point whatever the database's collation.
        rows = sorted(found, key=lambda r: (-int(r.twelfths), -int(r.spread), r.nick))
        return [
            {
                "rank": rank,
                "nick": r.nick,
                "games": int(r.games),
                "wins": int(r.twelfths) / WIN_TWELFTHS,
                "spread": int(r.spread),
            }
            for rank, r in enumerate(rows, 1)
        ]

    def invalid_games(
        self, contest_id: str, ruleset: tuple[str, str] | None = None
    ) -> list[dict[str, Any]]:
        """The contest's game logs judged invalid under the live ruleset (or the given one),
        with the team that sent each and why, in the order they were received."""
        query = (
            select(
                submissions.c.id,
                teams.c.name,
                game_errors.c.line,
                game_errors.c.reason,
                game_errors.c.detail,
            )
            .select_from(
                game_errors.join(results, results.c.id == game_errors.c.result_id)
                .join(submissions, submissions.c.id == results.c.submission_id)
                .join(contests, contests.c.id == submissions.c.contest_id)
                .join(teams, teams.c.id == submissions.c.team_id)
            )
            .where(and_(submissions.c.contest_id == contest_id, *_under(ruleset)))
            .order_by(submissions.c.received_at, submissions.c.id)
        )
        with self.read() as conn:
            return [
                {
                    "submission": r.id,
                    "team": r.name,
                    "line": r.line,
                    "reason": r.reason,
                    "detail": r.detail,
                }
                for r in conn.execute(query)
            ]

    def game_verdicts(self, contest_id: str, ruleset: tuple[str, str]) -> dict[str, dict[str, Any]]:
        """Each judged game log of the contest under a ruleset: by submission id, its team id,
        whether it is valid, its winners (nicks, in seat order) and its error's reason."""
        query = (
            select(
                submissions.c.id,
                submissions.c.team_id,
                game_errors.c.reason,
                game_players.c.nick,
            )
            .select_from(
                submissions.join(results, results.c.submission_id == submissions.c.id)
                .outerjoin(game_errors, game_errors.c.result_id == results.c.id)
                .outerjoin(
                    game_players,
                    and_(game_players.c.result_id == results.c.id, game_players.c.win_twelfths > 0),
                )
            )
            .where(and_(submissions.c.contest_id == contest_id, *_under(ruleset)))
            .order_by(submissions.c.id, game_players.c.seat)
        )
        verdicts: dict[str, dict[str, Any]] = {}
        with self.read() as conn:
            for r in conn.execute(query):
                verdict = verdicts.setdefault(
                    r.id,
                    {"team_id": r.team_id, "valid": r.reason is None, "winners": [],
                     "reason": r.reason},
                )  # fmt: skip
                if r.nick is not None:
                    verdict["winners"].append(r.nick)
        return verdicts


def put_games(conn: Connection, judged: Sequence[tuple[int, GameOutcome | None]]) -> None:
    """The players or error of each judged game, under its result row's id."""
    players = [
        {"result_id": result_id, **player.__dict__}
        for result_id, game in judged
        if game is not None
        for player in game.players
    ]
    errors = [
        {"result_id": result_id, **game.error.__dict__}
        for result_id, game in judged
        if game is not None and game.error is not None
    ]
    if players:
        conn.execute(insert(game_players), players)
    if errors:
        conn.execute(insert(game_errors), errors)


def drop_games(conn: Connection, result_ids: Sequence[int]) -> None:
    """Before their result rows go (or are judged again): the rows that hang off them."""
    if result_ids:
        conn.execute(delete(game_players).where(game_players.c.result_id.in_(result_ids)))
        conn.execute(delete(game_errors).where(game_errors.c.result_id.in_(result_ids)))


def copy_games(
    conn: Connection, result_ids: Sequence[int], lexicon_id: str, layout_id: str
) -> None:
    """Give results just copied to another ruleset (an affected-only rejudge carries them) the
    players and error of the result each was copied from, under (`lexicon_id`, `layout_id`)."""
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
    for table in (game_players, game_errors):
        copied = [column for column in table.c if column.name != "result_id"]
        conn.execute(
            insert(table).from_select(
                ["result_id", *(column.name for column in copied)],
                select(pairs.c.new_id, *copied).select_from(
                    table.join(pairs, pairs.c.old_id == table.c.result_id)
                ),
            )
        )


def game_changes(store: GamesMixin, run: Run, names: dict[str, str]) -> list[dict[str, Any]]:
    """The games whose verdict or winners differ between the run's ruleset and the one it
    replaces (a rejudge preview's `changed`), each with its team's name (from `names`)."""
    before = store.game_verdicts(run.contest_id, (run.from_lexicon_id, run.from_layout_id))
    after = store.game_verdicts(run.contest_id, (run.lexicon_id, run.layout_id))
    changed = []
    for sid in sorted(before.keys() & after.keys()):
        old, new = before[sid], after[sid]
        if (old["valid"], old["winners"]) == (new["valid"], new["winners"]):
            continue
        changed.append(
            {
                "submission": sid,
                "team": names.get(new["team_id"], new["team_id"]),
                "old_valid": old["valid"],
                "new_valid": new["valid"],
                "old_winners": old["winners"],
                "new_winners": new["winners"],
                "old_reason": old["reason"],
                "new_reason": new["reason"],
            }
        )
    return changed


def standing_changes(store: GamesMixin, run: Run) -> list[dict[str, Any]]:
    """The players whose rank, games, wins or spread differ between the two rulesets, by
    their new rank (a rejudge preview's `rank_changes`)."""
    fields = ("rank", "games", "wins", "spread")
    before = {
        e["nick"]: e
        for e in store.game_standings(run.contest_id, (run.from_lexicon_id, run.from_layout_id))
    }
    after = {
        e["nick"]: e for e in store.game_standings(run.contest_id, (run.lexicon_id, run.layout_id))
    }
    moved = []
    for nick in sorted(before.keys() | after.keys(), key=lambda n: (_rank(after, n), n)):
        old, new = before.get(nick), after.get(nick)
        if old is not None and new is not None and all(old[f] == new[f] for f in fields):
            continue
        moved.append(
            {
                "player": nick,
                **{f"old_{f}": old[f] if old else None for f in fields},
                **{f"new_{f}": new[f] if new else None for f in fields},
            }
        )
    return moved


def _rank(standings: dict[str, dict[str, Any]], nick: str) -> int:
    found = standings.get(nick)
    return int(found["rank"]) if found is not None else 10**9


def _under(ruleset: tuple[str, str] | None) -> tuple[ColumnElement[bool], ColumnElement[bool]]:
    """Results under the contest's live lexicon and layout, or under the (lexicon, layout)
    given (a rejudge preview's); the query joins `contests`, or, given a ruleset, need not."""
    if ruleset is None:
        return (
            results.c.lexicon_id == contests.c.lexicon_id,
            results.c.layout_id == contests.c.layout_id,
        )
    return results.c.lexicon_id == ruleset[0], results.c.layout_id == ruleset[1]
