"""Deadline spike: every upload at once against a local stack, and the same bytes PUT straight
into the stack's own S3 at the same concurrency (before the burst and after it), for the
intake / raw-S3 throughput ratio.

    python -m benchmarks.spike_bench [--uploads 5000] [--concurrency 200] [--teams 50]

Prints the figures; exits 1 if an acknowledged upload was lost or misjudged, or any 5xx came.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from benchmarks.fixtures import burst_arguments, burst_plan, intake_stack, shared_lexicon
from core.intake import UPLOAD_CONTENT_TYPE
from devstack.burst import Burst, run_burst
from devstack.load import percentile, prepare
from devstack.plan import Plan, build_corpus
from devstack.proof import event_mark, follow_events, last_result_after, verify
from devstack.testing.stack_process import RunningStack
from infra.blobstore import S3BlobStore

TARGET_RATIO = 0.5


def raw_s3_rate(stack: RunningStack, corpus: list[bytes], concurrency: int, prefix: str) -> float:
    """PUTs per second of the same bytes into the stack's bucket, made as intake makes its write
    (the same S3 client configuration and call), at the same concurrency."""
    keys = stack.s3_credentials
    s3 = S3BlobStore.connect(
        stack.s3_endpoint,
        "tilejudge",
        "us-east-1",
        (keys.access_key, keys.secret_key),
        connections=concurrency,
    )

    def put(n: int) -> None:
        s3.put(f"raw-s3-bench/{prefix}/{n}", corpus[n], UPLOAD_CONTENT_TYPE)

    put(0)  # connect once before the clock starts, as the API's client has
    began = time.monotonic()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(put, range(len(corpus))))
    return len(corpus) / (time.monotonic() - began)


def drain_seconds(burst: Burst, last_result: float | None) -> float | None:
    """From the last acknowledgement to the last result: how long the queue took to empty."""
    acks = [a.started + a.latency - burst.started for a in burst.attempts if a.outcome == "202"]
    return None if last_result is None or not acks else last_result - max(acks)


def main() -> int:
    parser = argparse.ArgumentParser()
    burst_arguments(parser, uploads=5000)
    parser.add_argument("--teams", type=int, default=50)
    parser.add_argument("--moves", type=int, default=120)
    args = parser.parse_args()
    lexicon = shared_lexicon()
    with intake_stack("tj-spike-", args.api_workers) as stack:
        plan = burst_plan(
            stack, "spike", uploads=args.uploads, concurrency=args.concurrency,
            teams=args.teams, moves=args.moves, timeout=1800,
        )  # fmt: skip
        began = time.monotonic()
        corpus = build_corpus(lexicon, plan)
        print(
            f"corpus: {len(corpus.data)} generated uploads, "
            f"{sum(map(len, corpus.data)) / 1e6:.1f} MB, built in "
            f"{time.monotonic() - began:.0f} s"
        )
        # Raw S3 before the burst (a fresh store) and after it (the queue drained): SeaweedFS's
        # own rate varied 300-590 PUT/s between runs here, so the ratio is taken against the
        # higher of the two, the stricter figure.
        raw_before = raw_s3_rate(stack, corpus.data, args.concurrency, "before")
        with httpx.Client(base_url=stack.url, timeout=60) as http:
            tokens = prepare(http, plan, lexicon)
            mark = event_mark(http, plan)
            burst = run_burst(plan, tokens, corpus, time.monotonic() + plan.timeout)
            ids = [u.submission for u in burst.acknowledged if u.submission]
            events = follow_events(http, plan, mark, ids, time.monotonic() + plan.timeout)
            problems = verify(http, plan, burst, corpus, events)
        raw_after = raw_s3_rate(stack, corpus.data, args.concurrency, "after")
    return report(plan, burst, events, problems, raw_before, raw_after)


def report(
    plan: Plan,
    burst: Burst,
    events: list[dict[str, Any]],
    problems: list[str],
    raw_before: float,
    raw_after: float,
) -> int:
    raw = max(raw_before, raw_after)
    acked, outcomes = burst.acknowledged, burst.outcomes()
    server_errors = sum(n for k, n in outcomes.items() if k.startswith("5"))
    latencies = [x * 1000 for x in burst.accept_latencies()]
    intake = len(acked) / burst.elapsed
    last = last_result_after(burst, events)
    drain = drain_seconds(burst, last)
    lines = [
        f"spike: {plan.uploads} uploads from {plan.concurrency} concurrent clients, "
        f"{plan.teams} teams, one burst",
        f"  acknowledged        {len(acked)} (answers: {dict(sorted(outcomes.items()))})",
        f"  lost or misjudged   {len(problems)}  (must be 0)",
        f"  5xx                 {server_errors}  (must be 0)",
        f"  accept latency      p50 {percentile(latencies, 0.5):.0f} ms, "
        f"p95 {percentile(latencies, 0.95):.0f} ms, p99 {percentile(latencies, 0.99):.0f} ms",
        f"  intake              {intake:.1f} accepted/s ({burst.elapsed:.1f} s for the burst)",
        f"  last result         {_seconds(last)} after the first upload; queue drained "
        f"{_seconds(drain)} after the last acknowledgement",
        f"  raw S3 PUT          {raw_before:.1f} PUT/s before the burst, {raw_after:.1f} after "
        "the queue drained (same bytes, same concurrency, same SeaweedFS)",
        f"  intake / raw S3     {intake / raw:.2f}  (against the higher; target >= {TARGET_RATIO})",
    ]
    print("\n".join(lines))
    for problem in problems[:20]:
        print(f"  problem: {problem}")
    return 1 if problems or server_errors else 0


def _seconds(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f} s"


if __name__ == "__main__":
    sys.exit(main())
