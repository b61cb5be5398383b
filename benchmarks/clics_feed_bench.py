"""What following the CLICS event feed costs intake: the same upload spike three times against
one local stack, each into a contest of its own: with no follower, with FOLLOWERS clients
following the contest's feed (in a process of their own), and with none again. The followed
burst's intake is compared with the mean of the two others (the goal: at most 10 % slower),
and each follower's final state with what the REST endpoints serve.

    python -m benchmarks.clics_feed_bench [--uploads 5000] [--concurrency 200] [--followers 50]

Prints the figures; exits 1 if an upload was not acknowledged or a follower missed an event.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import httpx

from benchmarks.fixtures import burst_arguments, burst_plan, intake_stack, shared_lexicon
from devstack.burst import Burst, run_burst
from devstack.load import prepare
from devstack.plan import Corpus, Plan, build_corpus
from devstack.proof import event_mark, follow_events
from devstack.testing.clics_followers import (
    differences,
    events_of,
    final_state,
    following,
    order_problems,
)
from devstack.testing.stack_process import RunningStack

GOAL_SLOWDOWN = 0.10
KINDS = ("teams", "submissions", "judgements", "problems")


def spike(http: httpx.Client, plan: Plan, tokens: list[str], corpus: Corpus) -> tuple[Burst, float]:
    """One burst into the plan's contest, then the wait for its last result; (the burst, its
    intake rate)."""
    mark = event_mark(http, plan)
    burst = run_burst(plan, tokens, corpus, time.monotonic() + plan.timeout)
    ids = [u.submission for u in burst.acknowledged if u.submission]
    follow_events(http, plan, mark, ids, time.monotonic() + plan.timeout)
    return burst, len(burst.acknowledged) / burst.elapsed


def followed_problems(http: httpx.Client, contest: str, feeds: Path, wait_s: float) -> list[str]:
    """What the followers got wrong against the REST endpoints, once they have had `wait_s`."""
    time.sleep(1.1)  # past the second public reads are shared for
    rest = {kind: http.get(f"/clics/contests/{contest}/{kind}").json() for kind in KINDS}
    deadline = time.monotonic() + wait_s
    while True:
        problems = [
            f"{path.name}: {problem}"
            for path in sorted(feeds.glob("*.ndjson"))
            for events in [events_of(path)]
            for problem in order_problems(events) + differences(final_state(events), rest)
        ]
        if not problems or time.monotonic() > deadline:
            return problems
        time.sleep(2)


def main() -> int:
    parser = argparse.ArgumentParser()
    burst_arguments(parser, uploads=5000)
    parser.add_argument("--teams", type=int, default=50)
    parser.add_argument("--moves", type=int, default=120)
    parser.add_argument("--followers", type=int, default=50)
    args = parser.parse_args()
    lexicon = shared_lexicon()
    with (
        intake_stack("tj-clics-feed-", args.api_workers) as stack,
        httpx.Client(base_url=stack.url, timeout=60) as http,
        tempfile.TemporaryDirectory(prefix="tj-feeds-") as scratch,
    ):
        plans = [_plan(stack, f"feed-{n}", args) for n in range(3)]
        corpus = build_corpus(lexicon, plans[0])
        tokens = [prepare(http, plan, lexicon) for plan in plans]
        _, alone = spike(http, plans[0], tokens[0], corpus)
        with following(stack.url, plans[1].contest, args.followers, Path(scratch)) as feeds:
            burst, followed = spike(http, plans[1], tokens[1], corpus)
            problems = followed_problems(http, plans[1].contest, feeds, 60.0)
        _, alone_again = spike(http, plans[2], tokens[2], corpus)
    return report(args, alone, followed, alone_again, burst, problems)


def _plan(stack: RunningStack, contest: str, args: argparse.Namespace) -> Plan:
    return burst_plan(stack, contest, uploads=args.uploads, concurrency=args.concurrency,
                      teams=args.teams, moves=args.moves, timeout=1800)  # fmt: skip


def report(
    args: argparse.Namespace,
    alone: float,
    followed: float,
    alone_again: float,
    burst: Burst,
    problems: list[str],
) -> int:
    baseline = (alone + alone_again) / 2
    slowdown = 1 - followed / baseline
    unacknowledged = args.uploads - len(burst.acknowledged)
    lines = [
        f"clics feed: {args.uploads} uploads from {args.concurrency} concurrent clients, "
        f"{args.api_workers} API processes; {args.followers} feed followers in the second burst",
        f"  intake, no followers      {alone:.1f} accepted/s",
        f"  intake, {args.followers} followers      {followed:.1f} accepted/s",
        f"  intake, no followers      {alone_again:.1f} accepted/s (again)",
        f"  slower with followers     {slowdown * 100:.1f} %  (against the mean of the two; "
        f"goal <= {GOAL_SLOWDOWN * 100:.0f} %)",
        f"  not acknowledged          {unacknowledged}  (must be 0)",
        f"  followers' problems       {len(problems)}  (must be 0: missed, extra or out of order)",
    ]
    print("\n".join(lines))
    for problem in problems[:10]:
        print(f"  problem: {problem}")
    return 1 if problems or unacknowledged else 0


if __name__ == "__main__":
    sys.exit(main())
