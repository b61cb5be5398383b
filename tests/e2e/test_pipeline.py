"""The whole stack as a user runs it (`tilejudge up`: Redis, SeaweedFS, SQLite, API, two Celery
worker processes): 200 generated uploads at once, every score checked against the offline judge.
"""

from __future__ import annotations

import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from devstack.testing.stack_process import RunningStack, running_stack
from devstack.testing.word_lists import cached_list
from judge import Lexicon
from judge.wordytaire import default_layout, judge
from judge.wordytaire.generator import WordIndex, generate

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

UPLOADS = 200
TEAMS = 10


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _setup_contest(http: httpx.Client, stack: RunningStack, words: bytes) -> list[str]:
    lexicon = http.post(
        "/v1/lexicons",
        params={"name": "words_alpha"},
        content=words,
        headers=stack.admin | {"content-type": "text/plain"},
    )
    assert lexicon.status_code == 201, lexicon.text
    now = datetime.now(UTC)
    contest = {
        "id": "e2e",
        "title": "End to end",
        "opens_at": _iso(now - timedelta(hours=1)),
        "closes_at": _iso(now + timedelta(hours=1)),
        "lexicon": "words_alpha",
    }
    assert http.post("/v1/contests", json=contest, headers=stack.admin).status_code == 201
    tokens = []
    for n in range(TEAMS):
        team = http.post("/v1/contests/e2e/teams", json={"name": f"team-{n}"}, headers=stack.admin)
        assert team.status_code == 201, team.text
        tokens.append(team.json()["token"])
    return tokens


def _wait_all_judged(
    http: httpx.Client, stack: RunningStack, ids: list[str], timeout: float
) -> dict[str, dict]:
    """Each upload's document once it is judged or failed. Asked in order, one at a time: while
    one is still being judged the rest are not asked (they would cost the API, on the cores the
    workers judge on, a request each every round)."""
    deadline = time.monotonic() + timeout
    seen: dict[str, dict] = {}
    while time.monotonic() < deadline:
        for sid in ids:
            if sid not in seen:
                doc = http.get(f"/v1/submissions/{sid}", headers=stack.admin).json()
                if doc["state"] not in ("judged", "failed"):
                    break
                seen[sid] = doc
        if len(seen) == len(ids):
            return seen
        time.sleep(0.5)
    pytest.fail(
        f"{len(ids) - len(seen)} uploads not judged in {timeout} s\n{stack.log('worker')[-3000:]}"
    )


def _all_events(http: httpx.Client, stack: RunningStack) -> list[dict]:
    events: list[dict] = []
    after = 0
    while True:
        page = http.get(
            "/v1/events", params={"after": after, "limit": 1000}, headers=stack.admin
        ).json()
        events += page["events"]
        if not page["events"]:
            return events
        after = page["next"]


def test_two_hundred_concurrent_uploads_are_each_judged_once_and_exactly(tmp_path: Path) -> None:
    words = cached_list("words_alpha.txt").read_bytes()
    lexicon = Lexicon.from_bytes(words)
    index, layout = WordIndex.build(lexicon.words), default_layout()
    corpus = [
        generate(index, layout, seed=7000 + n, moves=400 + 7 * n, illegal_share=0.1)
        for n in range(UPLOADS)
    ]
    expected = [judge(data, lexicon, layout).total for data in corpus]

    with (
        running_stack(tmp_path / "home", workers=2) as stack,
        httpx.Client(base_url=stack.url, timeout=60) as http,
    ):
        tokens = _setup_contest(http, stack, words)

        def upload(n: int) -> tuple[int, dict]:
            response = http.post(
                "/v1/contests/e2e/submissions",
                content=corpus[n],
                headers={
                    "Authorization": f"Bearer {tokens[n % TEAMS]}",
                    "content-type": "text/plain",
                },
            )
            assert response.status_code == 202, response.text
            return n, response.json()

        with ThreadPoolExecutor(max_workers=32) as pool:
            accepted = dict(pool.map(upload, range(UPLOADS)))
        ids = [accepted[n]["id"] for n in range(UPLOADS)]
        assert len(set(ids)) == UPLOADS

        results = _wait_all_judged(http, stack, ids, timeout=240)
        for n, sid in enumerate(ids):
            assert results[sid]["state"] == "judged", results[sid]
            assert results[sid]["score"] == expected[n], f"upload {n}"
            assert results[sid]["lexicon"] == lexicon.id

        best: dict[str, tuple[int, str]] = {}
        for n, sid in enumerate(ids):
            team, key = results[sid]["team"], (-expected[n], accepted[n]["received_at"])
            best[team] = min(best.get(team, key), key)
        board = http.get("/v1/contests/e2e/leaderboard").json()["entries"]
        assert [(-e["score"], e["received_at"]) for e in board] == sorted(best.values())
        assert [e["rank"] for e in board] == list(range(1, TEAMS + 1))

        events = _all_events(http, stack)
        assert [e["id"] for e in events] == sorted({e["id"] for e in events})
        per_submission: dict[str, list[str]] = defaultdict(list)
        for event in events:
            if "submission" in event:
                per_submission[event["submission"]].append(event["type"])
        for sid in ids:
            kinds = per_submission[sid]
            assert kinds.count("submission.judged") == 1, kinds
            assert kinds[0] == "submission.stored" and kinds[-1] == "submission.judged", kinds
            assert "submission.judging" in kinds
        judged = {e["submission"]: e["score"] for e in events if e["type"] == "submission.judged"}
        assert judged == {sid: expected[n] for n, sid in enumerate(ids)}
        report = http.get(f"/v1/submissions/{ids[0]}/report", headers=stack.admin).json()

    # Everything survives a restart of the whole stack on the same home.
    with (
        running_stack(tmp_path / "home", workers=2) as stack,
        httpx.Client(base_url=stack.url, timeout=60) as http,
    ):
        assert http.get("/v1/contests/e2e/leaderboard").json()["entries"] == board
        assert http.get(f"/v1/submissions/{ids[0]}/report", headers=stack.admin).json() == report
        assert len(_all_events(http, stack)) >= len(events)
