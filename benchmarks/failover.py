"""Failovers of the database and the broker at a deadline, on the cluster of
devstack/testing/cluster/ (three database hosts under Patroni, two Redis hosts under Sentinel,
two API hosts, two worker hosts): for each scenario of devstack/testing/cluster/failover.py,
over --rounds rounds, the longest time intake acknowledged nothing (goal <= 15 s), the longest
pause in judging with work waiting (goal <= 30 s), the time to a new primary, and the old
primary's return as a replica.

    python -m benchmarks.failover [--rounds 3] [--uploads 720] [--rate 36]
        [--only database-cut,redis-kill,...]

Needs root (ip netns). Prints one line a scenario and round, then a table of medians and
maxima; exits 1 if an acknowledged upload was lost or judged twice, a request was answered
500, or an old primary took a write.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.fixtures import shared_lexicon
from devstack.testing.cluster.checks import one_line
from devstack.testing.cluster.cluster import cluster
from devstack.testing.cluster.failover import FAULTS, GOALS, Outcome, run

FIGURES = ("elected_s", "intake_outage_s", "judging_pause_s", "returned_s")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3, help="runs of each scenario (>= 1)")
    parser.add_argument("--uploads", type=int, default=720, help="uploads a burst")
    parser.add_argument("--rate", type=float, default=36.0, help="uploads started a second")
    parser.add_argument("--only", default="", help="scenarios by name, comma-separated")
    args = parser.parse_args()
    chosen = [f for f in FAULTS if not args.only or f"{f.service}-{f.how}" in args.only.split(",")]
    lexicon = shared_lexicon()
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="tj-failover-") as work:
        began = time.monotonic()
        with cluster(Path(work)) as made:
            print(f"cluster up in {time.monotonic() - began:.1f} s: "
                  f"{', '.join(made.network.hosts)}", flush=True)  # fmt: skip
            for round_ in range(args.rounds):
                for fault in chosen:
                    made.heal()
                    contest = f"{fault.contest}-{round_}"
                    outcome = run(made, lexicon, fault, contest, uploads=args.uploads,
                                  rate=args.rate, seed=round_ + 2)  # fmt: skip
                    outcomes.append(outcome)
                    print(f"round {round_ + 1}, {fault.title}: {one_line(**outcome.figures())}",
                          flush=True)  # fmt: skip
                    for problem in outcome.problems[:10]:
                        print(f"  PROBLEM {problem}", flush=True)
    print()
    print("| scenario | " + " | ".join(FIGURES) + " |")
    print("|---|" + "---|" * len(FIGURES))
    for fault in chosen:
        mine = [o for o in outcomes if o.fault == fault]
        cells = []
        for name in FIGURES:
            values = [float(getattr(o, name)) for o in mine]
            goal = GOALS.get(name)
            met = "" if goal is None else (" ok" if max(values) <= goal else " OVER")
            cells.append(f"{statistics.median(values):.1f} (max {max(values):.1f}){met}")
        print(f"| {fault.title} | " + " | ".join(cells) + " |")
    print(f"goals: {GOALS}; {args.rounds} round(s), {args.uploads} uploads at {args.rate}/s")
    lost = [o for o in outcomes if o.problems or o.acknowledged < o.sent]
    restarted = [o for o in outcomes if o.restarted_workers]
    print(f"workers restarted: {sum(len(o.restarted_workers) for o in restarted)} "
          f"(they follow the new primary without a restart when 0)")  # fmt: skip
    idle = sum(1 for o in outcomes for judged in o.tasks_after.values() if judged <= 0)
    silent = sum(len(o.unanswering) for o in outcomes)
    print(f"worker hosts that judged none of the uploads after a failover: {idle}; "
          f"that did not answer remote control: {silent}")  # fmt: skip
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
