"""The CLICS Contest API of a real stack, checked by the specification's own tools: the vendored
`check-api.sh` of icpc/ccs-specs `2026-01`, with its JSON schemas in strict mode (no property
beyond the spec's) and its consistency check of the event feed against the REST endpoints
(`-C`, `check-api-consistency.php`), run by the public, the organiser and a team against a
contest with teams, judged and pending submissions, a rejudge applied during a freeze, and then
after the thaw.
TILEJUDGE_CCS_SPECS may name a checkout of the specification to use instead of the copy."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.public import WINDOW_S
from devstack.testing.stack_process import RunningStack, running_stack
from tests.clics.yajsv_standin import serving

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

HERE = Path(__file__).resolve().parents[1] / "clics"
# The checker and schemas: vendored (see its README), or a checkout of icpc/ccs-specs' 2026-01.
SPEC = Path(os.environ.get("TILEJUDGE_CCS_SPECS") or HERE / "spec")
CLIENT = HERE / "yajsv_client.py"
WORDS = ("cat", "at", "ate", "tea", "eat", "tab", "bat", "by")
FIXED = (*WORDS, "cab")  # the rejudge's list: one more word
UPLOADS = (
    b"-1 0 1 0 cat\n0 0 0 2 tea\n",
    b"-1 0 1 0 tab\n0 -1 0 1 cab\n",  # cab: illegal under WORDS, legal under FIXED
    b"-1 0 1 0 bat\n",
)
FREEZE_IN_S = 12.0


@pytest.fixture(scope="module")
def validator() -> Iterator[str]:
    """The stand-in validator, answering in this process: the command check-api.sh runs."""
    with (
        tempfile.TemporaryDirectory(prefix="yajsv") as where,  # a socket's path is short
        serving(Path(where) / "socket") as socket,
    ):
        yield f"{sys.executable} -I -S {CLIENT} {socket}"


def check_api(
    url: str, validator: str, *, user: str | None = None, token: str | None = None
) -> str:
    """`check-api.sh -e -C -b` (the error codes too; the event feed against the REST
    endpoints, by `check-api-consistency.php`; stop at the first failure), strict, with the
    stand-in validator; its output, after asserting it found nothing wrong (strict, the
    consistency check fails on a warning too)."""
    for tool in ("curl", "jq", "php"):
        assert shutil.which(tool), f"check-api.sh -C needs {tool} (tests/clics/spec/README.md)"
    curl = "-s" + (f" -u {user}:{token}" if token else "")
    done = subprocess.run(
        ["bash", str(SPEC / "check-api.sh"), "-e", "-C", "-b", "-t", "3", "-c", curl,
         "-j", validator, f"{url}/clics"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    for word in ("fail", "warning", "error:"):  # the consistency check says "Error: ..."
        assert word not in output.lower(), output
    assert "event-feed: OK" in output and "scoreboard: OK" in output, output
    return output


def _post(http: httpx.Client, stack: RunningStack, path: str, **kwargs: Any) -> dict[str, Any]:
    response = http.post(path, headers=stack.admin | kwargs.pop("headers", {}), **kwargs)
    assert response.status_code in (200, 201, 202), response.text
    return dict(response.json())


def _until(what: str, done: Any, timeout: float = 120) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := done():
            return found
        time.sleep(0.3)
    pytest.fail(f"{what} not done in {timeout} s")


def _judged(http: httpx.Client, stack: RunningStack, ids: list[str]) -> None:
    for sid in ids:
        _until(sid, lambda sid=sid: http.get(f"/v1/submissions/{sid}", headers=stack.admin)
               .json()["state"] == "judged")  # fmt: skip


def _upload(http: httpx.Client, token: str, data: bytes) -> str:
    response = http.post(
        "/v1/contests/cday/submissions",
        content=data,
        headers={"Authorization": f"Bearer {token}", "content-type": "text/plain"},
    )
    assert response.status_code == 202, response.text
    return str(response.json()["id"])


def test_the_stand_in_validator_fails_a_document_outside_its_schema(
    tmp_path: Path, validator: str
) -> None:
    """What makes the checks below able to fail: a property the strict schema does not name."""
    schemas = tmp_path / "json-schema"
    schemas.mkdir()
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "x.json",
              "type": "object", "properties": {"id": {"type": "string"}},
              "additionalProperties": False}  # fmt: skip
    (schemas / "x.json").write_text(json.dumps(schema))
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text('{"id": "a"}')
    bad.write_text('{"id": "a", "extra": 1}')

    def run(document: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*validator.split(), "-q", "-s", str(schemas / "x.json"), "-r", f"{schemas}/*.json",
             str(document)],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip

    passed, failed = run(good), run(bad)
    assert (passed.returncode, passed.stdout) == (0, "")
    assert failed.returncode == 1 and f"{bad}: fail: (root): Additional properties" in failed.stdout


def test_the_contest_api_passes_the_specifications_own_checks_frozen_and_thawed(
    tmp_path: Path, validator: str
) -> None:
    with (
        running_stack(tmp_path / "home", workers=1) as stack,
        httpx.Client(base_url=stack.url, timeout=60) as http,
    ):
        for name, words in (("tiny", WORDS), ("fixed", FIXED)):
            _post(http, stack, "/v1/lexicons", params={"name": name},
                  content="".join(w + "\n" for w in words),
                  headers={"content-type": "text/plain"})  # fmt: skip
        now = datetime.now(UTC)
        freeze_at = now + timedelta(seconds=FREEZE_IN_S)
        _post(http, stack, "/v1/contests", json={
            "id": "cday", "title": "Contest day", "lexicon": "tiny",
            "opens_at": (now - timedelta(hours=1)).isoformat(),
            "closes_at": (now + timedelta(hours=1)).isoformat(),
            "freeze_at": freeze_at.isoformat(),
        })  # fmt: skip
        tokens = [
            _post(http, stack, "/v1/contests/cday/teams", json={"name": f"team-{n}"})["token"]
            for n in range(1, 5)
        ]
        before = [_upload(http, tokens[n % 4], UPLOADS[n % 3]) for n in range(6)]
        _judged(http, stack, before)
        time.sleep(max(0.0, (freeze_at - datetime.now(UTC)).total_seconds() + 0.5))
        after = [_upload(http, tokens[n], b"-1 0 1 0 eat\n0 0 0 2 tea\n") for n in range(2)]
        _judged(http, stack, after)
        run = _post(http, stack, "/v1/contests/cday/rejudges",
                    json={"lexicon": "fixed", "mode": "full"})  # fmt: skip
        _until("the rejudge", lambda: http.get(f"/v1/rejudges/{run['id']}", headers=stack.admin)
               .json()["state"] == "ready")  # fmt: skip
        _post(http, stack, f"/v1/rejudges/{run['id']}/apply")

        # The public, the organiser and a team, side by side (each run is read-only).
        roles = [{}, {"user": "admin", "token": stack.admin_token},
                 {"user": "team-1", "token": tokens[0]}]  # fmt: skip
        with ThreadPoolExecutor(len(roles)) as pool:
            list(pool.map(lambda role: check_api(stack.url, validator, **role), roles))
        public = http.get("/clics/contests/cday/scoreboard").json()
        assert public["state"]["frozen"] is not None and public["state"]["thawed"] is None
        pending = {r["team_id"]: r["problems"][0]["num_pending"] for r in public["rows"]}
        assert sorted(pending.values()) == [0, 0, 1, 1]
        admin = http.get("/clics/contests/cday/judgements", headers=stack.admin).json()
        assert len(admin) == 2 * (len(before) + len(after))  # under both rulesets
        assert sum(not j["current"] for j in admin) == len(before) + len(after)
        shown = http.get("/clics/contests/cday/judgements").json()
        assert len(shown) == len(before) and all(j["current"] for j in shown)

        _post(http, stack, "/v1/contests/cday/thaw")
        # The API process that did not thaw may answer from a read shared before the thaw for
        # up to a window (api/public.py); -C compares those answers with a feed read afresh.
        time.sleep(WINDOW_S + 0.1)
        check_api(stack.url, validator)
        thawed = http.get("/clics/contests/cday/judgements").json()
        assert sorted(thawed, key=lambda j: j["id"]) == sorted(admin, key=lambda j: j["id"])
        feed = http.get("/clics/contests/cday/event-feed", params={"stream": "false"}).text
        events = [json.loads(line) for line in feed.splitlines() if line]
        assert events[-1]["token"] and {e["type"] for e in events} >= {
            "contest", "state", "teams", "submissions", "judgements", "problems",
        }  # fmt: skip
        assert http.get("/clics/contests/nope").json()["code"] == 404
