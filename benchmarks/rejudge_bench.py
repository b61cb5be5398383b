"""Rejudge figures (prints, asserts nothing), on a contest of stored submissions judged with the
2020 word list, rejudged with the fix (+abled +cyber +nerdy -unneccessary):

- full rejudge throughput against live judging throughput, same stack, same run: live
  judging is drained before the full rejudge and again at the end, and the ratio is also
  taken against both (the rate of one drain moves with whatever else the host runs then);
  then `--pairs` more full rejudges, each right between two live drains, and the median of
  the ratios, each against the mean of the drains around it. Those rejudges read the uploads
  from the worker host's upload cache (`infra.upload_cache`), since this host judged them live;
  a last one, between two more drains, reads every upload from S3 as a host that judged none of
  them would;
- affected-only against full, time and results (run three times: a run of a few seconds is at
  the mercy of whatever else the host does in them, where the full run spans minutes);
- the CPU seconds of each process role (worker pool, SeaweedFS, API, ...) over the first live
  drain (uploads stored, then judged), the first full rejudge and each affected-only one;
- live upload-to-result latency during a full rejudge against without one: the probes during
  the rejudge stop before it is expected to end (at most 85 % of the first full run's time),
  so each of them meets a rejudge under way. The probes go to a contest of their own on the
  same word list, so that no rejudge counts them: in the contest itself, 300 to 400 one-line
  probes among a rejudge's 5,000 to 10,000 submissions raised its count by 4 to 6 % for a
  small part of its work.

    python -m benchmarks.rejudge_bench [--submissions 5000] [--distinct 250] [--affected-runs 3]
        [--pairs 2] [--api-workers N]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import and_, delete, select

from benchmarks.fixtures import (
    BEFORE_FIX,
    JUDGE_LIST,
    UNLIMITED,
    api_workers_env,
    api_workers_option,
    open_contest,
)
from benchmarks.machine import machine_busy
from benchmarks.pipeline_bench import (
    against_around,
    cpu_by_role,
    drain_rate,
    pct,
    processes,
    seconds,
    upload_all,
    wait_judged,
)
from core.games import DEFAULT, game
from core.states import OPEN_REJUDGE_STATES, RejudgeMode, RejudgeState
from devstack.testing.stack_process import RunningStack, running_stack
from devstack.testing.word_lists import cached_list
from infra.sql.engine import make_engine
from infra.sql.games import drop_details
from infra.sql.schema import results
from judge import Lexicon

# Live uploads timed with and without a rejudge (60 s each): the p99 of 150 was the second
# worst upload, and one outlier moved it by half.
PROBES, PROBE_RATE = 300, 5.0
# The probes during a rejudge start this long after it and stop at this share of the first full
# run's time, so that none is sent after the rejudge ends.
PROBES_AFTER_S, PROBES_UNTIL = 2.0, 0.85
# Opening moves of the default game whose words the fix adds (cyber) or removes (unneccessary).
SPICE = [b"-2 0 2 0 cyber\n0 0 0 3 crab\n", b"-5 0 6 0 unneccessary\n0 -1 0 1 tub\n"]


def build_corpus(count: int, distinct: int) -> list[bytes]:
    """`distinct` generated games, each sent in variants (trailing blank lines) up to `count`;
    a few open with a word the fix changes, so the fix has something to change."""
    old = Lexicon.from_bytes(cached_list("words_alpha_2020-08-24.txt").read_bytes())
    played = game(DEFAULT)  # the game of `open_contest`'s contests, which name none
    rules = played.default_rules()
    games = [played.sample(old, rules, n, 3000) for n in range(distinct)]
    games = [SPICE[n % 2] + g if n % 25 == 0 else g for n, g in enumerate(games)]
    return [games[n % distinct] + b"\n" * (n // distinct) for n in range(count)]


LISTS = {"old": BEFORE_FIX, "fixed": JUDGE_LIST}
PROBES_CONTEST = "probes"  # the live probes' own contest, on the same list
POLL_S = 0.25  # between looks at a running rejudge
LIVE_AGAIN = 0.5  # the second live drain's uploads, a share of the contest's (2,500 of 5,000)


def more_variants(corpus: list[bytes], distinct: int, count: int) -> list[bytes]:
    """`count` uploads none of whose bytes are in `corpus`: its variants with more trailing
    blank lines than any of its own has."""
    extra = b"\n" * (len(corpus) // distinct + 1)
    return [corpus[n] + extra for n in range(count)]


def rejudge(http: httpx.Client, stack: RunningStack, mode: str) -> tuple[dict[str, Any], float]:
    """The run once it is no longer running, and its time from the moment it was created to
    the one it was ready, both as the server recorded them: exact however seldom this polls
    (a poll costs the API a few ms, which a run at 20 a second paid in a tenth of a core)."""
    run = http.post(
        "/v1/contests/bench/rejudges", json={"lexicon": "fixed", "mode": mode}, headers=stack.admin
    )
    run.raise_for_status()
    while True:
        shown = http.get(f"/v1/rejudges/{run.json()['id']}", headers=stack.admin).json()
        if shown["state"] != RejudgeState.RUNNING:
            return shown, seconds(shown["created_at"], shown["finished_at"])
        time.sleep(POLL_S)


def measured_rejudge(
    http: httpx.Client, stack: RunningStack, mode: str
) -> tuple[dict[str, Any], float, str, float, float]:
    """`rejudge`, with the CPU seconds of each process role and the machine's busy and idle
    seconds over it."""
    before, machine = processes(), machine_busy()
    run, spent = rejudge(http, stack, mode)
    busy, idle = (after - start for after, start in zip(machine_busy(), machine, strict=True))
    return run, spent, cpu_by_role(before), busy, idle


def live_latencies(
    http: httpx.Client,
    stack: RunningStack,
    tokens: list[str],
    corpus: list[bytes],
    rate: float,
    until: float | None = None,
) -> tuple[list[float], str]:
    """Upload-to-result latencies (ms) of `corpus` sent at `rate` to the probes' contest, none
    sent after `until`, and when the last of them was judged."""
    ids = upload_all(
        stack.url, tokens, corpus, concurrency=4, rate=rate, until=until, contest=PROBES_CONTEST
    )
    docs = wait_judged(http, stack, ids)
    failed = [d for d in docs if d.get("judged_at") is None]
    if failed:  # shown, not hidden in a crash: a probe that failed is a finding of its own
        reasons = sorted({f"{d.get('reason')}: {d.get('failure')}" for d in failed})
        print(f"  probes not judged: {len(failed)} of {len(docs)} ({'; '.join(reasons)})")
    latencies = [seconds(d["received_at"], d["judged_at"]) * 1000 for d in docs if d not in failed]
    # None sent: the window closed first (a contest whose rejudge takes less than a second).
    return latencies, max((d["judged_at"] for d in docs), default="")


def forget_run(stack: RunningStack, run: dict[str, Any]) -> None:
    """Cancel the run and delete its results, so the next run of the same ruleset starts from
    nothing (measurement only: the product never deletes results)."""
    with httpx.Client(base_url=stack.url, timeout=60) as http:
        http.post(f"/v1/rejudges/{run['id']}/cancel", headers=stack.admin)
    # The rows a game keeps beside each result go first, as the store's own deletions do: left
    # behind, they would meet the ids SQLite gives the next results.
    under = and_(results.c.lexicon_id == run["lexicon"], results.c.layout_id == run["layout"])
    engine = make_engine(f"sqlite:///{stack.home / 'tilejudge.sqlite3'}")
    try:
        with engine.begin() as conn:
            drop_details(conn, select(results.c.id).where(under))
            conn.execute(delete(results).where(under))
    finally:
        engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--submissions", type=int, default=5000)
    parser.add_argument("--distinct", type=int, default=250)
    parser.add_argument("--affected-runs", type=int, default=3)
    parser.add_argument(
        "--pairs", type=int, default=2, help="more full rejudges, each between two live drains"
    )
    api_workers_option(parser)
    args = parser.parse_args()
    corpus = build_corpus(args.submissions, args.distinct)
    lines = sum(c.count(b"\n") for c in corpus)
    print(f"contest: {len(corpus)} submissions ({args.distinct} distinct games), {lines} lines")
    home = Path(tempfile.mkdtemp(prefix="tj-rejudge-"))
    env = UNLIMITED | api_workers_env(args.api_workers)
    with (
        running_stack(home, workers=2, env=env) as stack,
        httpx.Client(base_url=stack.url, timeout=120) as http,
    ):
        tokens = open_contest(
            http,
            stack,
            lists={name: cached_list(file).read_bytes() for name, file in LISTS.items()},
            lexicon="old",
            teams=50,
        )
        probers = open_contest(
            http, stack, contest=PROBES_CONTEST, lists={}, lexicon="old", teams=5
        )
        started = processes()
        live = drain_rate(http, stack, tokens, corpus)
        print(f"live judging (queue drain, 2 worker processes): {live:7.1f} submissions/s")
        print(f"  CPU seconds, uploads stored, then drained: {cpu_by_role(started)}")

        probe = [b"0 0 1 0 at\n" + bytes(str(n), "ascii") + b"\n" for n in range(PROBES)]
        quiet, _ = live_latencies(http, stack, probers, probe, rate=PROBE_RATE)
        full_run, full_time, cpu, busy, idle = measured_rejudge(http, stack, RejudgeMode.FULL)
        full_rate = full_run["total"] / full_time
        print(
            f"full rejudge: {full_run['total']} in {full_time:.1f} s = {full_rate:7.1f} "
            f"submissions/s; ratio to live {full_rate / live:.2f}"
        )
        print(f"  CPU seconds: {cpu}; the whole machine busy {busy:.2f}, idle {idle:.2f}")
        full_changes = http.get(f"/v1/rejudges/{full_run['id']}", headers=stack.admin).json()
        forget_run(stack, full_run)

        ended: list[str] = []

        def full_rejudge() -> None:
            ended.append(rejudge(http, stack, RejudgeMode.FULL)[0]["finished_at"])

        second_full = threading.Thread(target=full_rejudge)
        began = time.monotonic()
        second_full.start()
        time.sleep(PROBES_AFTER_S)
        during, last_judged = live_latencies(
            http, stack, probers, [p + b"\n" for p in probe], PROBE_RATE,
            until=began + PROBES_UNTIL * full_time,
        )  # fmt: skip
        second_full.join()
        print(
            f"live upload-to-result without a rejudge: p50 {statistics.median(quiet):.0f} ms, "
            f"p99 {pct(quiet, 0.99):.0f} ms ({len(quiet)} uploads at {PROBE_RATE:.0f}/s)"
        )
        if not during:  # the window closed before the first probe: a rejudge of a second
            print(f"live upload-to-result during a full rejudge: none sent, the rejudge took "
                  f"{full_time:.1f} s; more submissions (--submissions) give it time")  # fmt: skip
        else:
            print(
                f"live upload-to-result during a full rejudge: p50 {statistics.median(during):.0f} "
                f"ms, p99 {pct(during, 0.99):.0f} ms; p99 ratio "
                f"{pct(during, 0.99) / pct(quiet, 0.99):.2f} ({len(during)} uploads at "
                f"{PROBE_RATE:.0f}/s"
                + (
                    ", each judged before the rejudge ended)"
                    if seconds(last_judged, ended[0]) > 0
                    else "; NB: the rejudge ended before the last of them was judged)"
                )
            )
        runs = http.get("/v1/contests/bench/rejudges", headers=stack.admin).json()["rejudges"]
        forget_run(stack, next(r for r in runs if r["state"] in OPEN_REJUDGE_STATES))

        times = []
        for _ in range(args.affected_runs):
            counted = processes()
            affected_run, affected_time = rejudge(http, stack, RejudgeMode.AFFECTED)
            affected_cpu = cpu_by_role(counted)
            affected_changes = http.get(
                f"/v1/rejudges/{affected_run['id']}", headers=stack.admin
            ).json()
            same = (
                sorted(map(str, full_changes["changed"]))
                == sorted(map(str, affected_changes["changed"]))
                and full_changes["rank_changes"] == affected_changes["rank_changes"]
            )
            print(
                f"affected-only rejudge: {affected_time:.2f} s ({affected_run['carried']} carried, "
                f"{affected_run['total'] - affected_run['carried']} judged) = "
                f"{100 * affected_time / full_time:.1f}% of the full rejudge's time; "
                f"same changes and rank changes as full: {'yes' if same else 'NO'} "
                f"({len(full_changes['changed'])} scores change)"
            )
            print(f"  CPU seconds: {affected_cpu}")
            times.append(affected_time)
            forget_run(stack, affected_run)
        median = statistics.median(times)
        print(
            f"affected-only, median of {len(times)}: {median:.2f} s = "
            f"{100 * median / full_time:.1f}% of the full rejudge's time"
        )
        # Live judging again, last (more uploads would change what the rejudges above
        # compare): one drain's rate moves with whatever else the host runs in those minutes,
        # so the full rejudge is set against both drains, one before it and one after.
        sent = list(corpus)
        again = more_variants(sent, args.distinct, max(1, round(LIVE_AGAIN * len(corpus))))
        later = drain_rate(http, stack, tokens, again)
        ratios = [against_around(full_rate, live, later)]
        print(
            f"live judging again, {len(again)} more uploads: {later:7.1f} submissions/s; "
            f"full rejudge / the mean of the two live drains: {ratios[0]:.2f}"
        )
        # The VM's speed drifts between drains minutes apart, so more full rejudges follow,
        # each right between two live drains and set against their mean.
        for _ in range(args.pairs):
            sent += again
            run, spent = rejudge(http, stack, RejudgeMode.FULL)
            forget_run(stack, run)
            before, rate = later, run["total"] / spent
            again = more_variants(sent, args.distinct, len(again))
            later = drain_rate(http, stack, tokens, again)
            ratios.append(against_around(rate, before, later))
            print(
                f"full rejudge: {run['total']} at {rate:7.1f} submissions/s between live drains "
                f"at {before:.1f} and {later:.1f}/s: {ratios[-1]:.2f}"
            )
        print(
            f"full rejudge / live, each against the live drains around it, median of "
            f"{len(ratios)}: {statistics.median(ratios):.2f} ({', '.join(f'{r:.2f}' for r in ratios)})"
        )
        # Every upload above was judged live on this host, so the rejudges read them from
        # its upload cache; one more reads them all from S3, as a host that judged none would.
        sent += again
        shutil.rmtree(home / "upload-cache", ignore_errors=True)
        run, spent, cpu, busy, idle = measured_rejudge(http, stack, RejudgeMode.FULL)
        forget_run(stack, run)
        earlier, rate = later, run["total"] / spent
        later = drain_rate(http, stack, tokens, more_variants(sent, args.distinct, len(again)))
        print(
            f"full rejudge reading every upload from S3 (the host's upload cache emptied): "
            f"{run['total']} at {rate:7.1f} submissions/s between live drains at {earlier:.1f} "
            f"and {later:.1f}/s: {against_around(rate, earlier, later):.2f}"
        )
        print(f"  CPU seconds: {cpu}; the whole machine busy {busy:.2f}, idle {idle:.2f}")


if __name__ == "__main__":
    main()
