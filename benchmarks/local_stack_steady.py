"""Upload-to-result latency of the stack exactly as `make run` starts it, at a steady load below
its capacity (prints, asserts nothing but the check): capacity first, then uploads evenly spaced
at `--load` of it, from enough teams that none passes the per-team rate limit.

    python -m benchmarks.local_stack_steady [--seconds 60] [--load 0.5] [--warm-up 10]
        [--distinct 1000] [--moves 0] [--seed 0] [--set NAME=VALUE ...]

Capacity is the offline judge's uploads/s on as many processes as the stack judges with, over
the very uploads then sent, measured with the stack up and idle (and again after, for
reference). The uploads are `benchmarks.local_stack`'s deadline mix by default: 300 to 3,000
moves, 1 % just under the upload limit, so the load is a fraction of what the judge does on what
teams send, and the tail shows what a near-limit upload costs on its way; `--moves N` sends
uploads of N moves each instead, a tail without the near-limit ones. `--distinct` uploads are
generated and sent again in turn, each time from another team (the same bytes from another team
are another submission). The first `--warm-up` seconds are sent at the same rate and left out
of the figures (the contest's word list is loaded then); the next `--seconds` are measured.
Upload to result is judged_at - received_at of each upload, from GET /v1/submissions/{id}, as
`benchmarks.local_stack` measures it. Every upload is checked as there: exits 1 if an
acknowledged upload was lost, judged twice or judged unlike the offline judge. The stages of the
uploads below the near-limit size (`benchmarks.local_stack_stages`) and the stack's CPU seconds
by role follow the figures.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import psutil

from benchmarks.fixtures import burst_plan, shared_lexicon
from benchmarks.local_stack import (
    load_average,
    machine_line,
    make_run_stack,
    overrides,
    set_line,
    set_option,
    stack_line,
)
from benchmarks.local_stack_mix import FEWEST_MOVES, MOST_MOVES, deadline_corpus
from benchmarks.local_stack_stages import marks, stage_lines
from benchmarks.pipeline_bench import cpu_by_role, judge_only, seconds
from benchmarks.pipeline_bench import processes as process_times
from core.games import DEFAULT, game
from devstack.burst import Burst, send_all
from devstack.load import new_contest_id, percentile, prepare
from devstack.plan import Corpus, Plan
from devstack.proof import event_mark, follow_events, verify
from infra.settings import Settings
from judge import Lexicon

CLIENTS = 32  # client threads: enough for the uploads in flight at once at a steady rate
# A team sends at most this share of the per-team limit: the limit counts any 60 s span, and a
# client thread may send an upload a little late, then its neighbour on time.
LIMIT_HEADROOM = 0.8
FOLLOW_TIMEOUT_S = 600.0  # after the last upload, for its result
READERS = 16  # threads reading the submissions back


def parse(argv: list[str] | None) -> tuple[argparse.Namespace, dict[str, str], Settings]:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.local_stack_steady", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    parser.add_argument("--seconds", type=float, default=60.0, help="measured, after the warm-up")
    parser.add_argument("--load", type=float, default=0.5, help="the share of capacity sent")
    parser.add_argument("--warm-up", type=float, default=10.0, help="seconds sent, not measured")
    parser.add_argument("--distinct", type=int, default=1000, help="different uploads generated")
    parser.add_argument("--moves", type=int, default=0, help="moves an upload (0: the mix)")
    parser.add_argument("--seed", type=int, default=0)
    set_option(parser)
    args = parser.parse_args(argv)
    if not (0 < args.load <= 2 and args.seconds > 0 and args.warm_up >= 0):
        parser.error("--load above 0 (2 at most), --seconds above 0, --warm-up 0 or more")
    if args.distinct < 10 or args.moves < 0:
        parser.error("--distinct 10 or more, --moves 0 or more")
    env, settings = overrides(parser, args.overrides)
    return args, env, settings


def distinct_uploads(lexicon: Lexicon, args: argparse.Namespace, limit: int) -> Corpus:
    """The uploads to send in turn: the deadline mix, or `--moves` moves each."""
    if not args.moves:
        return deadline_corpus(lexicon, args.distinct, args.distinct, args.seed, limit)
    played = game(DEFAULT)
    rules = played.default_rules()
    data = [
        played.sample(lexicon, rules, args.seed * 1_000_003 + n, args.moves)
        for n in range(args.distinct)
    ]
    expected = [played.judge(d, lexicon, rules, "").result.score for d in data]
    return Corpus(data, expected, lexicon, rules.id)


def teams_for(rate: float, per_minute: int, uploads: int, distinct: int) -> int:
    """Teams enough that none passes `LIMIT_HEADROOM` of the per-team limit at `rate` (upload
    n from team n % T), and with no factor in common with `distinct`, so that no team sends the
    same bytes twice among `uploads` (upload n is distinct upload n % `distinct`)."""
    teams = math.ceil(uploads / distinct)
    if per_minute > 0:
        teams = max(teams, math.ceil(rate * 60 / (per_minute * LIMIT_HEADROOM)))
    while math.gcd(teams, distinct) != 1:
        teams += 1
    return teams


def in_turn(pool: Corpus, uploads: int) -> Corpus:
    """`uploads` uploads: the pool's, again and again."""
    n = len(pool.data)
    data = [pool.data[i % n] for i in range(uploads)]
    expected = [pool.expected[i % n] for i in range(uploads)]
    return Corpus(data, expected, pool.lexicon, pool.rules_id)


def read_docs(http: httpx.Client, plan: Plan, ids: list[str]) -> dict[str, dict[str, Any]]:
    """Each submission as the API gives it, read by a few threads at once."""
    api = plan.client(http)
    with ThreadPoolExecutor(READERS) as pool:
        docs = pool.map(lambda sid: api.call("GET", f"/v1/submissions/{sid}"), ids)
        return {str(d["id"]): d for d in docs}


def _cpu() -> float:
    times = psutil.Process().cpu_times()
    return float(times.user + times.system)


def ms_line(values: list[float]) -> str:
    if not values:
        return "none"
    return (
        f"p50 {percentile(values, 0.5):.0f} ms, p95 {percentile(values, 0.95):.0f} ms, "
        f"p99 {percentile(values, 0.99):.0f} ms, max {max(values):.0f} ms ({len(values)} uploads)"
    )


def report(
    burst: Burst, corpus: Corpus, docs: dict[str, dict[str, Any]], plan: Plan, warm: int,
    near: int,
) -> list[str]:  # fmt: skip
    """The measured window's figures: uploads from index `warm` on; `near` bytes or more is a
    near-limit upload."""
    assert plan.rate is not None
    measured = [u for u in burst.uploads if u.index >= warm]
    first = {a.upload: a for a in reversed(burst.attempts)}  # each upload's first attempt
    starts = sorted(first[u.index].started for u in measured if u.index in first)
    lag = [
        1000 * (first[u.index].started - burst.started - u.index / plan.rate)
        for u in measured
        if u.index in first
    ]
    span = starts[-1] - starts[0] if len(starts) > 1 else 0.0
    achieved = (len(starts) - 1) / span if span else 0.0
    accept = [1000 * a.latency for a in burst.attempts if a.upload >= warm and a.outcome == "202"]
    to_result: list[float] = []
    by_size: dict[bool, list[float]] = {False: [], True: []}  # near the limit or not
    halves: dict[bool, list[float]] = {False: [], True: []}  # in the window's second half
    middle = warm + (len(burst.uploads) - warm) / 2
    for u in measured:
        doc = docs.get(str(u.submission))
        if not u.acknowledged or not doc or not doc.get("judged_at"):
            continue
        ms = 1000 * seconds(doc["received_at"], doc["judged_at"])
        to_result.append(ms)
        by_size[len(corpus.data[u.index]) >= near].append(ms)
        halves[u.index >= middle].append(ms)
    acked = sum(u.acknowledged for u in measured)
    answers = dict(sorted(burst.outcomes().items()))
    return [
        f"measured window: {len(measured)} uploads sent, {acked} acknowledged (answers over the "
        f"whole run {answers})",
        f"  rate          asked {plan.rate:.1f}/s, achieved {achieved:.1f}/s (first attempts); "
        f"send lag behind the schedule {ms_line(lag)}",
        f"  accept        {ms_line(accept)}",
        f"  UPLOAD TO RESULT {ms_line(to_result)}",
        f"    first half  {ms_line(halves[False])}",
        f"    second half {ms_line(halves[True])}",
        f"    near-limit uploads ({near / 2**20:.1f} MiB or more) {ms_line(by_size[True])}",
        f"    the others  {ms_line(by_size[False])}",
    ]


def stages(
    burst: Burst, corpus: Corpus, times: dict[str, dict[str, str]], warm: int, near: int
) -> list[str]:
    """`stage_lines` of the measured window's uploads below `near` bytes, against every
    near-limit upload of the run (a warm-up one may still be judged in the window)."""
    light, heavy = [], []
    for u in burst.acknowledged:
        if len(corpus.data[u.index]) >= near:
            heavy.append(str(u.submission))
        elif u.index >= warm:
            light.append(str(u.submission))
    return stage_lines(times, light, heavy)


def main(argv: list[str] | None = None) -> int:
    args, env, settings = parse(argv)
    shown = " ".join(sys.argv[1:] if argv is None else argv)
    print(f"command: python -m benchmarks.local_stack_steady {shown}".rstrip())
    print(set_line(env))
    print(machine_line(), flush=True)
    lexicon, limit = shared_lexicon(), settings.max_upload_bytes
    began = time.monotonic()
    pool = distinct_uploads(lexicon, args, limit)
    sizes = sorted(map(len, pool.data))
    near = limit // 2
    kind = (
        f"the deadline mix, {FEWEST_MOVES}-{MOST_MOVES} moves"
        if not args.moves
        else f"{args.moves} moves each"
    )
    print(
        f"uploads: {len(pool.data)} distinct ({kind}; {sizes[0] / 1000:.1f}-{sizes[-1] / 1000:.1f}"
        f" kB, median {statistics.median(sizes) / 1000:.1f} kB, "
        f"{sum(s >= near for s in sizes)} of {near / 2**20:.0f} MiB or more), "
        f"built in {time.monotonic() - began:.0f} s",
        flush=True,
    )
    with (
        tempfile.TemporaryDirectory(prefix="tj-local-steady-") as home,
        make_run_stack(Path(home), settings, env) as stack,
        httpx.Client(base_url=stack.url, timeout=60) as http,
    ):
        processes = settings.workers + settings.standby_workers  # as `local_stack` says why
        print(stack_line(settings, env, processes), flush=True)
        capacity = judge_only(pool.data, lexicon, processes)
        rate = args.load * capacity
        uploads = math.ceil(rate * (args.warm_up + args.seconds))
        warm = math.ceil(rate * args.warm_up)
        teams = teams_for(rate, settings.rate_limit_per_minute, uploads, len(pool.data))
        print(
            f"capacity: offline judge on {processes} processes {capacity:.1f} uploads/s over "
            f"these uploads (stack up, idle); sending {args.load:g} of it, {rate:.1f}/s evenly "
            f"spaced: {uploads} uploads ({warm} in {args.warm_up:g} s of warm-up, then "
            f"{args.seconds:g} s measured) from {teams} teams, {min(teams, CLIENTS)} clients; "
            f"load average {load_average()} before sending",
            flush=True,
        )
        corpus = in_turn(pool, uploads)
        window = args.warm_up + args.seconds
        plan = replace(
            burst_plan(
                stack, new_contest_id(datetime.now(UTC)), uploads=uploads,
                concurrency=min(teams, CLIENTS), teams=teams, moves=MOST_MOVES,
                timeout=window + FOLLOW_TIMEOUT_S,
            ),
            rate=rate,
        )  # fmt: skip
        tokens = prepare(http, plan, lexicon)
        mark = event_mark(http, plan)
        own, before = _cpu(), process_times()
        burst = send_all(plan, tokens, corpus.data, time.monotonic() + window + 60)
        client = _cpu() - own
        ids = [u.submission for u in burst.acknowledged if u.submission]
        events = follow_events(http, plan, mark, ids, time.monotonic() + FOLLOW_TIMEOUT_S)
        spent = cpu_by_role(before)
        problems = verify(http, plan, burst, corpus, events)
        docs = read_docs(http, plan, ids)
        after = judge_only(pool.data, lexicon, processes)
    sent = len({a.upload for a in burst.attempts})
    check = "OK" if not problems else f"{len(problems)} LOST OR MISJUDGED, the first:"
    print(
        f"check: {len(burst.acknowledged)} acknowledged uploads (of {sent} sent) judged exactly "
        f"once with the offline judge's score: {check}"
    )
    print(
        "\n".join(
            [*(f"  {p}" for p in problems[:20]), *report(burst, corpus, docs, plan, warm, near)]
        )
    )
    print("  stages of the others (from their events):")
    print("\n".join(stages(burst, corpus, marks(events, docs), warm, near)))
    print(f"CPU seconds, sending and judging (warm-up included): {spent}")
    print(
        f"offline judge after the run {after:.1f} uploads/s (before {capacity:.1f}); load "
        f"generator {1000 * client / max(1, len(burst.uploads)):.2f} CPU ms an upload"
    )
    print(f"load average {load_average()} after the stack stopped")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
