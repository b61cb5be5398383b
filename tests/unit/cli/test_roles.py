"""`tilejudge api|worker|sweeper|migrate`: the command lines they become (those `up` runs), their
options, and their refusals (one line each on stderr, exit status 2)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from cli.main import main
from devstack.children import api_argv, uvicorn_options, worker_argv

ENV = {
    "TILEJUDGE_DATABASE_URL": "postgresql://judge@db.internal/tilejudge",
    "REDIS_URL": "redis://10.0.0.5:6379/0",
    "TILEJUDGE_S3_ENDPOINT": "http://s3.internal:8333",
    "TILEJUDGE_ADMIN_TOKEN": "admin-secret",
    "TILEJUDGE_RECEIPT_KEY": "receipt-secret",
}


class Replaced(Exception):
    """What the fake execve raises instead of replacing the test's process."""

    def __init__(self, path: str, argv: Sequence[str], env: Mapping[str, str]) -> None:
        super().__init__(path)
        self.path, self.argv, self.env = path, list(argv), dict(env)


@pytest.fixture
def execs(monkeypatch: pytest.MonkeyPatch) -> None:
    def execve(path: str, argv: Sequence[str], env: Mapping[str, str]) -> None:
        raise Replaced(path, argv, env)

    monkeypatch.setattr(os, "execve", execve)


def replaced(argv: list[str], env: Mapping[str, str]) -> Replaced:
    with pytest.raises(Replaced) as done:
        main(argv, env)
    return done.value


def test_api_becomes_uvicorn_with_ups_options_on_the_configured_address(execs: None) -> None:
    env = {
        **ENV,
        "TILEJUDGE_API_HOST": "0.0.0.0",
        "TILEJUDGE_API_PORT": "8080",
        "TILEJUDGE_API_WORKERS": "4",
    }
    done = replaced(["api"], env)
    assert done.argv == api_argv(8080, 4, host="0.0.0.0")
    assert done.argv[done.argv.index("--host") + 1] == "0.0.0.0"
    assert done.argv[-len(uvicorn_options()) :] == uvicorn_options()
    assert done.path == done.argv[0]
    assert done.env == env  # the servers read the same settings


def test_api_listens_on_loopback_unless_told_otherwise(execs: None) -> None:
    done = replaced(["api"], ENV)
    assert done.argv[done.argv.index("--host") + 1] == "127.0.0.1"
    assert done.argv[done.argv.index("--port") + 1] == "8000"


def test_api_refuses_without_an_admin_token(
    execs: None, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {k: v for k, v in ENV.items() if k != "TILEJUDGE_ADMIN_TOKEN"}
    assert main(["api"], env) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("tilejudge api: TILEJUDGE_ADMIN_TOKEN is not set")


def test_a_refusal_prints_every_reason_on_a_line_of_its_own(
    execs: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["worker"], {}) == 2
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(" ")[2] for line in lines] == [
        "TILEJUDGE_DATABASE_URL",
        "REDIS_URL",
        "TILEJUDGE_S3_ENDPOINT",
    ]
    assert all(line.startswith("tilejudge worker: ") for line in lines)


def test_a_bad_setting_is_refused_naming_its_key(
    execs: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["api"], {**ENV, "TILEJUDGE_SWEEPER": "maybe"}) == 2
    assert "TILEJUDGE_SWEEPER must be 'elected' or 'off'" in capsys.readouterr().err


def test_worker_becomes_ups_celery_worker_with_every_pool_process(execs: None) -> None:
    env = {**ENV, "TILEJUDGE_WORKERS": "3", "TILEJUDGE_STANDBY_WORKERS": "1"}
    done = replaced(["worker"], env)
    assert done.argv == worker_argv(4)
    assert done.argv[done.argv.index("-Q") + 1] == "live,bulk"
    assert done.argv[done.argv.index("-n") + 1] == "tilejudge@%h"


def test_worker_takes_the_queues_and_the_concurrency_it_is_given(execs: None) -> None:
    done = replaced(["worker", "--queues", "bulk", "--concurrency", "6"], ENV)
    assert done.argv[done.argv.index("-Q") + 1] == "bulk"
    assert done.argv[done.argv.index("-c") + 1] == "6"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--queues", "live,urgent"], "--queues takes live and/or bulk"),
        (["--queues", "live,live"], "--queues takes live and/or bulk, each once"),
        (["--concurrency", "0"], "--concurrency must be between 1 and 256, not 0"),
    ],
)
def test_worker_refuses_a_bad_option(
    execs: None, capsys: pytest.CaptureFixture[str], options: list[str], message: str
) -> None:
    assert main(["worker", *options], ENV) == 2
    assert message in capsys.readouterr().err


def test_sweeper_refuses_without_redis(capsys: pytest.CaptureFixture[str]) -> None:
    env = {k: v for k, v in ENV.items() if k != "REDIS_URL"}
    assert main(["sweeper"], env) == 2
    assert capsys.readouterr().err.startswith("tilejudge sweeper: REDIS_URL is not set")


def test_migrate_refuses_without_a_database_url(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate"], {"TILEJUDGE_HOME": "/nonexistent"}) == 2
    assert capsys.readouterr().err.startswith("tilejudge migrate: TILEJUDGE_DATABASE_URL is not")


def test_migrate_prints_the_revision_before_and_after(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {"TILEJUDGE_DATABASE_URL": f"sqlite:///{tmp_path / 'judge.sqlite3'}"}
    assert main(["migrate"], env) == 0
    first = capsys.readouterr().out.strip()
    assert main(["migrate"], env) == 0
    again = capsys.readouterr().out.strip()

    head = first.split(" ")[3]
    assert first == f"revision none -> {head} (upgraded)"
    assert again == f"revision {head} -> {head} (already at the newest revision)"


def test_migrate_reports_an_unreachable_database_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {"TILEJUDGE_DATABASE_URL": f"sqlite:///{tmp_path / 'missing' / 'judge.sqlite3'}"}
    assert main(["migrate"], env) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line == "tilejudge: the database could not be upgraded: unable to open database file"
