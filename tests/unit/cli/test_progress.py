"""Progress on stderr: a bar redrawn in place on a terminal only; in a pipe or a log file, plain
lines now and then and the last state, never a `\\r` frame."""

from __future__ import annotations

import io
from typing import Any, cast

from cli.admin import follow
from cli.progress import QUIET_S, Progress
from infra.api_client import Client


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_on_a_terminal_the_bar_is_redrawn_in_place_then_ended_with_a_newline() -> None:
    err = io.StringIO()
    progress = Progress(err, "job", terminal=True)

    progress.show(0, 4, "a longer detail")
    progress.show(2, 4, "short")
    progress.finish(4, 4, "done")

    frames = err.getvalue().split("\r")[1:]
    assert frames[0] == "[..............................] 0/4  a longer detail"
    assert frames[1].startswith("[###############...............] 2/4  short")
    assert len(frames[1]) == len(frames[0])  # blanks what the longer frame left
    assert frames[2].startswith("[##############################] 4/4  done")
    assert frames[2].endswith("\n")


def test_elsewhere_a_plain_line_each_tenth_of_the_way_and_the_last_one() -> None:
    err = io.StringIO()
    clock = Clock()
    progress = Progress(err, "job", clock=clock)  # a StringIO is no terminal

    for done in range(0, 100, 3):
        progress.show(done, 100, "1.0/s")
        clock.sleep(0.5)
    progress.finish(100, 100, "1.0/s")

    written = err.getvalue()
    assert "\r" not in written
    lines = written.splitlines()
    assert lines[0] == "job: 0/100 (0 %)  1.0/s"
    assert lines[-1] == "job: 100/100 (100 %)  1.0/s"
    assert [line.split()[1] for line in lines] == [
        "0/100", "12/100", "21/100", "30/100", "42/100", "51/100", "60/100", "72/100", "81/100",
        "90/100", "100/100",
    ]  # fmt: skip


def test_elsewhere_a_count_that_does_not_move_still_gets_a_line_now_and_then() -> None:
    err = io.StringIO()
    clock = Clock()
    progress = Progress(err, "job", clock=clock)

    for _ in range(int(3 * QUIET_S)):
        progress.show(5, 100, "0.0/s")
        clock.sleep(1.0)

    assert len(err.getvalue().splitlines()) == 3


def test_elsewhere_the_last_state_is_not_repeated_when_its_line_is_already_written() -> None:
    err = io.StringIO()
    progress = Progress(err, "job", clock=Clock())

    progress.show(4, 4, "x")
    progress.finish(4, 4, "x")

    assert err.getvalue() == "job: 4/4 (100 %)  x\n"


class Runs:
    """A rejudge run as `GET /v1/rejudges/{id}` shows it, a few more done at each read."""

    def __init__(self, total: int, step: int) -> None:
        self.total, self.step, self.done = total, step, 0

    def call(self, method: str, path: str, **options: Any) -> dict[str, Any]:
        assert (method, path) == ("GET", "/v1/rejudges/r1")
        run = {"id": "r1", "done": self.done, "total": self.total, "carried": 1}
        run["state"] = "running" if self.done < self.total else "ready"
        self.done = min(self.total, self.done + self.step)
        return run


def test_following_a_rejudge_into_a_log_file_writes_plain_lines_only() -> None:
    err, clock = io.StringIO(), Clock()

    api = cast("Client", Runs(total=50, step=5))

    run = follow(api, "r1", 60.0, err=err, sleep=clock.sleep, clock=clock)

    assert run["state"] == "ready"
    written = err.getvalue()
    assert "\r" not in written and "[" not in written
    lines = written.splitlines()
    assert len(lines) == 11  # 0, 5, ... 50: each a tenth of the way
    assert lines[-1] == "rejudge r1: 50/50 (100 %)  10.0/s  ETA 0 s  (1 carried over)"
