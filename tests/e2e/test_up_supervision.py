"""`tilejudge up` keeps the stack running when a part of it dies: the Celery worker and the
local Redis are SIGKILLed in turn, `up` starts each again, and uploads are judged afterwards;
a Ctrl-C stops the API and workers before the servers they use."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from devstack.testing.stack_process import RunningStack, children_of, running, running_stack
from judge import Lexicon
from judge.wordytaire import default_layout, judge
from judge.wordytaire.generator import WordIndex, generate

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _cmdline(pid: int) -> str:
    try:
        return (
            Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        )
    except OSError:
        return ""  # gone (reaped) since it was listed


def _nice(pid: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, pid)


def _child_running(stack: RunningStack, marker: str) -> int:
    """The pid of `up`'s direct child whose command line holds `marker`."""
    matches = [p for p in children_of(stack.process.pid) if marker in _cmdline(p)]
    assert len(matches) == 1, f"{marker}: {[_cmdline(p) for p in children_of(stack.process.pid)]}"
    return matches[0]


def _wait_restarted(stack: RunningStack, marker: str, old: int) -> None:
    """Until `up` runs `marker` again under a new pid (a hang is the test timeout's to catch)."""
    while True:
        assert stack.process.poll() is None, (stack.home / "up.out").read_text()
        pids = [p for p in children_of(stack.process.pid) if marker in _cmdline(p)]
        if pids and pids != [old]:
            return
        time.sleep(0.2)


def _upload_and_wait(http: httpx.Client, token: str, body: bytes) -> dict[str, Any]:
    """The upload's submission once judged (a hang is the test timeout's to catch)."""
    headers = {"Authorization": f"Bearer {token}", "content-type": "text/plain"}
    while True:  # the API may answer 503 while Redis comes back; the client retries
        answer = http.post("/v1/contests/supervised/submissions", content=body, headers=headers)
        if answer.status_code == 202:
            break
        assert answer.status_code == 503, answer.text
        time.sleep(0.5)
    sid = answer.json()["id"]
    while True:
        doc = http.get(f"/v1/submissions/{sid}", headers={"Authorization": f"Bearer {token}"})
        found: dict[str, Any] = doc.json()
        if found["state"] == "judged":
            return found
        time.sleep(0.3)


def test_up_starts_a_killed_worker_and_redis_again_and_a_ctrl_c_stops_users_before_servers(
    tmp_path: Path, real_lexicon: Lexicon, word_index: WordIndex
) -> None:
    bodies = [generate(word_index, default_layout(), seed=seed, moves=60) for seed in range(3)]
    expected = [judge(body, real_lexicon, default_layout()).total for body in bodies]
    env = {"TILEJUDGE_REQUEUE_AFTER": "5"}  # the sweeper publishes what Redis missed quickly
    with (
        running_stack(tmp_path / "home", workers=1, env=env) as stack,
        httpx.Client(base_url=stack.url, timeout=30) as http,
    ):
        now = datetime.now(UTC)
        contest = {
            "id": "supervised",
            "title": "Supervised",
            "opens_at": (now - timedelta(hours=1)).isoformat(),
            "closes_at": (now + timedelta(hours=1)).isoformat(),
            "lexicon": "words_alpha",  # registered by `up` itself
        }
        assert http.post("/v1/contests", json=contest, headers=stack.admin).status_code == 201
        team = http.post("/v1/contests/supervised/teams", json={"name": "t"}, headers=stack.admin)
        token = team.json()["token"]
        assert _upload_and_wait(http, token, bodies[0])["score"] == expected[0]
        # The judges yield the CPU to intake: the worker and its pool run at nice 10, the API not.
        worker = _child_running(stack, "celery")
        assert {_nice(pid) for pid in [worker, *children_of(worker)]} == {10}
        assert _nice(_child_running(stack, "uvicorn")) == os.getpriority(os.PRIO_PROCESS, 0)

        for marker, body, score in (
            ("celery", bodies[1], expected[1]),
            ("redis-server", bodies[2], expected[2]),
        ):
            victim = _child_running(stack, marker)
            os.kill(victim, signal.SIGKILL)
            _wait_restarted(stack, marker, victim)
            assert _upload_and_wait(http, token, body)["score"] == score

        out = (stack.home / "up.out").read_text()
        assert stat.S_IMODE(stack.home.stat().st_mode) == 0o700  # made before `up`, as 0755
        assert "worker started again" in out
        assert "redis started again" in out

        # A Ctrl-C in the terminal reaches the whole foreground process group: only `up` may
        # act on it, stopping the API and workers before the Redis and S3 they talk to.
        before = {name: len(stack.log(name)) for name in ("api", "worker")}
        os.killpg(stack.process.pid, signal.SIGINT)
        assert stack.process.wait(90) == 0, (stack.home / "up.out").read_text()
    stopping = "".join(stack.log(name)[start:] for name, start in before.items())
    for warning in ("worker_watch_failed", "release_failed", "Connection refused", "Traceback"):
        assert warning not in stopping, stopping[-3000:]


# A program that holds a stack until it is stopped: a benchmark, or a test run, in miniature.
HOLDER = """
import sys, time
from pathlib import Path
from devstack.testing.stack_process import children_of, running_stack
with running_stack(Path(sys.argv[1]), workers=1) as stack:
    print(stack.process.pid, *children_of(stack.process.pid), flush=True)
    time.sleep(600)
"""


def test_a_program_stopped_with_sigterm_stops_the_stack_it_started(tmp_path: Path) -> None:
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path / "home")],
        cwd=Path(__file__).resolve().parents[2],
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        try:
            assert holder.stdout is not None
            up, *parts = (int(pid) for pid in holder.stdout.readline().split())
            assert parts, "`up` had started nothing"
            holder.send_signal(signal.SIGTERM)
            holder.wait(90)
        finally:
            if holder.poll() is None:
                holder.kill()
                holder.wait(10)
    left = [pid for pid in (up, *parts) if running(pid)]
    assert not left, [_cmdline(pid) for pid in left]
