"""The real correction of a Crosstiles contest's word list (prints figures, asserts nothing):
`python -m benchmarks.crosstiles_rejudge [--games 1000] [--runs 3]`.

Generated games are played with the full Crosstiles list (`crosstiles.txt`), so some of them
spell the British way; the contest judges them first under `enable_2-16.txt` (ENABLE alone, the
list before the British spellings were added), then is rejudged under `crosstiles.txt`, full and
affected-only in turn, a few times each (each run started from nothing: the run before it is
cancelled and its results deleted, as `rejudge_bench` does), then once more affected-only and
applied. Printed: how many games change verdict, the share affected-only re-verifies, its time
against the full rejudge's, and whether its results are the full one's.

The games are generated on every core; what is timed runs in process, on one thread: the API
(FastAPI's test client) on SQLite in a temporary directory, object storage and the broker in
memory (`devstack.testing.pipeline`), and the producer and every batch run in turn as a worker
would (`core.rejudging`). A run is timed from its start to ready (its preview is read after).
Both word lists and their difference are loaded before anything is timed, as the workers
preload them.
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from sqlalchemy import and_, delete, select

from benchmarks.machine import cpu_model
from cli.client import join_pages
from core.judging import WorkerDeps
from core.rejudging import judge_batch, produce
from core.states import RejudgeState
from devstack.demo import with_players
from devstack.testing.pipeline import ADMIN, Pipeline, drain, open_pipeline, worker_deps
from devstack.testing.word_lists import cached_list
from infra.sql.games import crosstiles as crosstiles_sql
from infra.sql.games import drop_details
from infra.sql.schema import results
from judge import Lexicon
from judge.crosstiles import default_board, generate

CONTEST = "club"
BEFORE, AFTER = "enable_2-16", "crosstiles"
PLAYERS = tuple(f"player-{n:02}" for n in range(1, 61))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.crosstiles_rejudge", description=__doc__
    )
    parser.add_argument("--games", type=int, default=1000, help="generated games in the contest")
    parser.add_argument(
        "--runs", type=int, default=3, help="full and affected-only runs timed, in turn"
    )
    args = parser.parse_args(argv)
    shown = " ".join(sys.argv[1:] if argv is None else argv)
    print(f"command: python -m benchmarks.crosstiles_rejudge {shown}".rstrip())
    print(f"python {platform.python_version()} on {cpu_model()}; in process, one thread")

    words = {name: cached_list(f"{name}.txt").read_bytes() for name in (BEFORE, AFTER)}
    started = time.perf_counter()
    games = corpus(args.games)
    print(
        f"corpus: {len(games)} games (2-4 of {len(PLAYERS)} players each, played with {AFTER}.txt), generated in "
        f"{time.perf_counter() - started:.0f} s"
    )
    with (
        tempfile.TemporaryDirectory(prefix="tj-crosstiles-") as home,
        open_pipeline(Path(home)) as pipe,
    ):
        figures = measure(pipe, words, games, args.runs)
    print()
    width = max(len(name) for name in figures)
    for name, value in figures.items():
        print(f"  {name:<{width}}  {value}")
    return 0


def corpus(count: int) -> list[bytes]:
    """`count` whole games, generated on every core."""
    with ProcessPoolExecutor() as pool:
        return list(pool.map(_game, range(count), chunksize=25))


_FULL_LIST: list[Lexicon] = []


def _game(number: int) -> bytes:
    """Game `number`, its two to four seats taken by players of a club of PLAYERS."""
    if not _FULL_LIST:
        _FULL_LIST.append(Lexicon.from_bytes(cached_list(f"{AFTER}.txt").read_bytes()))
    players = 2 + number % 3
    log = generate(
        players, f"club-{number}", _FULL_LIST[0], default_board(),
        exchanges=number % 2 == 0, passes=number % 3 == 0, timeouts=number % 4 == 1,
        rng_seed=number,
    )  # fmt: skip
    return with_players(log, random.Random(number).sample(PLAYERS, players))


def measure(
    pipe: Pipeline, words: dict[str, bytes], games: list[bytes], runs: int
) -> dict[str, str]:
    for name, data in words.items():
        answer = pipe.client.post(
            "/v1/lexicons", params={"name": name}, content=data,
            headers={**ADMIN, "Content-Type": "text/plain"},
        )  # fmt: skip
        answer.raise_for_status()
    pipe.add_contest(CONTEST, lexicon=BEFORE, game="crosstiles")
    team = pipe.add_team("club-house", contest=CONTEST, uploads_logs=True)
    for log in games:
        pipe.accepted(team, log)
    started = time.perf_counter()
    drain(pipe.services)
    live = time.perf_counter() - started
    deps = worker_deps(pipe.services)
    ids = [pipe.store.find_lexicon(name).id for name in (BEFORE, AFTER)]  # type: ignore[union-attr]
    deps.rulesets.diff(ids[0], ids[1])  # loads both lists too

    # Full and affected-only runs in turn, so that whatever else the host does slows both.
    fulls: list[tuple[dict[str, Any], float, dict[str, Any]]] = []
    affected: list[tuple[dict[str, Any], float, dict[str, Any]]] = []
    for _ in range(runs):
        for mode, kept in (("full", fulls), ("affected", affected)):
            run, taken = rejudge(pipe, deps, mode)
            kept.append((run, taken, _results(pipe, run)))
            forget(pipe, run)
    full, _, full_results = fulls[0]
    run, _ = rejudge(pipe, deps, "affected")
    applied = pipe.client.post(f"/v1/rejudges/{run['id']}/apply", headers=ADMIN).json()
    board = _whole_board(pipe)
    same_board = (board["players"], board["invalid"]) == full_results["standings"]

    verdicts = [c for c in full["changed"] if c["old_valid"] != c["new_valid"]]
    before_valid = sum(1 for v in full_results["before"].values() if v["valid"])
    after_valid = sum(1 for v in full_results["after"].values() if v["valid"])
    full_time = statistics.median(taken for _, taken, _ in fulls)
    times = [taken for _, taken, _ in affected]
    judged = [run["total"] - run["carried"] for run, _, _ in affected]
    same = all(found == full_results for *_, found in fulls + affected) and same_board
    median = statistics.median(times)
    return {
        "games in the contest": f"{len(games)}",
        f"valid under {BEFORE} / {AFTER}": f"{before_valid} / {after_valid}",
        "live judging (all games, one process)": f"{live:.1f} s ({len(games) / live:.0f} games/s)",
        "games whose verdict changes": f"{len(verdicts)} ({100 * len(verdicts) / len(games):.1f} %)",
        "games whose verdict or winners change": f"{len(full['changed'])}",
        "players whose standing moves": f"{len(full['rank_changes'])}",
        f"full rejudge, median of {runs}": (
            f"{full['total']} games in {full_time:.2f} s "
            f"(runs: {', '.join(f'{t:.2f}' for _, t, _ in fulls)} s)"
        ),
        "affected-only: games re-verified": (
            f"{judged[0]} of {len(games)} ({100 * judged[0] / len(games):.1f} %), "
            f"{affected[0][0]['carried']} carried over"
        ),
        f"affected-only time, median of {len(times)}": (
            f"{median:.2f} s = {100 * median / full_time:.1f} % of the full rejudge's "
            f"(runs: {', '.join(f'{t:.2f}' for t in times)} s)"
        ),
        "affected-only results identical to full": (
            f"{'yes' if same else 'NO'} (every game's verdict and winners, the preview's "
            "changes and standings moves, and the standings once applied)"
        ),
        "the last affected-only run, applied": f"{applied['state']}",
    }


def rejudge(pipe: Pipeline, deps: WorkerDeps, mode: str) -> tuple[dict[str, Any], float]:
    """A run to the corrected list, judged through as the workers would; (its preview, the
    seconds from its start to ready)."""
    started = time.perf_counter()
    run = pipe.client.post(
        f"/v1/contests/{CONTEST}/rejudges", json={"lexicon": AFTER, "mode": mode}, headers=ADMIN
    ).json()
    for run_id in pipe.publisher.rejudges:
        produce(deps, run_id, pipe.publisher.publish_batch)
    for run_id, ids in pipe.publisher.batches:
        judge_batch(deps, run_id, ids)
    pipe.publisher.rejudges.clear()
    pipe.publisher.batches.clear()
    ready = deps.rejudges.get(run["id"])
    taken = time.perf_counter() - started  # to ready: the preview is read afterwards
    assert ready is not None and ready.state == RejudgeState.READY, ready
    shown = pipe.client.get(f"/v1/rejudges/{run['id']}", headers=ADMIN).json()
    return shown, taken


def _results(pipe: Pipeline, run: dict[str, Any]) -> dict[str, Any]:
    """What a run decided: every game's verdict and winners under both lists, the preview, and
    the standings under the corrected list."""
    new, old = (run["lexicon"], run["layout"]), (run["from_lexicon"], run["from_layout"])
    return {
        "before": crosstiles_sql.game_verdicts(pipe.store, CONTEST, old),
        "after": crosstiles_sql.game_verdicts(pipe.store, CONTEST, new),
        "changed": run["changed"],
        "moves": run["rank_changes"],
        "standings": (
            crosstiles_sql.game_standings(pipe.store, CONTEST, new),
            crosstiles_sql.invalid_games(pipe.store, CONTEST, new),
        ),
    }


def forget(pipe: Pipeline, run: dict[str, Any]) -> None:
    """Cancel the run and delete its results, so the next run starts from nothing
    (measurement only: the product never deletes results)."""
    pipe.client.post(f"/v1/rejudges/{run['id']}/cancel", headers=ADMIN)
    under = and_(results.c.lexicon_id == run["lexicon"], results.c.layout_id == run["layout"])
    with pipe.store.engine.begin() as conn:
        ids = select(results.c.id).where(under)
        drop_details(conn, ids)
        conn.execute(delete(results).where(under))


def _whole_board(pipe: Pipeline) -> dict[str, Any]:
    """The standings with every page joined (the API gives at most 1,000 entries a page)."""
    path = f"/v1/contests/{CONTEST}/leaderboard?limit=1000"
    return join_pages(lambda page: pipe.client.get(page).json(), path)


if __name__ == "__main__":
    sys.exit(main())
