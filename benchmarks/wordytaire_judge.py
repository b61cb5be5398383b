"""Wordytaire's judge speed and lexicon cost:
`python -m benchmarks.wordytaire_judge [--submissions N] [--repeat R]`.

Prints figures and asserts nothing. One process, so every figure is for one core. The corpus is
generated submissions that use up the bag with about 10% illegal lines; it goes through the
installed engine (mypyc-compiled when built), the pure-source engine and the plain reference
judge of devstack/testing/plain_judge.py in the same run, taking turns so that a busy machine
slows all three alike.
"""

from __future__ import annotations

import argparse
import gc
import platform
import resource
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from benchmarks.machine import cpu_model
from devstack.testing.plain_judge import plain_judge
from devstack.testing.wordytaire_engines import COMPILED, installed_judge, pure_judge
from infra import lexicon_files
from infra.settings import ClientSettings
from judge import Lexicon
from judge.wordytaire import Layout, default_layout
from judge.wordytaire.generator import WordIndex, generate

MOVES = 6000  # more than ever fit: each game runs until the bag is used up
ILLEGAL_SHARE = 0.1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.wordytaire_judge", description=__doc__
    )
    parser.add_argument("--submissions", type=int, default=200, help="generated submissions")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of the whole corpus")
    parser.add_argument("--lexicon", help="word list (default: as the CLI finds it)")
    args = parser.parse_args(argv)

    shown = " ".join(sys.argv[1:] if argv is None else argv)
    print(f"command: python -m benchmarks.wordytaire_judge {shown}".rstrip())
    print(f"python {platform.python_version()} on {cpu_model()}; one process (one core)")
    path = resolved_list("wordytaire_judge", args.lexicon)
    if path is None:
        return 2
    lexicon = _lexicon_figures(path, args.repeat)
    layout = default_layout()
    corpus = _corpus(lexicon, layout, args.submissions)
    _judging_figures(corpus, lexicon, layout, args.repeat)
    return 0


def resolved_list(prog: str, given: str | None) -> Path | None:
    """The word list `--lexicon` names, else the one the CLI finds; None (said on stderr) when
    there is none."""
    try:
        return lexicon_files.resolve(given, ClientSettings.from_env())
    except lexicon_files.LexiconNotFound as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return None


def generated(lexicon: Lexicon, layout: Layout, submissions: int) -> list[bytes]:
    """The benchmarks' corpus: generated submissions (seeds 0..N-1) that use up the bag, with
    ILLEGAL_SHARE of their lines illegal."""
    index = WordIndex.build(lexicon.words)
    return [
        generate(index, layout, seed=seed, moves=MOVES, illegal_share=ILLEGAL_SHARE)
        for seed in range(submissions)
    ]


def _lexicon_figures(path: Path, repeat: int) -> Lexicon:
    data = path.read_bytes()
    gc.collect()
    rss_before = _rss()
    start = time.perf_counter()
    lexicon = Lexicon.from_bytes(data)
    times = [time.perf_counter() - start]
    rss_delta = _rss() - rss_before
    for _ in range(repeat - 1):
        start = time.perf_counter()
        Lexicon.from_bytes(data)
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    kept = Lexicon.from_bytes(data)
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del kept
    size = f"{len(data) / 1e6:.1f} MB, {len(lexicon):,} words"
    print(f"\nlexicon: {path} ({size}, id {lexicon.id[:12]}...)")
    print(
        f"  Lexicon.from_bytes: best {min(times) * 1e3:.0f} ms, median "
        f"{statistics.median(times) * 1e3:.0f} ms; tracemalloc peak {peak / 2**20:.1f} MiB, "
        f"held after {held / 2**20:.1f} MiB; process RSS +{rss_delta / 2**20:.1f} MiB"
    )
    return lexicon


def _corpus(lexicon: Lexicon, layout: Layout, submissions: int) -> list[bytes]:
    start = time.perf_counter()
    corpus = generated(lexicon, layout, submissions)
    built = time.perf_counter() - start
    reports = [installed_judge(data, lexicon, layout) for data in corpus]
    moves = sum(len(report.verdicts) for report in reports)
    illegal = sum(report.illegal for report in reports)
    placed = sum(report.tiles_placed for report in reports) / max(len(reports), 1)
    print(
        f"\ncorpus: {len(corpus)} submissions (seeds 0..{len(corpus) - 1}, --moves {MOVES}, "
        f"--illegal-share {ILLEGAL_SHARE}): {moves:,} moves, {illegal / max(moves, 1):.1%} "
        f"illegal, {placed:,.0f} of 10,000 tiles placed on average, "
        f"{sum(map(len, corpus)) / 1e6:.1f} MB; generated in {built:.1f} s"
    )
    return corpus


def _judging_figures(corpus: list[bytes], lexicon: Lexicon, layout: Layout, repeat: int) -> None:
    engines: dict[str, Callable[[bytes], object]] = {
        f"installed ({'mypyc-compiled' if COMPILED else 'not compiled'})": (
            lambda data: installed_judge(data, lexicon, layout)
        ),
        "pure source": lambda data: pure_judge(data, lexicon, layout),
        "plain reference": lambda data: plain_judge(data, lexicon.words),
    }
    moves = sum(len(installed_judge(data, lexicon, layout).verdicts) for data in corpus)
    times: dict[str, list[float]] = {name: [] for name in engines}
    for _ in range(repeat):
        for name, run in engines.items():
            times[name].append(_time_corpus(run, corpus))

    print(f"\njudging, best (median) of {repeat} runs of the whole corpus, engines taking turns:")
    for name, runs in times.items():
        best, median = min(runs), statistics.median(runs)
        print(
            f"  {name:28} {moves / best:>9,.0f} moves/s ({moves / median:,.0f})"
            f"  {best / len(corpus) * 1e3:6.2f} ms/submission ({median / len(corpus) * 1e3:.2f})"
        )
    plain = min(times["plain reference"])
    for name in list(engines)[:2]:
        print(f"  speed ratio {name} / plain reference: {plain / min(times[name]):.2f}x")
    print(f"  verdicts agree on every line: {_agree(corpus, lexicon, layout)}")


def _time_corpus(run: Callable[[bytes], object], corpus: list[bytes]) -> float:
    gc.collect()
    start = time.perf_counter()
    for data in corpus:
        run(data)
    return time.perf_counter() - start


def _agree(corpus: list[bytes], lexicon: Lexicon, layout: Layout) -> str:
    for seed, data in enumerate(corpus):
        views = []
        for engine in (installed_judge, pure_judge):
            lines = [verdict.to_json() for verdict in engine(data, lexicon, layout).verdicts]
            views.append([{k: v for k, v in line.items() if k != "detail"} for line in lines])
        if views[0] != views[1] or views[0] != plain_judge(data, lexicon.words)["lines"]:
            return f"NO (seed {seed})"
    return "yes"


def _rss() -> int:
    """Resident set size in bytes (Linux); 0 where /proc is missing."""
    try:
        fields = Path("/proc/self/statm").read_text().split()
    except OSError:
        return 0
    return int(fields[1]) * resource.getpagesize()


if __name__ == "__main__":
    sys.exit(main())
