"""Crosstiles' rows in SQL and what is read of them: a judged game log's own result
(`crosstiles_results`) and each player of a valid game (`crosstiles_players`), hung off its
result row; the standings, invalid and disputed games of a contest under a ruleset; and a
rejudge preview's changed games and moved players.

Rival logs of one game (the same seed and players, `submissions.match_key`) are all kept and
judged; a valid log counts only when every other valid log of its game under the same ruleset
is passed over in its favour by the organiser's settlement (`dispute_settlements`), so an
invalid log never stands in a valid one's way and two valid ones count for nothing until
settled (`core.disputes`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Row, and_, false, func, insert, select
from sqlalchemy.sql.elements import ColumnElement

from core.games.crosstiles import WIN_TWELFTHS, GameOutcome, rating_rules
from core.records import Run
from infra.sql.base import StoreBase
from infra.sql.games.crosstiles_disputes import disputed_logs, match_verdicts
from infra.sql.games.crosstiles_tables import crosstiles_players, crosstiles_results, rival, under
from infra.sql.schema import contests, results, submissions, teams
from infra.sql.standings import received_before
from judge.crosstiles.ratings import Seat, contest_ratings, shown

# Each player of a judged game, with its result, submission and contest.
_PLAYED = (
    crosstiles_players.join(results, results.c.id == crosstiles_players.c.result_id)
    .join(submissions, submissions.c.id == results.c.submission_id)
    .join(contests, contests.c.id == submissions.c.contest_id)
)


def _counted(
    contest_id: str, ruleset: tuple[str, str] | None, before: str | None
) -> ColumnElement[bool]:
    """The players of the contest's games that count under the ruleset (the live one unless
    given), of the logs received before `before` if given: no rival valid log stands in their
    way."""
    return and_(
        submissions.c.contest_id == contest_id,
        *under(ruleset),
        *received_before(before),
        ~rival(ruleset, before),
    )


def game_standings(
    store: StoreBase,
    contest_id: str,
    ruleset: tuple[str, str] | None = None,
    before: str | None = None,
) -> list[dict[str, Any]]:
    """Every player named in the contest's valid game logs that count under the live ruleset
    (or the given one; a disputed game counts for no one), ranked by wins (a k-way tie for
    the win counts 1/k to each), then total spread, then nick: games played, wins, spread.
    With `before`, only of the logs received before that time (a frozen board)."""
    with store.read() as conn:
        return standings_in(conn, contest_id, ruleset, before)


def standings_in(
    conn: Connection,
    contest_id: str,
    ruleset: tuple[str, str] | None = None,
    before: str | None = None,
) -> list[dict[str, Any]]:
    """`game_standings` on an open connection (inside `apply`'s transaction, say)."""
    query = (
        select(
            crosstiles_players.c.nick,
            func.count().label("games"),
            func.sum(crosstiles_players.c.win_twelfths).label("twelfths"),
            func.sum(crosstiles_players.c.spread).label("spread"),
        )
        .select_from(_PLAYED)
        .where(_counted(contest_id, ruleset, before))
        .group_by(crosstiles_players.c.nick)
    )
    found = conn.execute(query).all()
    options = conn.execute(select(contests.c.options).where(contests.c.id == contest_id)).scalar()
    rules = rating_rules(json.loads(options) if options else None)
    ratings = contest_ratings(_games_in_order(conn, contest_id, ruleset, before), rules)
    # Sorted here, not in SQL: nicks compare by code point whatever the database's collation.
    rows = sorted(found, key=lambda r: (-int(r.twelfths), -int(r.spread), r.nick))
    return [
        {
            "rank": rank,
            "nick": r.nick,
            "games": int(r.games),
            "wins": int(r.twelfths) / WIN_TWELFTHS,
            "spread": int(r.spread),
            **shown(ratings[r.nick]),
        }
        for rank, r in enumerate(rows, 1)
    ]


def _games_in_order(
    conn: Connection,
    contest_id: str,
    ruleset: tuple[str, str] | None,
    before: str | None,
) -> list[list[Seat]]:
    """The players of each game the standings count, the games in receipt order (received,
    then id, as the log's replay orders them): what the ratings are computed from."""
    query = (
        select(
            submissions.c.id,
            crosstiles_players.c.nick,
            crosstiles_players.c.score,
            crosstiles_players.c.removed,
        )
        .select_from(_PLAYED)
        .where(_counted(contest_id, ruleset, before))
        .order_by(submissions.c.received_at, submissions.c.id, crosstiles_players.c.seat)
    )
    games: list[list[Seat]] = []
    last = None
    for row in conn.execute(query):
        if row.id != last:
            games.append([])
            last = row.id
        games[-1].append(Seat(row.nick, int(row.score), bool(row.removed)))
    return games


def invalid_games(
    store: StoreBase,
    contest_id: str,
    ruleset: tuple[str, str] | None = None,
    before: str | None = None,
) -> list[dict[str, Any]]:
    """The contest's game logs judged invalid under the live ruleset (or the given one),
    with the team that sent each and why, in the order they were received (with `before`,
    those received before that time)."""
    query = (
        select(
            submissions.c.id,
            teams.c.name,
            crosstiles_results.c.line,
            crosstiles_results.c.reason,
            crosstiles_results.c.detail,
        )
        .select_from(
            crosstiles_results.join(results, results.c.id == crosstiles_results.c.result_id)
            .join(submissions, submissions.c.id == results.c.submission_id)
            .join(contests, contests.c.id == submissions.c.contest_id)
            .join(teams, teams.c.id == submissions.c.team_id)
        )
        .where(
            and_(
                submissions.c.contest_id == contest_id,
                crosstiles_results.c.valid == false(),
                *under(ruleset),
                *received_before(before),
            )
        )
        .order_by(submissions.c.received_at, submissions.c.id)
    )
    with store.read() as conn:
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


def game_verdicts(
    store: StoreBase, contest_id: str, ruleset: tuple[str, str]
) -> dict[str, dict[str, Any]]:
    """Each judged game log of the contest under a ruleset: by submission id, its team id,
    whether it is valid, whether it counts (valid, and not disputed by a rival valid log of
    its game), its winners (nicks, in seat order) and its error's reason."""
    with store.read() as conn:
        return verdicts_in(conn, contest_id, ruleset)


def verdicts_in(
    conn: Connection, contest_id: str, ruleset: tuple[str, str]
) -> dict[str, dict[str, Any]]:
    """`game_verdicts` on an open connection."""
    query = (
        select(
            submissions.c.id,
            submissions.c.team_id,
            crosstiles_results.c.reason,
            crosstiles_players.c.nick,
            rival(ruleset).label("rivalled"),
        )
        .select_from(
            submissions.join(results, results.c.submission_id == submissions.c.id)
            .outerjoin(crosstiles_results, crosstiles_results.c.result_id == results.c.id)
            .outerjoin(
                crosstiles_players,
                and_(
                    crosstiles_players.c.result_id == results.c.id,
                    crosstiles_players.c.win_twelfths > 0,
                ),
            )
        )
        .where(and_(submissions.c.contest_id == contest_id, *under(ruleset)))
        .order_by(submissions.c.id, crosstiles_players.c.seat)
    )
    verdicts: dict[str, dict[str, Any]] = {}
    for r in conn.execute(query):
        valid = r.reason is None
        verdict = verdicts.setdefault(
            r.id,
            {
                "team_id": r.team_id,
                "valid": valid,
                "counts": valid and not r.rivalled,
                "winners": [],
                "reason": r.reason,
            },
        )
        if r.nick is not None:
            verdict["winners"].append(r.nick)
    return verdicts


def put_games(conn: Connection, found: Sequence[tuple[int, object]]) -> None:
    """The own result and players of each judged game, under its result row's id (results of
    other games carry no `GameOutcome`, and get none)."""
    judged = [(rid, game) for rid, game in found if isinstance(game, GameOutcome)]
    players = [
        {"result_id": result_id, **player.__dict__}
        for result_id, game in judged
        if game is not None
        for player in game.players
    ]
    own = [
        {
            "result_id": result_id,
            "valid": game.valid,
            "turns": game.turns,
            "line": game.error.line if game.error else None,
            "reason": game.error.reason if game.error else None,
            "detail": game.error.detail if game.error else None,
        }
        for result_id, game in judged
    ]
    if own:
        conn.execute(insert(crosstiles_results), own)
    if players:
        conn.execute(insert(crosstiles_players), players)


def logged_games(conn: Connection, result_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """Each game as its verdict entry in the transparency log states it: valid or not, the
    turns judged, the winning score, an invalid game's failing line and reason code (not its
    detail, which may quote the log), and each player's seat, nick, final score, removal,
    share of the win and spread: what the standings add up."""
    ids = list(result_ids)
    own = conn.execute(
        select(crosstiles_results, results.c.score)
        .join(results, results.c.id == crosstiles_results.c.result_id)
        .where(crosstiles_results.c.result_id.in_(ids))
    ).all()
    found: dict[int, dict[str, Any]] = {
        r.result_id: {
            "valid": bool(r.valid),
            "turns": r.turns,
            "winning_score": r.score,
            "error": None if r.valid else {"line": r.line, "reason": r.reason},
            "players": [],
        }
        for r in own
    }
    P = crosstiles_players.c
    for r in conn.execute(
        select(crosstiles_players).where(P.result_id.in_(ids)).order_by(P.result_id, P.seat)
    ):
        found[r.result_id]["players"].append(
            {
                "seat": r.seat,
                "nick": r.nick,
                "score": r.score,
                "removed": bool(r.removed),
                "win_twelfths": r.win_twelfths,
                "spread": r.spread,
            }
        )
    return found


def game_changes(conn: Connection, run: Run) -> list[dict[str, Any]]:
    """The games whose verdict, winners or whether they count (a valid log disputed by a
    rival counts for nothing) differ between the run's ruleset and the one it replaces (a
    rejudge preview's `changed`), each with its team's name."""
    before = verdicts_in(conn, run.contest_id, (run.from_lexicon_id, run.from_rules_id))
    after = verdicts_in(conn, run.contest_id, (run.lexicon_id, run.rules_id))
    names = dict(
        conn.execute(
            select(teams.c.id, teams.c.name).where(teams.c.contest_id == run.contest_id)
        ).all()
    )
    changed = []
    for sid in sorted(before.keys() & after.keys()):
        old, new = before[sid], after[sid]
        compared = ("valid", "counts", "winners")
        if all(old[field] == new[field] for field in compared):
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
                "old_counts": old["counts"],
                "new_counts": new["counts"],
            }
        )
    return changed


def standing_changes(conn: Connection, run: Run) -> list[dict[str, Any]]:
    """The players whose rank, games, wins or spread differ between the two rulesets, by
    their new rank (a rejudge preview's `rank_changes`)."""
    fields = ("rank", "games", "wins", "spread")
    before = {
        e["nick"]: e
        for e in standings_in(conn, run.contest_id, (run.from_lexicon_id, run.from_rules_id))
    }
    after = {
        e["nick"]: e for e in standings_in(conn, run.contest_id, (run.lexicon_id, run.rules_id))
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


class CrosstilesRows:
    tables = (crosstiles_results, crosstiles_players)

    def put(self, conn: Connection, judged: Sequence[tuple[int, object]]) -> None:
        put_games(conn, judged)

    def fields(self, store: StoreBase, result_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """Whether the game is valid, the turns judged, the winning score, the winners in seat
        order, and an invalid game's failing line, reason and detail."""
        ids = list(result_ids)
        with store.read() as conn:
            own = conn.execute(
                select(crosstiles_results, results.c.score)
                .join(results, results.c.id == crosstiles_results.c.result_id)
                .where(crosstiles_results.c.result_id.in_(ids))
            ).all()
            winners = conn.execute(
                select(crosstiles_players.c.result_id, crosstiles_players.c.nick)
                .where(
                    and_(
                        crosstiles_players.c.result_id.in_(ids),
                        crosstiles_players.c.win_twelfths > 0,
                    )
                )
                .order_by(crosstiles_players.c.result_id, crosstiles_players.c.seat)
            ).all()
        found: dict[int, dict[str, Any]] = {}
        for r in own:
            error = None if r.valid else {"line": r.line, "reason": r.reason, "detail": r.detail}
            found[r.result_id] = {
                "valid": bool(r.valid),
                "turns": r.turns,
                "winning_score": r.score,
                "winners": [],
                "error": error,
            }
        for result_id, nick in winners:
            found[result_id]["winners"].append(nick)
        return found

    def standings(
        self,
        store: StoreBase,
        contest_id: str,
        ruleset: tuple[str, str] | None = None,
        before: str | None = None,
    ) -> dict[str, Any]:
        """The players, the invalid logs, and how many games are disputed (rival valid logs
        the organiser has not settled): a count only, the same for everyone."""
        with store.read() as conn:
            disputed = {row["match"] for row in disputed_logs(conn, contest_id, ruleset, before)}
        return {
            "players": game_standings(store, contest_id, ruleset, before),
            "invalid": invalid_games(store, contest_id, ruleset, before),
            "disputed": len(disputed),
        }

    def disputed(self, conn: Connection, contest_id: str) -> list[dict[str, Any]]:
        return disputed_logs(conn, contest_id)

    def match_verdicts(
        self, conn: Connection, contest_id: str, match_key: str
    ) -> dict[str, bool | None]:
        return match_verdicts(conn, contest_id, match_key)

    def log_results(self, conn: Connection, rows: Sequence[Row[Any]]) -> dict[int, dict[str, Any]]:
        return logged_games(conn, [r.id for r in rows])

    def changes(self, conn: Connection, run: Run) -> list[dict[str, Any]]:
        return game_changes(conn, run)

    def rank_changes(self, conn: Connection, run: Run) -> list[dict[str, Any]]:
        return standing_changes(conn, run)


ROWS = CrosstilesRows()
