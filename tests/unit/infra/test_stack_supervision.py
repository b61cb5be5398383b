"""`tilejudge up` restarts a part that dies, on the same port, and gives up on one that keeps
dying. Real (tiny) processes stand in for the API, the worker and a local service."""

from __future__ import annotations

import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from devstack.process import Service
from devstack.stack import RESTART_LIMIT, Stack, StackError, supervise_once
from devstack.up import make_private

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    logs = tmp_path / "logs"
    logs.mkdir()
    running = Stack(logs=logs)
    yield running
    running.stop(threading.Event())


def kill(process: subprocess.Popen[bytes]) -> None:
    process.kill()
    process.wait()


def test_a_child_that_dies_is_started_again_with_the_same_command(stack: Stack) -> None:
    worker = stack.spawn("worker", SLEEPER, {})
    first = worker.process.pid
    kill(worker.process)

    supervise_once(stack)

    assert worker.process.pid != first
    assert worker.process.poll() is None
    assert worker.process.args == SLEEPER
    assert (stack.logs / "worker.log").read_text().count("--- worker started at") == 2


def test_a_living_stack_is_left_alone(stack: Stack) -> None:
    api = stack.spawn("api", SLEEPER, {})
    pid = api.process.pid
    supervise_once(stack)
    assert api.process.pid == pid
    assert stack.deaths == {}


def test_a_child_that_keeps_dying_stops_the_stack_with_its_log(stack: Stack) -> None:
    crasher = stack.spawn("api", [sys.executable, "-c", "print('port in use'); exit(3)"], {})
    for _ in range(RESTART_LIMIT):
        crasher.process.wait()
        supervise_once(stack)
    crasher.process.wait()
    with pytest.raises(StackError, match=f"died {RESTART_LIMIT + 1} times") as raised:
        supervise_once(stack)
    assert "exited unexpectedly with code 3" in str(raised.value)
    assert "port in use" in str(raised.value)


def fake_service(logs: Path, port: int) -> Service:
    process = subprocess.Popen(SLEEPER)
    return Service("redis", f"redis://127.0.0.1:{port}/0", process, logs / "redis.log", (port,))


def test_a_service_that_dies_is_started_again_on_its_port(stack: Stack) -> None:
    asked: list[int] = []

    def restart(port: int) -> Service:
        asked.append(port)
        return fake_service(stack.logs, port)

    redis = fake_service(stack.logs, 6399)
    stack.add_service(redis, restart)
    kill(redis.process)

    supervise_once(stack)

    assert asked == [6399]
    (successor,) = stack.services
    assert successor is not redis
    assert successor.url == redis.url
    assert successor.running


def test_up_makes_its_home_private_to_the_user_even_if_it_existed_wider(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    home.chmod(0o755)

    make_private(home)
    make_private(tmp_path / "new" / "home")

    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "new" / "home").stat().st_mode) == 0o700
