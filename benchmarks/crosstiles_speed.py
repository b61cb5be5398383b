"""Crosstiles verifier speed: `python -m benchmarks.crosstiles_speed [--games N] [--repeat R]`.

Prints figures and asserts nothing. One process, so every figure is for one core. The corpus is
whole valid games written by the bot (judge.crosstiles.generator) from fixed seeds: two to four
players, with exchanges, passes and missed deadlines in turn. It goes through the installed
verifier (mypyc-compiled when built), the pure-source verifier and the plain reference of
devstack/testing/plain_crosstiles.py in the same run, taking turns so that a busy machine slows
all three alike; the reports of all three are compared before anything is timed.
"""

from __future__ import annotations

import argparse
import gc
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import judge.crosstiles.engine
from benchmarks.machine import cpu_model
from devstack.testing.plain_crosstiles import plain_verify
from devstack.testing.sources import load_source
from infra import lexicon_files
from infra.settings import ClientSettings
from judge import Lexicon
from judge.crosstiles import Board, CrosstilesReport, default_board, generate, verify

Verify = Callable[[bytes, Lexicon, Board], CrosstilesReport]
COMPILED = not str(judge.crosstiles.engine.__file__).endswith(".py")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.crosstiles_speed", description=__doc__
    )
    parser.add_argument("--games", type=int, default=200, help="generated games")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of the whole corpus")
    parser.add_argument(
        "--lexicon", help="word list (default: crosstiles.txt in the cache `make lexicon` fills)"
    )
    args = parser.parse_args(argv)

    shown = " ".join(sys.argv[1:] if argv is None else argv)
    print(f"command: python -m benchmarks.crosstiles_speed {shown}".rstrip())
    print(f"python {platform.python_version()} on {cpu_model()}; one process (one core)")
    path = _lexicon_path(args.lexicon)
    if not path.is_file():
        print(
            f"crosstiles_speed: no {path}; run `make lexicon` or pass --lexicon PATH",
            file=sys.stderr,
        )
        return 2
    lexicon = Lexicon.from_bytes(path.read_bytes())
    board = default_board()
    print(f"lexicon: {path} ({len(lexicon):,} words, id {lexicon.id[:12]}...)")
    corpus = _corpus(lexicon, board, args.games)
    _timing(corpus, lexicon, board, args.repeat)
    return 0


def _lexicon_path(given: str | None) -> Path:
    if given:
        return Path(given)
    return ClientSettings.from_env().lexicon_cache / lexicon_files.CROSSTILES_LIST.file


def _corpus(lexicon: Lexicon, board: Board, games: int) -> list[bytes]:
    start = time.perf_counter()
    corpus = [
        generate(
            2 + n % 3,
            f"bench-{n}",
            lexicon,
            board,
            exchanges=n % 2 == 0,
            passes=n % 3 == 0,
            timeouts=n % 4 < 2,
            rng_seed=n,
        )
        for n in range(games)
    ]
    built = time.perf_counter() - start
    turns = sum(verify(log, lexicon, board).turns for log in corpus)
    print(
        f"\ncorpus: {games} games (seeds bench-0..bench-{games - 1}; 2-4 players; exchanges, "
        f"passes, missed deadlines in turn): {turns:,} turns, {turns / games:.1f} a game, "
        f"{sum(map(len, corpus)) / 1e3:,.0f} kB; generated in {built:.1f} s "
        f"({built / games * 1e3:.0f} ms a game, word index included)"
    )
    return corpus


def _timing(corpus: list[bytes], lexicon: Lexicon, board: Board, repeat: int) -> None:
    pure = _pure_verify()
    runs: dict[str, Callable[[bytes], object]] = {
        f"installed ({'mypyc-compiled' if COMPILED else 'not compiled'})": (
            lambda data: verify(data, lexicon, board)
        ),
        "pure source": lambda data: pure(data, lexicon, board),
        "plain reference": lambda data: plain_verify(data, lexicon.words, lexicon.id, board.id),
    }
    print(f"  reports agree (installed, pure source, plain): {_agree(corpus, lexicon, board)}")
    turns = sum(verify(log, lexicon, board).turns for log in corpus)
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            times[name].append(_time_corpus(run, corpus))

    print(f"\nverifying, best (median) of {repeat} runs of the whole corpus, taking turns:")
    for name, taken in times.items():
        best, median = min(taken), statistics.median(taken)
        print(
            f"  {name:28} {turns / best:>9,.0f} turns/s ({turns / median:,.0f})"
            f"  {len(corpus) / best:>7,.0f} games/s ({len(corpus) / median:,.0f})"
            f"  {best / len(corpus) * 1e6:5.0f} us/game"
        )
    plain = times["plain reference"]
    for name in list(runs)[:2]:
        ratio = min(plain) / min(times[name])
        median_ratio = statistics.median(plain) / statistics.median(times[name])
        print(f"  speed ratio {name} / plain reference: {ratio:.2f}x ({median_ratio:.2f}x)")


def _pure_verify() -> Verify:
    found: Verify = load_source(
        "judge/crosstiles/engine.py", "crosstiles_engine_pure_source"
    ).verify
    return found


def _agree(corpus: list[bytes], lexicon: Lexicon, board: Board) -> str:
    pure = _pure_verify()
    for number, log in enumerate(corpus):
        views = [
            _without_detail(verify(log, lexicon, board).to_json()),
            _without_detail(pure(log, lexicon, board).to_json()),
            _without_detail(plain_verify(log, lexicon.words, lexicon.id, board.id)),
        ]
        if views[0] != views[1] or views[0] != views[2] or not views[0]["valid"]:
            return f"NO (game bench-{number})"
    return "yes, and every game is valid"


def _without_detail(report: dict[str, Any]) -> dict[str, Any]:
    error = report["error"]
    return report | {"error": None if error is None else error | {"detail": ""}}


def _time_corpus(run: Callable[[bytes], object], corpus: list[bytes]) -> float:
    gc.collect()
    start = time.perf_counter()
    for data in corpus:
        run(data)
    return time.perf_counter() - start


if __name__ == "__main__":
    sys.exit(main())
