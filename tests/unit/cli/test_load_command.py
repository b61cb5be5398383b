"""`tilejudge load` finds the stack as every command does (loopback only), runs in a contest of
its own unless --contest names one, says which, and says what it leaves on the server."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from devstack import load
from devstack.plan import LoadError, Plan
from infra import lexicon_files
from infra.api_client import ApiError
from judge import Lexicon
from tests.unit.cli.test_server_url import STACK, running_stack

ARGS = ["load", "--uploads", "5", "--concurrency", "2", "--teams", "3"]
OWN_CONTEST = re.compile(r"load-\d{8}-\d{6}-[0-9a-f]{4}")


class Runs:
    """Stands in for `devstack.load.run`: what it was asked to do, or a failure to raise."""

    def __init__(self) -> None:
        self.calls: list[tuple[Plan, bool]] = []
        self.error: Exception | None = None

    def __call__(self, plan: Plan, lexicon: Lexicon, *, created: bool = False) -> int:
        self.calls.append((plan, created))
        if self.error is not None:
            raise self.error
        return 0


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> Runs:
    fake = Runs()
    monkeypatch.setattr(load, "run", fake)
    monkeypatch.setattr(lexicon_files, "resolve", lambda *args: Path("words.txt"))
    monkeypatch.setattr(lexicon_files, "load", lambda path: Lexicon.from_words({"cat"}))
    return fake


def environ(home: Path, **more: str) -> dict[str, str]:
    return {"TILEJUDGE_HOME": str(home), "TILEJUDGE_ADMIN_TOKEN": "admin", **more}


def test_without_url_or_contest_it_loads_the_running_stack_in_a_contest_of_its_own(
    runs: Runs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with running_stack(tmp_path):
        assert main(ARGS, environ(tmp_path)) == 0

    ((plan, created),) = runs.calls
    assert plan.url == STACK
    assert OWN_CONTEST.fullmatch(plan.contest)
    assert created
    assert capsys.readouterr().err == (
        f"tilejudge: load: 5 uploads to {STACK}, contest {plan.contest} (new, for this run)\n"
    )


def test_two_runs_get_two_contests(runs: Runs, tmp_path: Path) -> None:
    with running_stack(tmp_path):
        assert main(ARGS, environ(tmp_path)) == 0
        assert main(ARGS, environ(tmp_path)) == 0
    first, second = (plan.contest for plan, _ in runs.calls)
    assert first != second


def test_a_contest_given_is_loaded_and_said_to_come_from_the_option(
    runs: Runs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main([*ARGS, "--contest", "demo", "--url", "http://localhost:9/"], environ(tmp_path)) == 0
    )

    ((plan, created),) = runs.calls
    assert (plan.url, plan.contest, created) == ("http://localhost:9", "demo", False)
    assert "contest demo (from --contest)" in capsys.readouterr().err


def test_a_url_that_is_not_this_machine_is_refused_naming_where_it_came_from(
    runs: Runs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(ARGS, environ(tmp_path, TILEJUDGE_URL="http://judge.example.org"))

    assert code == 2
    assert runs.calls == []
    assert capsys.readouterr().err == (
        "tilejudge: refusing 'http://judge.example.org': load is only sent to 127.0.0.1, "
        "localhost or ::1 (that URL is from TILEJUDGE_URL)\n"
    )


def test_with_no_stack_running_it_says_how_to_start_one(
    runs: Runs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    refused = ApiError(
        "cannot reach http://127.0.0.1:8000: [Errno 111] Connection refused", outcome="ConnectError"
    )
    try:
        raise LoadError(f"reading contest x: {refused}") from refused
    except LoadError as caught:
        runs.error = caught

    assert main(ARGS, environ(tmp_path)) == 2

    lines = capsys.readouterr().err.splitlines()
    assert lines[1:] == [
        "tilejudge: reading contest x: cannot reach http://127.0.0.1:8000: [Errno 111] "
        "Connection refused",
        "tilejudge: http://127.0.0.1:8000 is the default: no running stack recorded a URL in "
        f"{tmp_path}. Start the stack with `make run` (or `tilejudge up`); if it runs "
        "elsewhere, export TILEJUDGE_HOME=<its data directory> or pass --url URL",
    ]


def test_a_refused_step_that_is_not_a_connection_gets_no_hint(
    runs: Runs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs.error = LoadError("contest demo is not open now")

    assert main([*ARGS, "--contest", "demo"], environ(tmp_path)) == 2

    assert capsys.readouterr().err.splitlines()[1:] == ["tilejudge: contest demo is not open now"]


def plan(**fields: Any) -> Plan:
    return Plan(**({"url": "http://127.0.0.1:9", "contest": "c", "uploads": 5, "concurrency": 1,
                    "teams": 3, "admin_token": "t"} | fields))  # fmt: skip


def test_a_contest_of_its_own_is_named_for_when_the_run_started() -> None:
    made = load.new_contest_id(datetime(2026, 12, 3, 6, 29, 1, tzinfo=UTC))
    assert re.fullmatch(r"load-20261203-062901-[0-9a-f]{4}", made)


def test_the_report_says_a_contest_of_its_own_stays_and_how_to_remove_its_teams() -> None:
    assert load.kept(plan(contest="load-x"), created=True).splitlines() == [
        "kept          contest load-x, created for this run, with its 3 teams and their uploads "
        "(no command deletes a contest)",
        "  `tilejudge team list --contest load-x` lists them; `tilejudge team delete TEAM_ID` "
        "deletes one with its uploads",
    ]


def test_the_report_says_the_teams_left_in_a_contest_given_show_in_its_standings() -> None:
    first = load.kept(plan(contest="demo"), created=False).splitlines()[0]
    assert first == (
        "kept          3 teams named load-* and their uploads in contest demo, whose standings "
        "show them"
    )
