"""The stack exactly as `make run` starts it (`tilejudge up --demo`, every default kept, the demo
loaded) taking a deadline's uploads (prints, asserts nothing but the check): intake, end to end
against the offline judge on the same number of processes, CPU per upload by process role, and
upload-to-result latency, per round and over all rounds.

    python -m benchmarks.local_stack [--uploads 1000] [--teams 200] [--seed 0] [--rounds 3]
        [--set NAME=VALUE ...]

Only what the machine forces differs from `make run`: a fresh TILEJUDGE_HOME in a temporary
directory and a free port for the API. `--set` (repeatable) sets a variable of the stack's
environment before it starts, e.g. TILEJUDGE_STANDBY_WORKERS=0 or GOMAXPROCS=2 (SeaweedFS's
threads), so that one benchmark compares a default with another value; the top of the output
says what was set. Each round sends its uploads at once to one new contest of the default
game, from teams of its own, none passing the stack's per-team rate limit.
Exits 1 if an acknowledged upload was lost, judged twice or judged unlike the offline judge.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

import httpx
import psutil

from benchmarks.capacity_probes import ROLES, CpuSampler
from benchmarks.fixtures import burst_plan, shared_lexicon
from benchmarks.local_stack_mix import (
    FEWEST_MOVES,
    MOST_MOVES,
    deadline_corpus,
    near_limit_count,
    teams_needed,
)
from benchmarks.machine import cpu_model
from benchmarks.pipeline_bench import against_around, judge_only, read_all, seconds
from devstack.burst import Burst, run_burst
from devstack.load import new_contest_id, percentile, prepare
from devstack.plan import Corpus, Plan
from devstack.proof import event_mark, follow_events, verify
from devstack.seaweedfs import go_threads
from devstack.testing.stack_process import RunningStack, running_stack
from infra.settings import Settings, SettingsError

# `up --demo` is ready for users once the demo is judged; its last line says so.
DEMO_DONE = "demo: leaderboard:"
DEMO_TIMEOUT_S = 300.0
ROUND_TIMEOUT_S = 900.0  # for a round's uploading and judging together
MOST_CLIENTS = 200  # client threads at once: one a team, as spike_bench's burst at most
WARM_UP_TEAMS = 10  # a contest has had uploads before its deadline: its word list is loaded
# No PostgreSQL in the local stack (SQLite): a database name no backend serves.
NO_DATABASE = "tilejudge-local-stack-no-postgres"
# What the benchmark itself decides for the stack, which `--set` may not change.
NOT_SETTABLE = frozenset({"TILEJUDGE_HOME", "TILEJUDGE_API_PORT"})
VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class Round:
    """What one round measured."""

    burst: Burst
    problems: list[str]
    judge_before: float  # offline judge, uploads/s, just before the round
    judge_after: float  # and just after it
    end_to_end: float  # uploads judged/s, first receipt to last result
    to_result_ms: list[float]  # judged_at - received_at of each upload, from the API
    cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds by role in the round

    @property
    def acknowledged(self) -> int:
        return len(self.burst.acknowledged)

    @property
    def accepted_per_s(self) -> float:
        return self.acknowledged / self.burst.elapsed

    @property
    def ratio(self) -> float:
        return against_around(self.end_to_end, self.judge_before, self.judge_after)


@contextmanager
def make_run_stack(home: Path, settings: Settings, env: dict[str, str]) -> Iterator[RunningStack]:
    """`tilejudge up --demo` as `make run` starts it, with `env` (the `--set` variables) on top,
    once its demo is loaded. The pool is TILEJUDGE_WORKERS as `up` defaults it (or as set) and,
    with an empty admin token, `up` generates one into the home, as for a user."""
    with running_stack(
        home, workers=settings.workers, env={"TILEJUDGE_ADMIN_TOKEN": ""} | env, demo=True,
        timeout=180,
    ) as stack:  # fmt: skip
        wait_for_demo(stack)
        yield stack


def set_option(parser: argparse.ArgumentParser) -> None:
    """--set NAME=VALUE, repeatable: a variable of the stack's environment."""
    parser.add_argument(
        "--set", action="append", default=[], dest="overrides", metavar="NAME=VALUE",
        help="set a variable of the stack's environment before it starts (repeatable), e.g. "
        "TILEJUDGE_STANDBY_WORKERS=0, TILEJUDGE_API_WORKERS=1, TILEJUDGE_WORKERS=3, GOMAXPROCS=2",
    )  # fmt: skip


def overrides(parser: argparse.ArgumentParser, given: list[str]) -> tuple[dict[str, str], Settings]:
    """The `--set` variables, and the settings the stack reads with them (a bad value is
    refused here, as `up` would refuse it)."""
    env: dict[str, str] = {}
    for item in given:
        name, equals, value = item.partition("=")
        if not equals or not VARIABLE_NAME.fullmatch(name):
            parser.error(f"--set {item!r}: give NAME=VALUE")
        if name in NOT_SETTABLE:
            parser.error(
                f"--set {name}: the benchmark chooses it ({', '.join(sorted(NOT_SETTABLE))})"
            )
        env[name] = value
    try:
        return env, Settings.from_env(env)
    except SettingsError as exc:
        parser.error(f"--set: {exc}")


def set_line(env: dict[str, str]) -> str:
    """What `--set` changed, for the top of the output."""
    if not env:
        return "set: nothing (every setting as `make run` has it)"
    shown = " ".join(f"{k}={v}" for k, v in env.items())
    return f"set: {shown} (every other setting as `make run` has it)"


def stack_line(settings: Settings, env: dict[str, str], processes: int) -> str:
    """The stack's processes as it runs: judging, API, SeaweedFS's threads, the rate limit."""
    weed = env.get("GOMAXPROCS") or os.environ.get("GOMAXPROCS") or str(go_threads())
    kept = "its defaults" if not env else "its defaults but the variables set above"
    return (
        f"stack: `tilejudge up --demo` with {kept}, demo loaded; {processes} judging "
        f"processes (TILEJUDGE_WORKERS {settings.workers} + TILEJUDGE_STANDBY_WORKERS "
        f"{settings.standby_workers}), {settings.api_workers} API processes, SeaweedFS "
        f"GOMAXPROCS {weed}, rate limit {settings.rate_limit_per_minute} uploads a team a minute"
    )


def wait_for_demo(stack: RunningStack) -> None:
    """Until `up --demo` printed its demo's last line, as a user waits for it."""
    deadline = time.monotonic() + DEMO_TIMEOUT_S
    out = stack.home / "up.out"
    while DEMO_DONE not in out.read_text(errors="replace"):
        if time.monotonic() > deadline or stack.process.poll() is not None:
            tail = out.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"the demo did not finish loading; up.out ends with:\n{tail}")
        time.sleep(0.5)


def warm_up(http: httpx.Client, plan: Plan, corpus: Corpus) -> None:
    """One upload from each of a few teams of the contest, judged before the rounds, so the
    workers hold the contest's word list as they do by a contest's deadline."""
    warm = replace(plan, uploads=WARM_UP_TEAMS, teams=WARM_UP_TEAMS, concurrency=WARM_UP_TEAMS)
    tokens = prepare(http, warm, corpus.lexicon)
    data = corpus.data[:WARM_UP_TEAMS]
    warm_corpus = Corpus(data, corpus.expected[:WARM_UP_TEAMS], corpus.lexicon, "")
    mark = event_mark(http, warm)
    burst = run_burst(warm, tokens, warm_corpus, time.monotonic() + 300)
    ids = [u.submission for u in burst.acknowledged if u.submission]
    follow_events(http, warm, mark, ids, time.monotonic() + 300)


def one_round(
    http: httpx.Client, stack: RunningStack, plan: Plan, corpus: Corpus, processes: int
) -> Round:
    """New teams, the offline judge, the burst until every upload is judged (CPU sampled
    meanwhile), the check, the offline judge again."""
    tokens = prepare(http, plan, corpus.lexicon)
    before = judge_only(corpus.data, corpus.lexicon, processes)
    mark = event_mark(http, plan)
    sampler = CpuSampler(stack.process.pid, NO_DATABASE, set())
    own = _own_cpu()
    try:
        burst = run_burst(plan, tokens, corpus, time.monotonic() + plan.timeout)
        ids = [u.submission for u in burst.acknowledged if u.submission]
        events = follow_events(http, plan, mark, ids, time.monotonic() + plan.timeout)
        counters = sampler.counters()
        client = _own_cpu() - own - sampler.own_cpu
    finally:
        sampler.stop()
    cpu = {r: counters[f"cpu:{r}"] for r in ROLES if f"cpu:{r}" in counters}
    cpu["load generator (this process)"] = client
    problems = verify(http, plan, burst, corpus, events)
    docs = [d for d in read_all(http, stack, ids) if d.get("judged_at")]
    after = judge_only(corpus.data, corpus.lexicon, processes)
    latencies = [1000 * seconds(d["received_at"], d["judged_at"]) for d in docs]
    if not docs:  # nothing judged: the check says so, and every rate is 0
        return Round(burst, problems, before, after, 0.0, [0.0], cpu)
    span = seconds(min(d["received_at"] for d in docs), max(d["judged_at"] for d in docs))
    return Round(burst, problems, before, after, len(docs) / span, latencies, cpu)


def _own_cpu() -> float:
    times = psutil.Process().cpu_times()
    return float(times.user + times.system)


def round_line(n: int, found: Round, processes: int) -> str:
    check = "OK" if not found.problems else f"{len(found.problems)} LOST OR MISJUDGED"
    answers = dict(sorted(found.burst.outcomes().items()))
    accept = found.burst.accept_latencies()
    cpu = cpu_line(found.cpu, found.acknowledged, ".1f")
    lat = found.to_result_ms
    return "\n".join(
        [
            f"round {n}: check {check}; {found.acknowledged} of {len(found.burst.uploads)} "
            f"acknowledged (answers {answers})",
            f"  intake        {found.accepted_per_s:.1f} accepted/s, accept p50 "
            f"{1000 * percentile(accept, 0.5):.0f} ms, "
            f"p99 {1000 * percentile(accept, 0.99):.0f} ms",
            f"  end to end    {found.end_to_end:.1f} judged/s; offline judge ({processes} "
            f"processes) {found.judge_before:.1f} before, {found.judge_after:.1f} after; "
            f"ratio {found.ratio:.2f}",
            f"  to result     in the burst, p50 {percentile(lat, 0.5):.0f} ms, "
            f"p99 {percentile(lat, 0.99):.0f} ms",
            f"  CPU ms/upload {cpu}",
        ]
    )


def summary(rounds: list[Round], processes: int) -> str:
    problems = [p for r in rounds for p in r.problems]
    acked = sum(r.acknowledged for r in rounds)
    sent = sum(len(r.burst.uploads) for r in rounds)
    check = (
        f"check: {acked} acknowledged uploads (of {sent} sent) judged exactly once with the "
        f"offline judge's score: "
        + ("OK" if not problems else f"{len(problems)} LOST OR MISJUDGED, the first:")
    )
    accept = [x for r in rounds for x in r.burst.accept_latencies()]
    lat = [x for r in rounds for x in r.to_result_ms]
    cpu: dict[str, float] = {}
    for found in rounds:
        for role, s in found.cpu.items():
            cpu[role] = cpu.get(role, 0.0) + s
    lines = [
        check,
        *(f"  {p}" for p in problems[:20]),
        f"summary of {len(rounds)} round(s) (medians; latencies over every upload):",
        f"  accepted/s                 {_median_of(rounds, lambda r: r.accepted_per_s)}",
        f"  accept                     p50 {1000 * percentile(accept, 0.5):.0f} ms, "
        f"p99 {1000 * percentile(accept, 0.99):.0f} ms",
        f"  end to end, judged/s       {_median_of(rounds, lambda r: r.end_to_end)} (first "
        "receipt to last result: received_at and judged_at from GET /v1/submissions/{id})",
        f"  offline judge, {processes} processes {_median_of(rounds, _judge_mean)} "
        "(the mean of the runs just before and after each round)",
        f"  end to end / offline judge {_median_of(rounds, lambda r: r.ratio, '.2f')}",
        f"  upload to result           p50 {percentile(lat, 0.5):.0f} ms, p99 "
        f"{percentile(lat, 0.99):.0f} ms (in the burst: judged_at - received_at, from the API)",
        f"  CPU ms per upload by role  {cpu_line(cpu, acked, '.2f')}",
    ]
    return "\n".join(lines)


def cpu_line(cpu: dict[str, float], uploads: int, spec: str) -> str:
    """CPU ms an upload by role, the most first; a role under `spec`'s precision left out."""
    shown = [(role, format(1000 * s / max(1, uploads), spec)) for role, s in cpu.items()]
    ordered = sorted(shown, key=lambda kv: -cpu[kv[0]])
    return ", ".join(f"{role} {ms}" for role, ms in ordered if float(ms) > 0)


def _judge_mean(found: Round) -> float:
    return (found.judge_before + found.judge_after) / 2


def _median_of(rounds: list[Round], figure: Callable[[Round], float], spec: str = ".1f") -> str:
    values = [figure(r) for r in rounds]
    shown = ", ".join(format(v, spec) for v in values)
    return f"{format(statistics.median(values), spec)} ({shown})"


def machine_line() -> str:
    return (
        f"machine: {os.cpu_count()} cores ({cpu_model()}), Python {sys.version.split()[0]}; "
        f"load average {load_average()} before the stack started; "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    )


def load_average() -> str:
    """The machine's 1, 5 and 15 minute load averages. Read before the stack starts, a value
    near or above the cores says something else shares them: the figures are a busy machine's."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def parse(argv: list[str] | None) -> tuple[argparse.Namespace, dict[str, str], Settings]:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.local_stack", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    parser.add_argument("--uploads", type=int, default=1000, help="uploads a round")
    parser.add_argument("--teams", type=int, default=200, help="new teams a round")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=3)
    set_option(parser)
    args = parser.parse_args(argv)
    # What `make run` starts with (no TILEJUDGE_* set) but for the variables set.
    env, settings = overrides(parser, args.overrides)
    per_minute = settings.rate_limit_per_minute
    if args.uploads < WARM_UP_TEAMS or args.teams < 1 or args.rounds < 1:
        parser.error(f"--uploads {WARM_UP_TEAMS} or more, --teams and --rounds 1 or more")
    if args.teams < teams_needed(args.uploads, per_minute):
        parser.error(
            f"{args.uploads} uploads from {args.teams} teams pass the stack's limit of "
            f"{per_minute} uploads a team a minute: give --teams "
            f"{teams_needed(args.uploads, per_minute)} or more"
        )
    return args, env, settings


def main(argv: list[str] | None = None) -> int:
    args, env, settings = parse(argv)
    shown = " ".join(sys.argv[1:] if argv is None else argv)
    print(f"command: python -m benchmarks.local_stack {shown}".rstrip())
    print(set_line(env))
    print(machine_line(), flush=True)
    lexicon = shared_lexicon()
    limit = settings.max_upload_bytes
    with (
        tempfile.TemporaryDirectory(prefix="tj-local-stack-") as home,
        make_run_stack(Path(home), settings, env) as stack,
        httpx.Client(base_url=stack.url, timeout=60) as http,
    ):
        # From the settings, not the pool's children: counted while the demo's rejudge has the
        # pool refork, they may be fewer for a moment.
        processes = settings.workers + settings.standby_workers
        print(stack_line(settings, env, processes), flush=True)
        plan = burst_plan(
            stack, new_contest_id(datetime.now(UTC)), uploads=args.uploads,
            concurrency=min(args.teams, MOST_CLIENTS), teams=args.teams, moves=MOST_MOVES,
            timeout=ROUND_TIMEOUT_S,
        )  # fmt: skip
        rounds = []
        for n in range(args.rounds):
            began = time.monotonic()
            corpus = deadline_corpus(lexicon, args.uploads, args.teams, args.seed + n, limit)
            if n == 0:
                warm_up(http, plan, corpus)
            sizes = sorted(map(len, corpus.data))
            print(
                f"round {n + 1} corpus: {args.uploads} uploads of {FEWEST_MOVES}-{MOST_MOVES} "
                f"moves ({sizes[0] / 1000:.1f}-{sizes[-1] / 1000:.1f} kB, "
                f"{near_limit_count(args.uploads)} near the {limit / 2**20:.0f} MiB limit), "
                f"{sum(sizes) / 1e6:.1f} MB, from {args.teams} teams, {plan.concurrency} "
                f"clients at once; built in {time.monotonic() - began:.0f} s",
                flush=True,
            )
            rounds.append(one_round(http, stack, plan, corpus, processes))
            print(round_line(n + 1, rounds[-1], processes), flush=True)
    print(summary(rounds, processes))
    print(f"load average {load_average()} after the stack stopped")
    return 1 if any(r.problems for r in rounds) else 0


if __name__ == "__main__":
    sys.exit(main())
