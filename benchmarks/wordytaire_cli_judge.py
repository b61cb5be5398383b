"""The offline command against the plain reference, whole processes:
`python -m benchmarks.wordytaire_cli_judge [--files N] [--repeat R]`.

Writes N generated move lists (each uses up the bag, 10 % illegal lines) to a temporary
directory, then times, in turns, `tilejudge judge --game wordytaire --json` over all of them and
`python -m benchmarks.plain_judge_cli` (devstack/testing/plain_judge.py writing the same JSON
Lines) over the same files, each writing its reports to a file. Every run is a new process, so each figure
includes interpreter start, imports, reading the word list and the files, judging and writing.
Prints the best and median of R runs, the ratio, and whether the two agree on every report's
SPEC fields. Prints figures and asserts nothing."""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.machine import cpu_model
from benchmarks.wordytaire_judge import ILLEGAL_SHARE, MOVES, generated, resolved_list
from judge import Lexicon
from judge.wordytaire import default_layout

SPEC_FIELDS = ("file", "total", "legal", "illegal", "lexicon", "layout")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.wordytaire_cli_judge", description=__doc__
    )
    parser.add_argument("--files", type=int, default=200, help="generated move lists")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each command")
    parser.add_argument("--lexicon", help="word list (default: as the CLI finds it)")
    args = parser.parse_args(argv)

    shown = " ".join(sys.argv[1:] if argv is None else argv)
    print(f"command: python -m benchmarks.wordytaire_cli_judge {shown}".rstrip())
    print(f"python {platform.python_version()} on {cpu_model()}; each run one process")
    lexicon_path = resolved_list("wordytaire_cli_judge", args.lexicon)
    if lexicon_path is None:
        return 2
    layout = default_layout()
    with tempfile.TemporaryDirectory(prefix="cli-judge-") as scratch:
        files = _write_corpus(Path(scratch), lexicon_path, args.files)
        bin_dir = Path(sys.executable).parent
        commands = {
            "tilejudge judge --json": [
                str(bin_dir / "tilejudge"), "judge", "--game", "wordytaire", "--json",
                "--lexicon", str(lexicon_path), *files,
            ],
            "plain reference": [
                sys.executable, "-m", "benchmarks.plain_judge_cli", "--lexicon",
                str(lexicon_path), "--layout-id", layout.id, *files,
            ],
        }  # fmt: skip
        times: dict[str, list[float]] = {name: [] for name in commands}
        outputs: dict[str, Path] = {}
        for run in range(args.repeat):
            for name, command in commands.items():
                out = Path(scratch) / f"{name.split()[0]}-{run}.jsonl"
                times[name].append(_timed(command, out))
                outputs[name] = out
        moves = _moves(outputs["plain reference"])
        print(f"\n{len(files)} files, {moves:,} moves; best (median) of {args.repeat} runs:")
        for name, runs in times.items():
            best, median = min(runs), statistics.median(runs)
            print(
                f"  {name:24} {best:6.2f} s ({median:.2f})  {moves / best:>9,.0f} moves/s"
                f"  {best / len(files) * 1e3:6.1f} ms a file"
            )
        ratio = min(times["plain reference"]) / min(times["tilejudge judge --json"])
        print(f"  speed ratio tilejudge judge --json / plain reference: {ratio:.2f}x")
        print(f"  reports agree on every SPEC field and line: {_agree(outputs)}")
    return 0


def _write_corpus(scratch: Path, lexicon_path: Path, count: int) -> list[str]:
    start = time.perf_counter()
    lexicon = Lexicon.from_bytes(lexicon_path.read_bytes())
    files = []
    for seed, data in enumerate(generated(lexicon, default_layout(), count)):
        path = scratch / f"moves-{seed:04}.txt"
        path.write_bytes(data)
        files.append(str(path))
    size = sum(os.path.getsize(name) for name in files) / 1e6
    print(
        f"corpus: {count} files (seeds 0..{count - 1}, --moves {MOVES}, --illegal-share "
        f"{ILLEGAL_SHARE}), {size:.1f} MB, generated in {time.perf_counter() - start:.1f} s"
    )
    return files


def _timed(command: list[str], out: Path) -> float:
    with out.open("wb") as sink:
        start = time.perf_counter()
        subprocess.run(command, stdout=sink, check=True)
        return time.perf_counter() - start


def _moves(path: Path) -> int:
    with path.open() as reports:
        return sum(len(json.loads(line)["lines"]) for line in reports)


def _spec_view(line: str) -> tuple[Any, ...]:
    report = json.loads(line)
    lines = [(v["line"], v["ok"], v.get("score"), v.get("reason")) for v in report["lines"]]
    return (*(report[key] for key in SPEC_FIELDS), lines)


def _agree(outputs: dict[str, Path]) -> str:
    ours, plain = (outputs[name].read_text().splitlines() for name in outputs)
    if len(ours) != len(plain):
        return f"NO ({len(ours)} reports against {len(plain)})"
    for number, (a, b) in enumerate(zip(ours, plain, strict=True), 1):
        if _spec_view(a) != _spec_view(b):
            return f"NO (report {number})"
    return "yes"


if __name__ == "__main__":
    sys.exit(main())
