"""`tilejudge load`: a bounded burst of generated uploads against a local stack, then the proof
that every acknowledged upload was judged exactly once, with the offline judge's score.

Loopback only. It stops by itself: N uploads at most, and one deadline for uploading and for
waiting on results. Fault tests and the spike benchmark drive the same functions in-process.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

import httpx

from cli.client import describe_error
from core import clock
from devstack import http1
from infra import lexicon_files
from judge import Lexicon, default_layout, judge
from judge.generator import WordIndex, generate

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
LEXICON_NAME = "words_alpha"
FINAL_EVENTS = frozenset({"submission.judged", "submission.failed"})
RETRYABLE = frozenset({429, 502, 503, 504})
REQUEST_TIMEOUT_S = 60.0  # the API's own read deadline for an upload
EVENT_PAGE = 1000


class LoadError(RuntimeError):
    """Bad arguments, or a set-up step the server refused: nothing was uploaded."""


@dataclass(frozen=True)
class Plan:
    url: str
    contest: str
    uploads: int
    concurrency: int
    teams: int
    admin_token: str
    timeout: float = 600.0  # for uploading and waiting on results together
    seed: int = 0
    moves: int = 120
    retries: int = 0  # extra attempts after a 429, a 5xx gateway answer or a transport error
    rate: float | None = None  # uploads started per second; None: as fast as the clients go

    @property
    def admin(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.admin_token}"}


@dataclass(frozen=True)
class Corpus:
    data: list[bytes]
    expected: list[int]  # the offline judge's total for each upload
    lexicon: Lexicon


@dataclass(frozen=True)
class Attempt:
    upload: int
    started: float  # time.monotonic() when the request was sent
    latency: float  # seconds until the answer (or the transport error)
    outcome: str  # the HTTP status as text, or the transport error's class name


@dataclass
class Upload:
    index: int
    team: int
    outcome: str = "not sent"
    submission: str | None = None
    received_at: str | None = None
    duplicate: bool = False

    @property
    def acknowledged(self) -> bool:
        return self.outcome == "202"


@dataclass
class Burst:
    uploads: list[Upload]
    attempts: list[Attempt] = field(default_factory=list)
    started_wall: datetime = field(default_factory=lambda: datetime.now(UTC))
    started: float = field(default_factory=time.monotonic)
    elapsed: float = 0.0

    @property
    def acknowledged(self) -> list[Upload]:
        return [u for u in self.uploads if u.acknowledged]

    def accept_latencies(self) -> list[float]:
        return [a.latency for a in self.attempts if a.outcome == "202"]

    def outcomes(self) -> Counter[str]:
        return Counter(a.outcome for a in self.attempts)


def admin_token(given: str | None, environ: Mapping[str, str]) -> str:
    """--admin-token, else $TILEJUDGE_ADMIN_TOKEN, else the one `up` wrote under the home."""
    if given or environ.get("TILEJUDGE_ADMIN_TOKEN"):
        return str(given or environ["TILEJUDGE_ADMIN_TOKEN"])
    path = Path(environ.get("TILEJUDGE_HOME", "./.tilejudge")) / "admin-token"
    if not path.is_file():
        raise LoadError(
            "no admin token: pass --admin-token, set TILEJUDGE_ADMIN_TOKEN or TILEJUDGE_HOME"
        )
    return path.read_text().strip()


def check_loopback(url: str) -> str:
    """The URL without a trailing slash, or LoadError if it does not point at this machine."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or parts.hostname not in LOOPBACK_HOSTS:
        raise LoadError(f"refusing {url!r}: load is only sent to 127.0.0.1, localhost or ::1")
    return url.rstrip("/")


# --- set-up ------------------------------------------------------------------------------------


def build_corpus(lexicon: Lexicon, plan: Plan) -> Corpus:
    """Generated uploads, distinct per team (same bytes from one team would be one submission)."""
    index, layout = WordIndex.build(lexicon.words), default_layout()
    seen: set[tuple[int, bytes]] = set()
    data: list[bytes] = []
    for n in range(plan.uploads):
        one = generate(
            index, layout, seed=plan.seed * 1_000_003 + n, moves=plan.moves, illegal_share=0.1
        )
        while (n % plan.teams, one) in seen:
            one += b"\n"  # a blank line changes the bytes, not the score
        seen.add((n % plan.teams, one))
        data.append(one)
    return Corpus(data, [judge(d, lexicon, layout).total for d in data], lexicon)


def prepare(http: httpx.Client, plan: Plan, lexicon: Lexicon) -> list[str]:
    """Find or create the contest (registering the word list if need be); T new teams' tokens."""
    found = http.get(f"/v1/contests/{plan.contest}")
    if found.status_code == 404:
        _create_contest(http, plan, lexicon)
    elif found.is_success:
        _check_contest(found.json(), plan, lexicon)
    else:
        raise LoadError(f"reading contest {plan.contest}: {describe_error(found)}")
    run = secrets.token_hex(3)
    tokens = []
    for n in range(plan.teams):
        made = http.post(
            f"/v1/contests/{plan.contest}/teams",
            json={"name": f"load-{run}-{n}"},
            headers=plan.admin,
        )
        if made.status_code != 201:
            raise LoadError(f"creating team {n}: {describe_error(made)}")
        tokens.append(str(made.json()["token"]))
    return tokens


def _create_contest(http: httpx.Client, plan: Plan, lexicon: Lexicon) -> None:
    now = datetime.now(UTC)
    body = {
        "id": plan.contest,
        "title": f"Load test {plan.contest}",
        "lexicon": lexicon.id,
        "opens_at": clock.format_time(now - timedelta(hours=1)),
        "closes_at": clock.format_time(now + timedelta(seconds=plan.timeout + 86_400)),
    }
    made = http.post("/v1/contests", json=body, headers=plan.admin)
    if made.status_code == 422 and lexicon.id in made.text:  # that word list is not registered
        path = lexicon_files.resolve(None)
        added = http.post(
            "/v1/lexicons",
            params={"name": LEXICON_NAME},
            content=path.read_bytes(),
            headers=plan.admin | {"Content-Type": "text/plain"},
        )
        if added.status_code != 201:
            raise LoadError(f"registering the word list {path}: {describe_error(added)}")
        made = http.post("/v1/contests", json=body, headers=plan.admin)
    if made.status_code != 201:
        raise LoadError(f"creating contest {plan.contest}: {describe_error(made)}")


def _check_contest(contest: dict[str, Any], plan: Plan, lexicon: Lexicon) -> None:
    if contest["lexicon"] != lexicon.id or contest["layout"] != default_layout().id:
        raise LoadError(
            f"contest {plan.contest} judges with lexicon {contest['lexicon']} and layout "
            f"{contest['layout']}; the offline check needs {lexicon.id} and the default layout"
        )
    now = datetime.now(UTC)
    if not clock.parse_time(contest["opens_at"]) <= now <= clock.parse_time(contest["closes_at"]):
        raise LoadError(f"contest {plan.contest} is not open now")


# --- the burst ---------------------------------------------------------------------------------


def run_burst(plan: Plan, tokens: list[str], corpus: Corpus, deadline: float) -> Burst:
    """Upload the corpus with `plan.concurrency` clients; stops at `deadline` (monotonic)."""
    return send_all(plan, tokens, corpus.data, deadline)


def send_all(plan: Plan, tokens: list[str], data: list[bytes], deadline: float) -> Burst:
    """Upload each of `data` (upload n as team n % T) with `plan.concurrency` clients, each on
    its own keep-alive connection; stops at `deadline` (monotonic)."""
    return asyncio.run(_burst(plan, tokens, data, deadline))


async def _burst(plan: Plan, tokens: list[str], data: list[bytes], deadline: float) -> Burst:
    burst = Burst([Upload(n, n % len(tokens)) for n in range(len(data))])
    todo = iter(burst.uploads)  # shared by the clients: each takes the next upload
    sender = _Sender(plan, tokens, data, burst, deadline)
    await asyncio.gather(*(sender.client(todo) for _ in range(plan.concurrency)))
    burst.elapsed = time.monotonic() - burst.started
    return burst


@dataclass
class _Sender:
    plan: Plan
    tokens: list[str]
    data: list[bytes]
    burst: Burst
    deadline: float

    async def client(self, todo: Iterator[Upload]) -> None:
        """One client: its own keep-alive connection, the next upload until none is left."""
        connection = http1.Connection(self.plan.url)
        try:
            for upload in todo:
                if self.plan.rate:
                    due = self.burst.started + upload.index / self.plan.rate
                    await asyncio.sleep(due - time.monotonic())
                if time.monotonic() >= self.deadline:
                    return
                await self.send(connection, upload)
        finally:
            connection.close()

    async def send(self, connection: http1.Connection, upload: Upload) -> None:
        """Upload once, and again after a 429, 502-504 or transport error while retries last."""
        for attempt in range(self.plan.retries + 1):
            answer = await self._attempt(connection, upload)
            if answer is not None and answer.status == 202:
                body = json.loads(answer.body)
                upload.submission, upload.received_at = str(body["id"]), str(body["received_at"])
                upload.duplicate = answer.headers.get("x-tilejudge-duplicate") == "true"
                return
            if answer is not None and answer.status not in RETRYABLE:
                return
            pause = min(5.0, 0.25 * 2**attempt)
            if attempt == self.plan.retries or time.monotonic() + pause >= self.deadline:
                return
            await asyncio.sleep(pause)

    async def _attempt(self, connection: http1.Connection, upload: Upload) -> http1.Answer | None:
        began = time.monotonic()
        answer = None
        try:
            answer = await connection.request(
                "POST",
                f"/v1/contests/{self.plan.contest}/submissions",
                self.data[upload.index],
                {
                    "Authorization": f"Bearer {self.tokens[upload.team]}",
                    "Content-Type": "text/plain",
                },
                timeout=max(1.0, min(REQUEST_TIMEOUT_S, self.deadline - began)),
            )
            upload.outcome = str(answer.status)
        except http1.TransportError as exc:
            upload.outcome = exc.name
        latency = time.monotonic() - began
        self.burst.attempts.append(Attempt(upload.index, began, latency, upload.outcome))
        return answer


# --- results -----------------------------------------------------------------------------------


def event_mark(http: httpx.Client, plan: Plan) -> int:
    """The id of the newest event: what follows it is this run's."""
    after = 0
    while True:
        page = _events_page(http, plan, after)
        after = int(page["next"])
        if len(page["events"]) < EVENT_PAGE:
            return after


def follow_events(
    http: httpx.Client, plan: Plan, after: int, wanted: Iterable[str], deadline: float
) -> list[dict[str, Any]]:
    """Every event after `after`, read until each wanted submission is judged or failed, or until
    `deadline`. Outages on the way (503, refused connections) are waited out."""
    pending, events = set(wanted), list[dict[str, Any]]()
    while True:
        try:
            page = _events_page(http, plan, after)
        except (httpx.HTTPError, LoadError):
            if time.monotonic() >= deadline:
                return events
            time.sleep(0.5)
            continue
        events += page["events"]
        after = int(page["next"])
        pending -= {e.get("submission") for e in page["events"] if e["type"] in FINAL_EVENTS}
        if (not pending and len(page["events"]) < EVENT_PAGE) or time.monotonic() >= deadline:
            return events
        if len(page["events"]) < EVENT_PAGE:
            time.sleep(0.2)


def _events_page(http: httpx.Client, plan: Plan, after: int) -> dict[str, Any]:
    response = http.get(
        "/v1/events", params={"after": after, "limit": EVENT_PAGE}, headers=plan.admin
    )
    if response.status_code != 200:
        raise LoadError(f"reading events: {describe_error(response)}")
    page: dict[str, Any] = response.json()
    return page


def verify(
    http: httpx.Client, plan: Plan, burst: Burst, corpus: Corpus, events: list[dict[str, Any]]
) -> list[str]:
    """What is wrong, one line each: every acknowledged upload must have exactly one judged
    event and a current result, both with the offline judge's score."""
    problems: list[str] = []
    judged: defaultdict[str, list[int]] = defaultdict(list)
    for event in events:
        if event["type"] == "submission.judged":
            judged[event["submission"]].append(event["score"])
    owners: defaultdict[str, set[int]] = defaultdict(set)
    for upload in burst.acknowledged:
        assert upload.submission is not None
        owners[upload.submission].add(upload.index)
        scores, want = judged.get(upload.submission, []), corpus.expected[upload.index]
        if scores != [want]:
            problems.append(
                f"upload {upload.index} ({upload.submission}): judged events with "
                f"scores {scores}, offline judge {want}"
            )
    problems += [
        f"uploads {sorted(n)} got one submission {sid}" for sid, n in owners.items() if len(n) > 1
    ]
    with ThreadPoolExecutor(min(32, plan.concurrency)) as pool:
        problems += [
            p
            for p in pool.map(lambda u: _result_problem(http, plan, u, corpus), burst.acknowledged)
            if p
        ]
    return problems


def _result_problem(http: httpx.Client, plan: Plan, upload: Upload, corpus: Corpus) -> str | None:
    # A pooled keep-alive connection the server has just closed fails once: read again.
    for attempt in range(3):
        try:
            response = http.get(f"/v1/submissions/{upload.submission}", headers=plan.admin)
            break
        except httpx.TransportError as exc:
            if attempt == 2:
                return (
                    f"upload {upload.index} ({upload.submission}): {type(exc).__name__} reading it"
                )
            time.sleep(0.2)
    if response.status_code != 200:
        return f"upload {upload.index} ({upload.submission}): {describe_error(response)}"
    doc, want = response.json(), corpus.expected[upload.index]
    got = (doc["state"], doc["score"], doc["lexicon"], doc["layout"])
    if got != ("judged", want, corpus.lexicon.id, default_layout().id):
        return f"upload {upload.index} ({upload.submission}): {got}, offline judge {want}"
    return None


# --- report ------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def last_result_after(burst: Burst, events: list[dict[str, Any]]) -> float | None:
    """Seconds from the first upload to the newest judged event of this run's uploads."""
    ours = {u.submission for u in burst.acknowledged}
    times = [
        clock.parse_time(e["ts"])
        for e in events
        if e["type"] == "submission.judged" and e["submission"] in ours
    ]
    return (max(times) - burst.started_wall).total_seconds() if times else None


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


def run(plan: Plan, out: TextIO = sys.stdout) -> int:
    """The whole `tilejudge load`: 0 if nothing was lost or misjudged, else 1."""
    lexicon = lexicon_files.load(lexicon_files.resolve(None))
    corpus = build_corpus(lexicon, plan)
    with httpx.Client(base_url=plan.url, timeout=REQUEST_TIMEOUT_S) as http:
        deadline = time.monotonic() + plan.timeout
        tokens = prepare(http, plan, lexicon)
        mark = event_mark(http, plan)
        burst = run_burst(plan, tokens, corpus, deadline)
        ids = [u.submission for u in burst.acknowledged if u.submission]
        events = follow_events(http, plan, mark, ids, deadline)
        problems = verify(http, plan, burst, corpus, events)
    out.write(summary(plan, burst, events, problems))
    return 1 if problems else 0
