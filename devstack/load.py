"""`tilejudge load`: a bounded burst of generated uploads against a local stack, then the proof
that every acknowledged upload was judged exactly once, with the offline judge's score.

Loopback only. It stops by itself: N uploads at most, and one deadline for uploading and for
waiting on results. Its teams and uploads stay on the server: in a contest of the run's own
(`new_contest_id`) unless it is given one, and its report says which and how to remove them.
This module sets the contest up, runs the parts and reports; the plan and corpus, the burst and
the proof are their own modules, which fault tests and the spike benchmark drive in-process.
"""

from __future__ import annotations

import secrets
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any, TextIO

import httpx

from core import clock
from core.games import game
from devstack.burst import Burst, run_burst
from devstack.plan import REQUEST_TIMEOUT_S, LoadError, Plan, build_corpus
from devstack.proof import event_mark, follow_events, last_result_after, verify
from infra.api_client import Client, describe, step
from judge import Lexicon

LEXICON_NAME = "words_alpha"
CONTEST_PREFIX = "load-"  # of a run's own contest, and of its teams' names


def new_contest_id(now: datetime) -> str:
    """A contest for one run: `load-`, when it started (UTC) and a random tail, so two runs in
    the same second get one each."""
    return f"{CONTEST_PREFIX}{now:%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


def prepare(http: httpx.Client, plan: Plan, lexicon: Lexicon) -> list[str]:
    """Find or create the contest (registering the word list if need be); T new teams' tokens."""
    api = plan.client(http)
    with step(f"reading contest {plan.contest}", LoadError):
        found = api.request("GET", f"/v1/contests/{plan.contest}", accept=(404,))
    if found.status == 404:
        _create_contest(api, plan, lexicon)
    else:
        _check_contest(found.json(), plan, lexicon)
    run = secrets.token_hex(3)
    tokens = []
    for n in range(plan.teams):
        with step(f"creating team {n}", LoadError):
            team = {"name": f"{CONTEST_PREFIX}{run}-{n}"}
            made = api.call("POST", f"/v1/contests/{plan.contest}/teams", json_body=team)
        tokens.append(str(made["token"]))
    return tokens


def _create_contest(api: Client, plan: Plan, lexicon: Lexicon) -> None:
    now = datetime.now(UTC)
    body = {
        "id": plan.contest,
        "title": f"Load test {plan.contest}",
        "lexicon": lexicon.id,
        "opens_at": clock.format_time(now - timedelta(hours=1)),
        "closes_at": clock.format_time(now + timedelta(seconds=plan.timeout + 86_400)),
    }
    creating = f"creating contest {plan.contest}"
    with step(creating, LoadError):
        made = api.request("POST", "/v1/contests", json_body=body, accept=(422,))
    if made.status != 422:
        return
    if lexicon.id not in made.text:
        raise LoadError(f"{creating}: {describe(made)}")
    # That word list is not registered: register the very words the offline judge uses.
    words = "".join(f"{word}\n" for word in sorted(lexicon.words)).encode()
    with step(f"registering the word list {lexicon.id[:16]}", LoadError):
        api.call("POST", "/v1/lexicons", params={"name": LEXICON_NAME}, content=words)
    with step(creating, LoadError):
        api.call("POST", "/v1/contests", json_body=body)


def _check_contest(contest: dict[str, Any], plan: Plan, lexicon: Lexicon) -> None:
    if contest["lexicon"] != lexicon.id or contest["layout"] != game(plan.game).default_rules().id:
        raise LoadError(
            f"contest {plan.contest} judges with lexicon {contest['lexicon']} and layout "
            f"{contest['layout']}; the offline check needs {lexicon.id} and the default layout"
        )
    now = datetime.now(UTC)
    if not clock.parse_time(contest["opens_at"]) <= now <= clock.parse_time(contest["closes_at"]):
        raise LoadError(f"contest {plan.contest} is not open now")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def summary(plan: Plan, burst: Burst, events: list[dict[str, Any]], problems: list[str]) -> str:
    acked, lat = burst.acknowledged, [x * 1000 for x in burst.accept_latencies()]
    errors = {k: v for k, v in sorted(burst.outcomes().items()) if k != "202"}
    last = last_result_after(burst, events)
    unsent = sum(u.outcome == "not sent" for u in burst.uploads)
    lines = [
        f"uploads       {len(burst.uploads)} to contest {plan.contest} from {plan.concurrency} "
        f"clients and {plan.teams} teams; {len(acked)} acknowledged in {burst.elapsed:.1f} s "
        f"({len(acked) / max(burst.elapsed, 1e-9):.1f} accepted/s)",
        f"accept        p50 {percentile(lat, 0.5):.0f} ms, p95 {percentile(lat, 0.95):.0f} ms, "
        f"p99 {percentile(lat, 0.99):.0f} ms",
        f"errors        {errors or 'none'}{f'; {unsent} not sent before the deadline' if unsent else ''}",
        f"last result   {'none' if last is None else f'{last:.1f} s after the first upload'}",
    ]
    verdict = "OK" if not problems else f"{len(problems)} PROBLEMS"
    lines.append(
        f"check         {len(acked)} acknowledged uploads judged exactly once with the "
        f"offline judge's score: {verdict}"
    )
    lines += [f"  {p}" for p in problems[:50]]
    return "\n".join(lines) + "\n"


def kept(plan: Plan, created: bool) -> str:
    """What a run leaves on the server (`created`: in a contest made for it), and how to
    remove it."""
    where = plan.contest
    remove = (
        f"  `tilejudge team list --contest {where}` lists them; `tilejudge team delete TEAM_ID` "
        "deletes one with its uploads\n"
    )
    if created:
        return (
            f"kept          contest {where}, created for this run, with its {plan.teams} teams "
            "and their uploads (no command deletes a contest)\n" + remove
        )
    return (
        f"kept          {plan.teams} teams named {CONTEST_PREFIX}* and their uploads in contest "
        f"{where}, whose standings show them\n" + remove
    )


def run(plan: Plan, lexicon: Lexicon, out: TextIO = sys.stdout, *, created: bool = False) -> int:
    """The whole `tilejudge load`: 0 if nothing was lost or misjudged, else 1. `created`: the
    contest is the run's own, which its report says."""
    corpus = build_corpus(lexicon, plan)
    with httpx.Client(base_url=plan.url, timeout=REQUEST_TIMEOUT_S) as http:
        deadline = time.monotonic() + plan.timeout
        tokens = prepare(http, plan, lexicon)
        mark = event_mark(http, plan)
        burst = run_burst(plan, tokens, corpus, deadline)
        ids = [u.submission for u in burst.acknowledged if u.submission]
        events = follow_events(http, plan, mark, ids, deadline)
        problems = verify(http, plan, burst, corpus, events)
    out.write(summary(plan, burst, events, problems) + kept(plan, created))
    return 1 if problems else 0
