"""An in-memory `ResultReads` for unit tests: the SQL store's reads (infra/sql/standings.py, the
standings and fields of infra/sql/games) over the tables of the submission store fake it is
given (one database, whose `down` and `failing` hold here too), each call one read.

A game's reads are chosen once from the registry, never by its name. A game whose uploads are
each its team's own ranks teams by their best score (`infra.sql.games.TeamRanked`; written out
here, the SQL holds that rule). A game whose uploads name players (`Game.shared_uploads`: game
logs) ranks the players of the logs that count as its own `log_standings` does (who counts
among rival logs, the order, the ratings: reused, not copied), with what the log leaves out
(each invalid log's team and detail) and how many games are disputed (`core.disputes`).
`tests/integration/test_result_port.py` holds this fake and the SQL adapter to one suite."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any, Protocol, runtime_checkable

from core.disputes import disputed
from core.events import line_counts
from core.fake_database import KeptResult
from core.fake_store import InMemorySubmissionStore
from core.game import Game
from core.games import game
from core.records import Contest, ResultLine, StoredResult, Submission
from core.transparency import Logged

ResultKey = tuple[str, str, str]  # a result's submission, lexicon and rules data
Judged = list[tuple[Submission, KeptResult]]  # results counted, in receipt order


@runtime_checkable
class Outcome(Protocol):
    """What a judged game log keeps of its own (`JudgedResult.game`), as much as is read here:
    the turns judged, an invalid log's error (line, reason, detail), the winners."""

    turns: int
    error: Any

    @property
    def valid(self) -> bool: ...
    @property
    def winners(self) -> tuple[str, ...]: ...


class GameReads(Protocol):
    """What is read of one game's results: each one's own fields, and a contest's standings."""

    def fields(self, kept: Mapping[int, KeptResult]) -> dict[int, dict[str, Any]]: ...
    # `judged`: the contest's results under the ruleset (and received before the cut, if any)
    def standings(
        self, db: InMemorySubmissionStore, contest: Contest | None, judged: Judged
    ) -> dict[str, Any]: ...


class TeamRanked:
    """`infra.sql.games.TeamRanked`, each team by its best score: the score every result has,
    and a move list's line counts beside it (`infra.sql.games.wordytaire`, which ranks so)."""

    def fields(self, kept: Mapping[int, KeptResult]) -> dict[int, dict[str, Any]]:
        return {
            rid: {"score": k.result.score, **line_counts(k.result.game)} for rid, k in kept.items()
        }

    def standings(
        self, db: InMemorySubmissionStore, contest: Contest | None, judged: Judged
    ) -> dict[str, Any]:
        """Each team's best score; ties to the earlier receipt, then the smaller id."""
        best: dict[str, tuple[int, str, str]] = {}  # by team: (-score, received_at, submission)
        for sub, kept in judged:
            entry = (-kept.result.score, sub.received_at, sub.id)
            best[sub.team_id] = min(best.get(sub.team_id, entry), entry)
        ranked = sorted(best.items(), key=lambda item: item[1])
        return {
            "entries": [
                {
                    "rank": rank,
                    "team": db.teams[team_id].name,
                    "team_id": team_id,
                    "score": -score,
                    "submission": sid,
                    "received_at": received_at,
                }
                for rank, (team_id, (score, received_at, sid)) in enumerate(ranked, 1)
            ]
        }


class PlayerRanked:
    """A game of logs naming their players (`infra.sql.games` has its own module for each):
    a log's verdict and winners; the players of the logs that count, the invalid logs, and
    how many games are disputed."""

    def __init__(self, played: Game) -> None:
        self.played = played

    def fields(self, kept: Mapping[int, KeptResult]) -> dict[int, dict[str, Any]]:
        """Of the results with an outcome of their own (SQL has no rows for the others)."""
        return {
            rid: {
                "valid": own.valid,
                "turns": own.turns,
                "winning_score": k.result.score,
                "winners": list(own.winners),
                "error": None if own.error is None else asdict(own.error),
            }
            for rid, k in kept.items()
            if isinstance(own := k.result.game, Outcome)
        }

    def standings(
        self, db: InMemorySubmissionStore, contest: Contest | None, judged: Judged
    ) -> dict[str, Any]:
        """What the game's `log_standings` makes of the logs as the transparency log would
        tell them, each invalid log named with its team and its error's detail."""
        logs = {sub.id: (sub, k) for sub, k in judged if isinstance(k.result.game, Outcome)}
        logged = {
            sid: Logged(
                team=sub.team_id,
                received_at=sub.received_at,
                verdict=self.played.log_result(k.result),
                match=sub.match_key,
                passed_over_for=db.settlements.get(sid),
            )
            for sid, (sub, k) in logs.items()
        }
        options = contest.options_json() if contest is not None else None
        found: dict[str, Any] = dict(self.played.log_standings(logged, options))
        invalid = []
        for row in found.get("invalid", []):
            sub, k = logs[row["submission"]]
            own = k.result.game
            assert isinstance(own, Outcome) and own.error is not None
            invalid.append({**row, "team": db.teams[sub.team_id].name, "detail": own.error.detail})
        named = {"invalid": invalid} if "invalid" in found else {}
        return {**found, **named, "disputed": _disputed_games(logged)}


def _disputed_games(logged: Mapping[str, Logged]) -> int:
    """How many games (matches) have rival valid logs held disputed (`core.disputes`)."""
    games: dict[str, dict[str, Logged]] = {}
    for sid, log in logged.items():
        if log.match is not None:
            games.setdefault(log.match, {})[sid] = log
    count = 0
    for logs in games.values():
        valid = {sid: bool(log.verdict and log.verdict["valid"]) for sid, log in logs.items()}
        passed = {sid: log.passed_over_for for sid, log in logs.items() if log.passed_over_for}
        count += bool(disputed(valid, passed))
    return count


TEAM_RANKED = TeamRanked()


def reads_of(name: str) -> GameReads:
    """The game's reads (Invalid for a game not registered, as `rows_of` raises)."""
    played = game(name)
    return PlayerRanked(played) if played.shared_uploads else TEAM_RANKED


class InMemoryResultReads:
    """Results as the API shows them, read from the submission store fake's database.

    Result ids are this reader's own, given in the order the results were first stored (as
    SQL numbers its rows), and kept for as long as the result is."""

    def __init__(self, db: InMemorySubmissionStore) -> None:
        self.db = db
        self._ids: dict[ResultKey, int] = {}
        self._keys: dict[int, ResultKey] = {}

    def current_result(self, submission_id: str) -> StoredResult | None:
        """The result under the contest's live lexicon and rules data."""
        with self.db.read("current_result"):
            key = self._live_key(submission_id)
            kept = self.db.results.get(key) if key is not None else None
            if key is None or kept is None:
                return None
            r = kept.result
            return StoredResult(
                id=self._number()[key], submission_id=submission_id, lexicon_id=r.lexicon_id,
                rules_id=r.rules_id, judge_version=r.judge_version, score=r.score,
                report_key=r.report_key, judged_at=kept.judged_at, carried=int(kept.carried),
            )  # fmt: skip

    def result_fields(self, game: str, result_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """The game's own fields of each result (an id of no result left out)."""
        if not result_ids:
            return {}
        reads = reads_of(game)
        with self.db.read("result_fields"):
            self._number()
            keys = {rid: self._keys.get(rid) for rid in result_ids}
            kept = {
                rid: self.db.results[key]
                for rid, key in keys.items()
                if key is not None and key in self.db.results
            }
            return reads.fields(kept)

    def standings(
        self,
        contest: Contest,
        ruleset: tuple[str, str] | None = None,
        before: str | None = None,
    ) -> dict[str, Any]:
        """The contest's standings in its game's shape, under its live ruleset (as stored) or
        the one given; with `before`, of the uploads received before then, and how many
        were received since (`pending`)."""
        reads = reads_of(contest.game)
        with self.db.read("standings"):
            stored = self.db.contests.get(contest.id)
            if ruleset is None and stored is not None:
                ruleset = (stored.lexicon_id, stored.rules_id)
            judged = self._judged(contest.id, ruleset, before)
            found = reads.standings(self.db, stored, judged)
            if before is None:
                return found
            pending = sum(
                s.contest_id == contest.id and s.received_at >= before
                for s in self.db.submissions.values()
            )
            return {**found, "pending": pending}

    def results_page(
        self, contest_id: str, after: str, limit: int, team_id: str | None = None
    ) -> list[ResultLine]:
        """Up to `limit` of the contest's submissions with ids after `after`, by id, each
        with its team's name and its live result (None before it is judged); with `team_id`,
        that team's alone."""
        db = self.db
        with db.read("results_page"):
            ids = self._number()
            subs = sorted(
                (
                    s
                    for s in db.submissions.values()
                    if s.contest_id == contest_id
                    and s.id > after
                    and (team_id is None or s.team_id == team_id)
                ),
                key=lambda s: s.id,
            )
            lines = []
            for s in subs[: max(limit, 0)]:
                key = self._live_key(s.id)
                kept = db.results.get(key) if key is not None else None
                lines.append(
                    ResultLine(
                        submission=s.id, team=db.teams[s.team_id].name, team_id=s.team_id,
                        state=s.state, received_at=s.received_at,
                        judged_at=kept.judged_at if kept else None,
                        lexicon=kept.result.lexicon_id if kept else None,
                        layout=kept.result.rules_id if kept else None,
                        result_id=ids[key] if kept and key else None,
                    )
                )  # fmt: skip
            return lines

    def events_after(self, after: int, limit: int) -> list[dict[str, Any]]:
        """The events with ids after `after`, by id, each as the SQL store serves it: its id,
        time and type, then its fields as JSON gives them back."""
        with self.db.read("events_after"):
            found = [e for e in self.db.events if e["id"] > after][: max(limit, 0)]
            return [
                {
                    "id": e["id"],
                    "ts": e["ts"],
                    "type": str(e["type"]),
                    **json.loads(
                        json.dumps(
                            {k: v for k, v in e.items() if k not in ("id", "ts", "type")},
                            default=str,
                        )
                    ),
                }
                for e in found
            ]

    # -- within a read ----------------------------------------------------------------------

    def _live_key(self, submission_id: str) -> ResultKey | None:
        sub = self.db.submissions.get(submission_id)
        contest = self.db.contests.get(sub.contest_id) if sub is not None else None
        if sub is None or contest is None:
            return None
        return submission_id, contest.lexicon_id, contest.rules_id

    def _number(self) -> dict[ResultKey, int]:
        """Every stored result's id: those not numbered yet numbered in the order stored."""
        for key in self.db.results:
            if key not in self._ids:
                self._ids[key] = len(self._ids) + 1
                self._keys[self._ids[key]] = key
        return self._ids

    def _judged(
        self, contest_id: str, ruleset: tuple[str, str] | None, before: str | None
    ) -> Judged:
        """The contest's results under the ruleset, of uploads received before `before` if
        given, in receipt order (received, then id)."""
        found = []
        for (sid, *under), kept in self.db.results.items():
            sub = self.db.submissions.get(sid)
            if sub is None or sub.contest_id != contest_id or tuple(under) != ruleset:
                continue
            if before is None or sub.received_at < before:
                found.append((sub, kept))
        return sorted(found, key=lambda item: (item[0].received_at, item[0].id))
