"""Pipeline figures (prints, asserts nothing): end-to-end vs judge-only throughput on the same
two cores, upload-to-result latency at a steady load, and lexicon memory (PSS) with 4 children.

    python -m benchmarks.pipeline_bench [--submissions 300] [--moves 3000] [--rounds 5]
        [--api-workers N] [--skip-memory]
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.fixtures import UNLIMITED_RATE, api_workers_env, api_workers_option, open_contest
from core import clock
from core.games import DEFAULT, game
from devstack.burst import send_all
from devstack.plan import Plan
from devstack.testing.stack_process import RunningStack, running_stack
from devstack.testing.word_lists import cached_list
from judge import Lexicon

_LEXICON: Lexicon | None = None
# The pool exactly as big as the figures say (no process standing by for rejudges).
EXACTLY = {"TILEJUDGE_STANDBY_WORKERS": "0"}


def processes() -> dict[int, tuple[str, int, float]]:
    """Every process of the machine: pid -> (command, parent pid, CPU seconds so far)."""
    tick = os.sysconf("SC_CLK_TCK")
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # exited meanwhile
        fields = stat.rsplit(")", 1)[1].split()
        found[int(entry.name)] = (
            command,
            int(fields[1]),
            (int(fields[11]) + int(fields[12])) / tick,
        )
    return found


def _role(pid: int, table: dict[int, tuple[str, int, float]]) -> str | None:
    """What a descendant of this benchmark is in the stack; None for any other process."""
    chain, at = [], pid
    while at in table and at != os.getpid():
        chain.append(table[at][0])
        at = table[at][1]
    if at != os.getpid():
        return None
    command = chain[0]
    if any("uvicorn" in c for c in chain):
        return "API processes"
    if "celery" in command:
        return "worker pool" if any("celery" in c for c in chain[1:]) else "Celery parents"
    for name in ("redis-server", "weed", "postgres"):
        if name in command:
            return name
    return command.split(" ", 1)[0].rsplit("/", 1)[-1]


def cpu_by_role(before: dict[int, tuple[str, int, float]]) -> str:
    """CPU seconds since `before` of the stack's processes by role, and of this process (the
    load generator and the client following the results)."""
    now = processes()
    spent: dict[str, float] = {}
    for pid, (command, _, seconds) in now.items():
        role = "load generator" if pid == os.getpid() else _role(pid, now)
        if role is None:
            continue
        was = before.get(pid)
        used = seconds - (was[2] if was and was[0] == command else 0.0)
        spent[role] = spent.get(role, 0.0) + used
    return ", ".join(
        f"{role} {seconds:.1f}" for role, seconds in sorted(spent.items(), key=lambda kv: -kv[1])
    )


def _judge_total(data: bytes) -> int:
    assert _LEXICON is not None
    played = game(DEFAULT)
    return played.judge(data, _LEXICON, played.default_rules(), "").result.score


def judge_only(corpus: list[bytes], lexicon: Lexicon, processes: int) -> float:
    """Submissions per second, judged by `processes` forked processes sharing the lexicon."""
    global _LEXICON
    _LEXICON = lexicon
    pool = multiprocessing.get_context("fork").Pool(processes)
    try:
        pool.map(_judge_total, corpus[:processes])  # warm up the children
        start = time.perf_counter()
        pool.map(_judge_total, corpus, chunksize=1)
        return len(corpus) / (time.perf_counter() - start)
    finally:
        # Closed and joined, not terminated (what `with` does): terminate() takes the task
        # queue's lock in this process and then signals the children, which run the SIGTERM
        # handler `running_stack` set (SystemExit) instead of dying; one was seen still
        # waiting on that lock, and join() waiting on it, for ever. Closed, each child takes
        # its end-of-work marker off the queue and exits.
        pool.close()
        pool.join()


def upload_all(
    url: str,
    tokens: list[str],
    corpus: list[bytes],
    concurrency: int,
    rate: float | None = None,
    until: float | None = None,
    contest: str = "bench",
) -> list[str]:
    """Upload every submission to `contest` through the load generator (its lean client:
    httpx's own CPU would be taken from the judges on these cores); the submission ids, in
    corpus order. With `until` (monotonic), none is sent after it: the ids of those sent."""
    plan = Plan(
        url=url, contest=contest, uploads=len(corpus), concurrency=concurrency,
        teams=len(tokens), admin_token="", rate=rate,
    )  # fmt: skip
    burst = send_all(plan, tokens, corpus, until or time.monotonic() + 900)
    sent = [u for u in burst.uploads if until is None or u.outcome != "not sent"]
    refused = [upload for upload in sent if not upload.acknowledged]
    if refused:
        raise RuntimeError(f"{len(refused)} uploads refused, the first: {refused[0].outcome}")
    return [str(upload.submission) for upload in sent]


def wait_judged(http: httpx.Client, stack: RunningStack, ids: list[str]) -> list[dict[str, Any]]:
    """`wait_events`, then `read_all`."""
    wait_events(http, stack, ids)
    return read_all(http, stack, ids)


def read_all(http: httpx.Client, stack: RunningStack, ids: list[str]) -> list[dict[str, Any]]:
    """Each submission, read once."""
    return [http.get(f"/v1/submissions/{sid}", headers=stack.admin).json() for sid in ids]


def wait_events(http: httpx.Client, stack: RunningStack, ids: list[str]) -> None:
    """Follow the event log (one request a round, so watching costs the API little) until every
    id has its submission.judged event."""
    pending, after = set(ids), 0
    deadline = time.monotonic() + 900
    while pending and time.monotonic() < deadline:
        page = http.get(
            "/v1/events", params={"after": after, "limit": 1000}, headers=stack.admin
        ).json()
        pending -= {e["submission"] for e in page["events"] if e["type"] == "submission.judged"}
        after = page["next"]
        if len(page["events"]) < 1000:
            time.sleep(0.1)


def drain_rate(
    http: httpx.Client, stack: RunningStack, tokens: list[str], corpus: list[bytes]
) -> float:
    """Judged per second once the workers are let loose on a queue already full: the worker
    processes are frozen (SIGSTOP) while the uploads are stored and queued, then thawed."""
    parent, children = worker_pids(stack)
    frozen = [parent, *children]
    for pid in frozen:
        os.kill(pid, signal.SIGSTOP)
    try:
        ids = upload_all(stack.url, tokens, corpus, concurrency=16)
    finally:
        started = clock.now()
        for pid in frozen:
            os.kill(pid, signal.SIGCONT)
    docs = wait_judged(http, stack, ids)
    return len(docs) / seconds(started, max(d["judged_at"] for d in docs))


def seconds(a: str, b: str) -> float:
    return (clock.parse_time(b) - clock.parse_time(a)).total_seconds()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def pss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1])
    return 0


def worker_pids(stack: RunningStack) -> tuple[int, list[int]]:
    parent = None
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ")
                env_home = str(stack.home).encode() in (proc / "environ").read_bytes()
            except OSError:
                continue
            if b"celery" in cmd and b" worker" in cmd and env_home:
                ppid = int((proc / "stat").read_text().split(")")[1].split()[1])
                if b"celery" not in Path(f"/proc/{ppid}/cmdline").read_bytes():
                    parent = int(proc.name)
    assert parent is not None, "no worker parent found"
    children = [
        int(p.name)
        for p in Path("/proc").iterdir()
        if p.name.isdigit() and _ppid(int(p.name)) == parent
    ]
    return parent, children


def _ppid(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[1])
    except OSError:
        return -1


def worker_total_after_tasks(
    words: bytes, corpus: list[bytes], env: dict[str, str]
) -> tuple[int, list[int]]:
    """Start a stack with 4 worker children, create the contest, restart it (so a preloading
    parent finds the contest's word list), judge 40 uploads, and read the workers' PSS."""
    home = Path(tempfile.mkdtemp(prefix="tj-pss-"))
    with (
        running_stack(home, workers=4, env=env | EXACTLY) as stack,
        httpx.Client(base_url=stack.url, timeout=60) as http,
    ):
        tokens = open_contest(http, stack, lists={"words_alpha": words}, teams=4)
    with (
        running_stack(home, workers=4, env=env | EXACTLY) as stack,
        httpx.Client(base_url=stack.url, timeout=60) as http,
    ):
        wait_judged(http, stack, upload_all(stack.url, tokens, corpus[:40], 8))
        parent, children = worker_pids(stack)
        return pss_kib(parent), [pss_kib(c) for c in children]


def memory_figures(words: bytes, corpus: list[bytes]) -> None:
    copy = one_copy_kib()
    tiny = b"\n".join(words.split(b"\n")[:2000]) + b"\n"
    runs = {
        "no word list to speak of (2,000 words), each child its own": (
            tiny,
            {"TILEJUDGE_PRELOAD": "0"},
        ),
        "370k words, each child loading its own": (words, {"TILEJUDGE_PRELOAD": "0"}),
        "370k words, preloaded in the parent": (words, {}),
    }
    totals = {}
    print("lexicon memory, 4 prefork children, after judging 40 uploads (PSS, MiB):")
    print(f"  one copy of the word list, loaded in a fresh process: {copy / 1024:.1f}")
    for name, (word_list, env) in runs.items():
        parent, children = worker_total_after_tasks(word_list, corpus, env)
        totals[name] = parent + sum(children)
        print(
            f"  {name}: parent {parent / 1024:.1f}, children {[round(c / 1024, 1) for c in children]}, "
            f"total {totals[name] / 1024:.1f}"
        )
    base, own, shared = totals.values()
    print(
        f"  attributable to the word list: each child its own {(own - base) / copy:.2f}x one copy, "
        f"preloaded {(shared - base) / copy:.2f}x one copy"
    )


def one_copy_kib() -> int:
    """PSS growth of a fresh process that loads the word list, in KiB."""
    code = "import sys; from benchmarks.pipeline_bench import print_one_copy; print_one_copy(sys.argv[1])"
    path = str(cached_list("words_alpha.txt"))
    out = subprocess.run(
        [sys.executable, "-c", code, path], capture_output=True, text=True, check=True
    )
    return int(out.stdout.strip())


def print_one_copy(path: str) -> None:
    data = Path(path).read_bytes()
    gc.collect()
    before = pss_kib(os.getpid())
    lexicon = Lexicon.from_bytes(data)
    del data
    gc.collect()
    print(pss_kib(os.getpid()) - before)
    assert len(lexicon) > 0


def against_around(rate: float, before: float, after: float) -> float:
    """`rate` over the mean of two reference rates taken just before and right after it: on
    a 2-vCPU VM whose speed drifts by tens of per cent within minutes, one reference taken
    once would make the ratio as much the drift's as the stack's."""
    return rate / ((before + after) / 2)


def end_to_end(
    http: httpx.Client, stack: RunningStack, tokens: list[str], corpus: list[bytes]
) -> tuple[float, float, str]:
    """Upload `corpus` and wait until all of it is judged: judged per second from the first
    receipt to the last result, accepted per second, and the CPU seconds by role meanwhile."""
    before = processes()
    began = time.monotonic()
    ids = upload_all(stack.url, tokens, corpus, concurrency=16)
    uploaded = time.monotonic() - began
    wait_events(http, stack, ids)
    spent = cpu_by_role(before)  # before the reads below, which are the benchmark's own
    docs = read_all(http, stack, ids)
    span = seconds(min(d["received_at"] for d in docs), max(d["judged_at"] for d in docs))
    return len(docs) / span, len(ids) / uploaded, spent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--submissions", type=int, default=300)
    parser.add_argument("--moves", type=int, default=3000)
    parser.add_argument(
        "--rounds", type=int, default=5, help="end-to-end runs, each between two judge-only runs"
    )
    parser.add_argument("--skip-memory", action="store_true")
    api_workers_option(parser)
    args = parser.parse_args()
    words = cached_list("words_alpha.txt").read_bytes()
    lexicon = Lexicon.from_bytes(words)
    played = game(DEFAULT)  # the game of `open_contest`'s contest, which names none
    rules = played.default_rules()
    corpus = [played.sample(lexicon, rules, n, args.moves) for n in range(args.submissions)]
    lines = sum(c.count(b"\n") for c in corpus)
    print(
        f"corpus: {len(corpus)} generated submissions, {lines} lines, {sum(map(len, corpus)) / 1e6:.1f} MB"
    )

    home = Path(tempfile.mkdtemp(prefix="tj-bench-"))
    with (
        running_stack(
            home, workers=2, env=EXACTLY | UNLIMITED_RATE | api_workers_env(args.api_workers)
        ) as stack,
        httpx.Client(base_url=stack.url, timeout=60) as http,
    ):
        tokens = open_contest(http, stack, lists={"words_alpha": words}, teams=20)
        time.sleep(1)
        # Each end-to-end run is set against judge-only runs just before and just after it,
        # on the same cores with the stack idle.
        print("round  judge only before / after  end to end (accepted)  ratio  CPU seconds by role")
        ratios, rates = [], []
        for n in range(args.rounds):
            before = judge_only(corpus, lexicon, processes=2)
            variant = [c + b"\n" * (3 + n) for c in corpus]  # new bytes, not deduplicated
            e2e, accepted, spent = end_to_end(http, stack, tokens, variant)
            after = judge_only(corpus, lexicon, processes=2)
            ratio = against_around(e2e, before, after)
            ratios.append(ratio)
            rates.extend([before, after])
            print(
                f"{n + 1:5d}  {before:8.1f} / {after:6.1f}/s   {e2e:8.1f}/s ({accepted:5.1f}/s)"
                f"  {ratio:5.2f}  {spent}"
            )
        e2e_ratio = statistics.median(ratios)
        print(f"judge only, 2 processes:        {min(rates):.1f}-{max(rates):.1f} submissions/s")
        print(
            f"ratio end-to-end / judge-only:  {e2e_ratio:8.2f} (median of {len(ratios)}: "
            f"{', '.join(f'{r:.2f}' for r in ratios)}; uploads and judging sharing the cores)"
        )
        before = judge_only(corpus, lexicon, processes=2)
        drained = drain_rate(http, stack, tokens, [c + b"\n\n" for c in corpus])
        after = judge_only(corpus, lexicon, processes=2)
        print(
            f"queue drain, 2 worker processes: {drained:7.1f} submissions/s "
            "(uploads stored first, then the workers let loose: S3 read, judge, report, SQL)"
        )
        print(f"ratio drain / judge-only:       {against_around(drained, before, after):8.2f}")

        steady = corpus[: min(100, len(corpus))]
        steady = [c + b"\n" for c in steady]  # new bytes, not deduplicated
        rate_per_s = max(1.0, statistics.median(rates) * e2e_ratio / 3)  # well under capacity
        ids = upload_all(stack.url, tokens, steady, concurrency=8, rate=rate_per_s)
        latencies = [
            seconds(d["received_at"], d["judged_at"]) * 1000 for d in wait_judged(http, stack, ids)
        ]
        print(
            f"upload-to-result at a steady {rate_per_s:.1f} uploads/s ({len(ids)} uploads): "
            f"p50 {statistics.median(latencies):.0f} ms, p99 {pct(latencies, 0.99):.0f} ms"
        )
    if not args.skip_memory:
        memory_figures(words, corpus)


if __name__ == "__main__":
    main()
