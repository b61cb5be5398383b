"""The real fix through the real stack: a contest judged with the 2020 list, rejudged (affected
only) on the bulk queue by real Celery workers, previewed, applied, checked against the judge."""

from __future__ import annotations

import time
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

FIXED_MOVES = [
    b"-2 0 2 0 cyber\n0 0 0 3 crab\n",
    b"-5 0 6 0 unneccessary\n0 -1 0 1 tub\n",
    b"0 0 4 0 abled\n",
]


def _wait(http: httpx.Client, stack: RunningStack, path: str, done, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = http.get(path, headers=stack.admin).json()
        if done(body):
            return body
        time.sleep(0.3)
    pytest.fail(f"{path} not done in {timeout} s: {body}\n{stack.log('worker')[-3000:]}")


def test_the_real_fix_is_rejudged_previewed_and_applied_by_real_workers(tmp_path: Path) -> None:
    old_words, new_words = (
        cached_list(n).read_bytes() for n in ("words_alpha_2020-08-24.txt", "words_alpha.txt")
    )
    old, new = Lexicon.from_bytes(old_words), Lexicon.from_bytes(new_words)
    index = WordIndex.build(old.words)
    corpus = [
        generate(index, default_layout(), seed=900 + n, moves=300, illegal_share=0.1)
        for n in range(30)
    ]
    corpus += FIXED_MOVES
    with (
        running_stack(tmp_path / "home", workers=2) as stack,
        httpx.Client(base_url=stack.url, timeout=60) as http,
    ):
        for name, words in (("old", old_words), ("fixed", new_words)):
            response = http.post(
                "/v1/lexicons",
                params={"name": name},
                content=words,
                headers=stack.admin | {"content-type": "text/plain"},
            )
            assert response.status_code == 201, response.text
        now = datetime.now(UTC)
        contest = {
            "id": "fix",
            "title": "Fix",
            "lexicon": "old",
            "opens_at": (now - timedelta(hours=1)).isoformat(),
            "closes_at": (now + timedelta(hours=1)).isoformat(),
        }
        assert http.post("/v1/contests", json=contest, headers=stack.admin).status_code == 201
        tokens = [
            http.post("/v1/contests/fix/teams", json={"name": f"t{n}"}, headers=stack.admin).json()[
                "token"
            ]
            for n in range(5)
        ]
        ids = [
            http.post(
                "/v1/contests/fix/submissions",
                content=data,
                headers={"Authorization": f"Bearer {tokens[n % 5]}", "content-type": "text/plain"},
            ).json()["id"]
            for n, data in enumerate(corpus)
        ]
        for sid in ids:
            _wait(http, stack, f"/v1/submissions/{sid}", lambda b: b["state"] == "judged")

        started = http.post(
            "/v1/contests/fix/rejudges",
            json={"lexicon": "fixed", "mode": "affected"},
            headers=stack.admin,
        )
        assert started.status_code == 202, started.text
        run = _wait(
            http, stack, f"/v1/rejudges/{started.json()['id']}", lambda b: b["state"] == "ready"
        )

        expected_old = [judge(data, old, default_layout()).total for data in corpus]
        expected_new = [judge(data, new, default_layout()).total for data in corpus]
        flips = {
            ids[n]: (expected_old[n], expected_new[n])
            for n in range(len(corpus))
            if expected_old[n] != expected_new[n]
        }
        assert flips, "the corpus must contain moves the fix changes"
        assert {c["submission"]: (c["old_score"], c["new_score"]) for c in run["changed"]} == flips
        assert run["done"] == run["total"] == len(corpus) and run["carried"] > 0
        assert (
            http.get("/v1/submissions/" + ids[-3], headers=stack.admin).json()["score"]
            == expected_old[-3]
        )

        applied = http.post(f"/v1/rejudges/{run['id']}/apply", headers=stack.admin)
        assert applied.status_code == 200, applied.text
        scores = [
            http.get(f"/v1/submissions/{sid}", headers=stack.admin).json()["score"] for sid in ids
        ]
        assert scores == expected_new
        assert '"lexicons_preloaded"' in stack.log(
            "worker"
        ) or "worker.lexicons_preloaded" in stack.log("worker")
        assert new.id in stack.log("worker")  # the worker parent loaded the fixed list for its pool
