"""The proof that a burst was judged exactly once: this run's events, read from the API's event
log, must hold exactly one judged event for every acknowledged upload, and its current result
must agree, both with the offline judge's score."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from core import clock
from core.states import SubmissionState
from devstack.burst import Burst, Upload
from devstack.plan import Corpus, Plan
from infra.api_client import ApiError, Client, Retry

FINAL_EVENTS = frozenset({"submission.judged", "submission.failed"})
EVENT_PAGE = 1000
# A pooled keep-alive connection the server has just closed fails once: read again.
READ_AGAIN = Retry(attempts=3, first_pause=0.2, longest_pause=0.2)


def event_mark(http: httpx.Client, plan: Plan) -> int:
    """The id of the newest event: what follows it is this run's."""
    api, after = plan.client(http), 0
    while True:
        page = _events_page(api, after)
        after = int(page["next"])
        if len(page["events"]) < EVENT_PAGE:
            return after


def follow_events(
    http: httpx.Client, plan: Plan, after: int, wanted: Iterable[str], deadline: float
) -> list[dict[str, Any]]:
    """Every event after `after`, read until each wanted submission is judged or failed, or until
    `deadline`. Outages on the way (503, refused connections) are waited out."""
    api, pending, events = plan.client(http), set(wanted), list[dict[str, Any]]()
    while True:
        try:
            page = _events_page(api, after)
        except ApiError:
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


def _events_page(api: Client, after: int) -> dict[str, Any]:
    return api.call("GET", "/v1/events", params={"after": after, "limit": EVENT_PAGE})


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
    api = plan.client(http)
    with ThreadPoolExecutor(min(32, plan.concurrency)) as pool:
        found = pool.map(lambda u: _result_problem(api, u, corpus), burst.acknowledged)
        problems += [problem for problem in found if problem]
    return problems


def _result_problem(api: Client, upload: Upload, corpus: Corpus) -> str | None:
    name = f"upload {upload.index} ({upload.submission})"
    try:
        doc = READ_AGAIN.run(lambda: api.call("GET", f"/v1/submissions/{upload.submission}"))
    except ApiError as exc:
        return f"{name}: {exc}"
    want = corpus.expected[upload.index]
    got = (doc["state"], doc["score"], doc["lexicon"], doc["layout"])
    if got != (SubmissionState.JUDGED, want, corpus.lexicon.id, corpus.rules_id):
        return f"{name}: {got}, offline judge {want}"
    return None


def last_result_after(burst: Burst, events: list[dict[str, Any]]) -> float | None:
    """Seconds from the first upload to the newest judged event of this run's uploads."""
    ours = {u.submission for u in burst.acknowledged}
    times = [
        clock.parse_time(e["ts"])
        for e in events
        if e["type"] == "submission.judged" and e["submission"] in ours
    ]
    return (max(times) - burst.started_wall).total_seconds() if times else None
