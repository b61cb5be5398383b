"""Where intake's CPU goes: a burst of uploads against the local stack, with each process's CPU
time (user and kernel) read before and after, per acknowledged upload (prints, asserts nothing).

    python -m benchmarks.intake_cpu [--uploads 2000] [--concurrency 200] [--moves 120]
"""

from __future__ import annotations

import argparse
import time

import httpx
import psutil

from benchmarks.fixtures import burst_arguments, burst_plan, intake_stack, shared_lexicon
from devstack.burst import run_burst
from devstack.load import prepare
from devstack.plan import build_corpus

ROLES = ("uvicorn", "celery", "weed", "redis-server")


def role(process: psutil.Process) -> str:
    command = " ".join(process.cmdline())
    return next((name for name in ROLES if name in command), command[:40])


def cpu_times(processes: list[psutil.Process]) -> dict[int, tuple[float, float]]:
    times = {}
    for process in processes:
        try:
            t = process.cpu_times()
        except psutil.Error:
            continue
        times[process.pid] = (t.user + t.system, t.system)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    burst_arguments(parser, uploads=2000)
    parser.add_argument("--moves", type=int, default=120, help="moves per generated upload")
    args = parser.parse_args()
    lexicon = shared_lexicon()
    with intake_stack("tj-intake-cpu-", args.api_workers) as stack:
        plan = burst_plan(
            stack, "cpu", uploads=args.uploads, concurrency=args.concurrency, teams=50,
            moves=args.moves, timeout=600,
        )  # fmt: skip
        corpus = build_corpus(lexicon, plan)
        with httpx.Client(base_url=stack.url, timeout=60) as http:
            tokens = prepare(http, plan, lexicon)
        processes = psutil.Process(stack.process.pid).children(recursive=True)
        roles = {process.pid: role(process) for process in processes}
        me = psutil.Process()
        before, mine = cpu_times(processes), me.cpu_times()
        burst = run_burst(plan, tokens, corpus, time.monotonic() + plan.timeout)
        after, mine_after = cpu_times(processes), me.cpu_times()
    acked = sum(1 for upload in burst.uploads if upload.submission)
    print(f"{acked} acknowledged in {burst.elapsed:.1f} s = {acked / burst.elapsed:.1f}/s")
    print("CPU per acknowledged upload (ms): total, of which in the kernel")
    for process in processes:
        if process.pid not in after or process.pid not in before:
            continue
        total = after[process.pid][0] - before[process.pid][0]
        kernel = after[process.pid][1] - before[process.pid][1]
        if total > 0.05:
            print(
                f"  {roles[process.pid]:14s} pid {process.pid:7d} "
                f"{1000 * total / acked:6.2f}  {1000 * kernel / acked:5.2f}"
            )
    client = (mine_after.user + mine_after.system) - (mine.user + mine.system)
    print(f"  {'load client':14s} {'':11s} {1000 * client / acked:6.2f}")


if __name__ == "__main__":
    main()
