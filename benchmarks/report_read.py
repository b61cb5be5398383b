"""Report read figures (prints, asserts nothing): a light upload's report is made when it is first
read (`core.reports`); this times that first read, and a second read of the stored object, for
every upload of a judged corpus, through a stack as `tilejudge up` runs it (two API processes,
two workers, idle by the time the reads start).

    python -m benchmarks.report_read [--submissions 200] [--moves 3000]

The first read in each API process also loads the word list (about 0.7 s for 370,105 words);
`max` shows it, and the p99 leaves it out only if fewer than 1 % of the reads pay it.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from benchmarks.fixtures import open_contest
from benchmarks.pipeline_bench import EXACTLY, pct, upload_all, wait_judged
from core.games import DEFAULT, game
from devstack.testing.stack_process import running_stack
from devstack.testing.word_lists import cached_list
from judge import Lexicon

GOAL_MS = 100.0


def timed_reads(http: httpx.Client, headers: dict[str, str], ids: list[str]) -> list[float]:
    """Milliseconds per whole report read (gzip accepted, as browsers and httpx do)."""
    spent = []
    for sid in ids:
        began = time.perf_counter()
        response = http.get(f"/v1/submissions/{sid}/report", headers=headers)
        response.raise_for_status()
        spent.append(1000 * (time.perf_counter() - began))
    return spent


def show(name: str, spent: list[float]) -> None:
    print(
        f"{name:32s} p50 {statistics.median(spent):6.1f} ms, p99 {pct(spent, 0.99):6.1f} ms, "
        f"max {max(spent):7.1f} ms ({len(spent)} reads)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--submissions", type=int, default=200)
    parser.add_argument("--moves", type=int, default=3000)
    args = parser.parse_args()
    words = cached_list("words_alpha.txt").read_bytes()
    lexicon = Lexicon.from_bytes(words)
    played = game(DEFAULT)  # the game of `open_contest`'s contest, which names none
    rules = played.default_rules()
    corpus = [played.sample(lexicon, rules, n, args.moves) for n in range(args.submissions)]
    home = Path(tempfile.mkdtemp(prefix="tj-bench-"))
    env = EXACTLY | {"TILEJUDGE_REPORT_READS": "1000000"}
    with (
        running_stack(home, workers=2, env=env) as stack,
        httpx.Client(base_url=stack.url, timeout=60) as http,
    ):
        tokens = open_contest(http, stack, lists={"words_alpha": words}, teams=20)
        ids = upload_all(stack.url, tokens, corpus, concurrency=16)
        docs = wait_judged(http, stack, ids)
        judged = [d["id"] for d in docs if d["state"] == "judged"]
        print(f"corpus: {len(judged)} judged uploads of up to {args.moves} moves")
        first = timed_reads(http, stack.admin, judged)
        second = timed_reads(http, stack.admin, judged)
        show("first read (made, then stored)", first)
        show("second read (stored)", second)
        print(f"first read p99 / goal {GOAL_MS:.0f} ms: {pct(first, 0.99) / GOAL_MS:.2f}")


if __name__ == "__main__":
    main()
