"""Full rejudges on two worker hosts against live judging (prints, asserts nothing), on the
cluster of devstack/testing/cluster/ (network namespaces: the database on Patroni, Redis under
Sentinel, SeaweedFS, two API hosts, two worker hosts judging with one process each).

Each round is a contest of its own: its uploads are stored and queued while the worker hosts
stand still, then judged live (the drain: uploads a second, from the thaw to the last
judgement). Then two full rejudges of that contest, each to a word list of its own:

- **by holder**, as the stack runs: each batch goes to the queue of the worker host that
  judged its uploads and holds them in its upload cache (`infra.bulk_hosts`);
- **shared**, as before batches had a holder: the contest's holders are cleared first, so every
  batch goes to the shared queue and is judged by whichever host takes it (about half of them
  on a host that must read the uploads from S3).

A rejudge's rate is its submissions over the time from the run's start to its last batch
recorded (the run's own timestamps); each ratio is against the round's live drain. Also how
many of the rejudged uploads the host holding them judged. The two rejudges alternate which
goes first, round by round. A warm-up rejudge first has both hosts load both lists.

    python -m benchmarks.cluster_rejudge [--uploads 1200] [--moves 3000] [--rounds 3]

Needs root (ip netns). Exits 1 if an upload was lost or judged twice.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.cluster_failover import WORKER_HOSTS, Run
from benchmarks.fixtures import shared_lexicon
from core import clock
from devstack.testing.cluster.cluster import Cluster, cluster
from devstack.testing.cluster.processes import wait_for
from devstack.testing.word_lists import cached_list

GOAL = 1.1


def fix_lists(made: Cluster) -> tuple[str, str]:
    """Two word lists besides the judge's: every 97th word gone, and every 89th."""
    words = cached_list("words_alpha.txt").read_text().split()

    def without_every(step: int) -> str:
        kept = "".join(word + "\n" for n, word in enumerate(words) if n % step)
        return made.register_lexicon(f"fix-{step}", kept.encode())

    return without_every(97), without_every(89)


def holders(made: Cluster, contest: str) -> dict[str, str]:
    """Each submission's holder, by the worker host's name ("none" if none is known)."""
    names = {}
    for name in WORKER_HOSTS:
        held = made.workers[name].home / "home" / "upload-cache" / "host-id"
        if held.exists():
            names[held.read_text().strip()] = name
    rows = made.sql("SELECT id, held_on FROM submissions WHERE contest_id = %s", contest)
    return {str(sid): names.get(held, "none" if held is None else str(held)) for sid, held in rows}


def spread(held: dict[str, str]) -> str:
    counts: dict[str, int] = {}
    for name in held.values():
        counts[name] = counts.get(name, 0) + 1
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items()))


def rejudge(made: Cluster, contest: str, lexicon: str, timeout: float = 900.0) -> tuple[float, int]:
    """A full rejudge of the contest to `lexicon`, waited for: submissions a second (the
    run's start to its last batch recorded), and how many submissions."""
    with made.admin() as http:
        started = made._ok(http.post(f"/v1/contests/{contest}/rejudges",
                                     json={"lexicon": lexicon, "mode": "full"}))  # fmt: skip
    run_id = started["id"]

    def ready() -> bool:
        [(state,)] = made.sql("SELECT state FROM rejudge_runs WHERE id = %s", run_id)
        return str(state) == "ready"

    wait_for(ready, timeout, f"rejudge {run_id} ready", interval=0.2)
    [(created, updated, total)] = made.sql(
        "SELECT created_at, updated_at, total FROM rejudge_runs WHERE id = %s", run_id
    )
    seconds = (clock.parse_time(updated) - clock.parse_time(created)).total_seconds()
    return int(total) / seconds, int(total)


def round_(run: Run, lists: tuple[str, str], uploads: int, moves: int, n: int) -> dict[str, float]:
    made = run.cluster
    contest = f"rejudge-{n}"
    sent = run.queued_backlog(contest, uploads, moves, seed=300 + n)
    thawed = datetime.now(UTC)
    ids = [s.submission for s in sent.acknowledged() if s.submission]
    made.wait_judged(contest, len(ids), 900)
    live = len(ids) / (max(made.judged_at(ids).values()) - thawed).total_seconds()
    print(f"round {n + 1}: {len(ids)} uploads of {moves} moves judged live at {live:.1f}/s; "
          f"held on {spread(holders(made, contest))}", flush=True)  # fmt: skip
    ratios: dict[str, float] = {}
    order = ("by holder", "shared") if n % 2 == 0 else ("shared", "by holder")
    for kind, lexicon in zip(order, lists, strict=True):
        before = holders(made, contest)  # who holds what: the shared run does not say
        if kind == "shared":
            made.sql("UPDATE submissions SET held_on = NULL WHERE contest_id = %s RETURNING id",
                     contest)  # fmt: skip
        rate, total = rejudge(made, contest, lexicon)
        ratios[kind] = rate / live
        after = holders(made, contest)
        same = sum(after[sid] == held for sid, held in before.items())
        print(f"  full rejudge {kind}: {total} at {rate:.1f}/s, ratio {ratios[kind]:.2f} to live; "
              f"judged by a host already holding it: {same} of {len(before)} "
              f"(held on {spread(before)} before, {spread(after)} after)", flush=True)  # fmt: skip
    return ratios


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--uploads", type=int, default=1200, help="a round's contest")
    parser.add_argument("--moves", type=int, default=3000, help="moves per upload")
    parser.add_argument("--rounds", type=int, default=3, help="rounds measured (>= 1)")
    args = parser.parse_args()
    lexicon = shared_lexicon()
    with tempfile.TemporaryDirectory(prefix="tj-cluster-") as work:
        began = time.monotonic()
        with cluster(Path(work)) as made:
            print(f"cluster up in {time.monotonic() - began:.1f} s: {', '.join(made.network.hosts)}",
                  flush=True)  # fmt: skip
            run = Run(made, lexicon)
            lists = fix_lists(made)
            warm = run.queued_backlog("warm-up", 40, 300, seed=299)
            made.wait_judged("warm-up", len(warm.acknowledged()), 300)
            for fix in lists:  # each host loads both lists, before anything is timed
                rejudge(made, "warm-up", fix)
            found: dict[str, list[float]] = {}
            for n in range(args.rounds):
                for kind, ratio in round_(run, lists, args.uploads, args.moves, n).items():
                    found.setdefault(kind, []).append(ratio)
            for kind, ratios in found.items():
                print(f"full rejudge {kind} / live judging on {len(WORKER_HOSTS)} worker hosts: "
                      f"median {statistics.median(ratios):.2f} of "
                      f"{', '.join(f'{r:.2f}' for r in ratios)}"
                      + (f" (goal >= {GOAL})" if kind == "by holder" else ""), flush=True)  # fmt: skip
            problems = run.problems()
            print(f"exactly once: {'OK' if not problems else f'{len(problems)} PROBLEMS'}")
            for problem in problems[:30]:
                print(f"  {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
