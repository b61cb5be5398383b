"""What the rule for rival logs of one game costs a Crosstiles contest's standings (prints
figures, asserts nothing): `python -m benchmarks.crosstiles_disputes [--games 10000] [--runs 5]`.

A contest on SQLite in a temporary directory holds `--games` judged games of two players each
(nicks from a pool of 200), every tenth with an unfinished rival log uploaded first and every
hundredth with a rival valid log (a dispute). Printed: the median time of the players'
standings (`game_standings`) with the rule (a valid log counts only when no rival valid log
stands against it) and without it (the query as it was, every valid log counted), and of the
disputed games' list (`SqlStore.disputes`).
"""

from __future__ import annotations

import argparse
import logging
import platform
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import structlog
from sqlalchemy import false

from benchmarks.machine import cpu_model
from core import clock
from core.games.crosstiles import GameError, GameOutcome, GamePlayer
from core.records import Contest, JudgedResult, Submission, Team
from core.states import SubmissionState
from core.word_hashes import signature
from infra.sql.engine import make_engine
from infra.sql.games import crosstiles as crosstiles_sql
from infra.sql.migrate import upgrade
from infra.sql.store import SqlStore

LEXICON, LAYOUT, CONTEST = "lex-1", "board-1", "xt"
BATCH = 500
WORDS = signature(["cat"])


def contest_of(store: SqlStore) -> tuple[Contest, Team]:
    store.add_lexicon(
        id=LEXICON, name="words", words=1, size=4, blob_key="lexicons/lex-1.txt", source="bench",
        created_by="admin",
    )  # fmt: skip
    store.add_rules(id=LAYOUT, name="board", content="{}", created_by="admin", game="crosstiles")
    now = clock.now()
    contest = store.create_contest(
        Contest(
            id=CONTEST, title="Bench", opens_at="2000-01-01T00:00:00.000000Z",
            closes_at="9999-01-01T00:00:00.000000Z", lexicon_id=LEXICON, rules_id=LAYOUT,
            created_at=now, game="crosstiles",
        )
    )  # fmt: skip
    team = store.create_team(
        Team(id="club", contest_id=CONTEST, name="club", token_hash="h", created_at=now)
    )
    store.allow_logs(team.id, True, by="admin")
    return contest, team


def log(team: Team, match: str) -> Submission:
    sid, now = uuid.uuid4().hex, clock.now()
    return Submission(
        id=sid, contest_id=CONTEST, team_id=team.id, sha256=uuid.uuid4().hex * 2, size=10,
        blob_key=f"uploads/{sid}", received_at=now, receipt="r", state=SubmissionState.STORED,
        state_at=now, attempts=0, judged_at=None, failure=None, game_key=uuid.uuid4().hex * 2,
        match_key=match,
    )  # fmt: skip


def outcome(rng: random.Random, nicks: list[str]) -> GameOutcome:
    a, b = rng.sample(nicks, 2)
    sa, sb = rng.randrange(200, 500), rng.randrange(200, 500)
    share = (12, 0) if sa > sb else (0, 12) if sb > sa else (6, 6)
    return GameOutcome(
        (
            GamePlayer(1, a, sa, False, share[0], sa - sb),
            GamePlayer(2, b, sb, False, share[1], sb - sa),
        ),
        None,
    )


def fill(store: SqlStore, team: Team, games: int, rng: random.Random) -> None:
    nicks = [f"p{n:03d}" for n in range(200)]
    unfinished = GameOutcome((), GameError(9, "unfinished", "the game has not ended"))
    pending: list[tuple[Submission, GameOutcome]] = []
    for n in range(games):
        match = f"{n:064x}"
        if n % 10 == 0:
            pending.append((log(team, match), unfinished))
        pending.append((log(team, match), outcome(rng, nicks)))
        if n % 100 == 0:
            pending.append((log(team, match), outcome(rng, nicks)))
    for start in range(0, len(pending), BATCH):
        chunk = pending[start : start + BATCH]
        store.store_submissions([sub for sub, _ in chunk])
        claims = {c.submission.id: c for c in store.claim_many([s.id for s, _ in chunk], 3600)}
        store.record_results(
            [
                (claims[sub.id], JudgedResult(LEXICON, LAYOUT, "b", 0, "k", game), WORDS)
                for sub, game in chunk
            ]
        )


def median_ms(call: Callable[[], Any], runs: int) -> float:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        call()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    # Each stored upload's event line would drown the figures.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    with tempfile.TemporaryDirectory() as home:
        engine = make_engine(f"sqlite:///{Path(home) / 'bench.sqlite3'}")
        upgrade(engine)
        store = SqlStore(engine)
        contest, team = contest_of(store)
        fill(store, team, args.games, random.Random(1))
        with_rule = median_ms(lambda: crosstiles_sql.game_standings(store, CONTEST), args.runs)
        with mock.patch.object(crosstiles_sql, "rival", lambda *_a, **_k: false()):
            without = median_ms(lambda: crosstiles_sql.game_standings(store, CONTEST), args.runs)
        listed = median_ms(lambda: store.disputes(contest), args.runs)
        disputed = len(store.disputes(contest))
        engine.dispose()
    print(
        f"machine: {cpu_model()} ({platform.python_implementation()} {platform.python_version()})"
    )
    print(
        f"games: {args.games:,} ({args.games // 10 + 1:,} with an unfinished rival, {disputed:,} disputed)"
    )
    print(f"standings with the rule:    {with_rule:8.1f} ms (median of {args.runs})")
    print(f"standings without the rule: {without:8.1f} ms")
    print(f"disputed games listed:      {listed:8.1f} ms")


if __name__ == "__main__":
    main()
