"""A command finds its server: --url, then $TILEJUDGE_URL, then the URL a running local stack
recorded, then the default. It says on stderr which it used, and where that came from, with
-v, or when nothing answers there (then with what to do)."""

from __future__ import annotations

import fcntl
import io
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from cli.main import main
from cli.options import Role, resolve, stack_url
from infra import api_client
from infra.settings import ClientSettings, SettingsError

STACK = "http://127.0.0.1:43123"


@contextmanager
def running_stack(home: Path, url: str = STACK) -> Iterator[None]:
    """What `tilejudge up` leaves while it runs: the URL, and its lock held exclusively."""
    (home / "api-url").write_text(url + "\n")
    with (home / "up.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield


def server(
    home: Path, url: str | None = None, verbose: bool = True, **environ: str
) -> tuple[str, str]:
    """The URL resolved, and what was said on stderr."""
    err = io.StringIO()
    settings = ClientSettings.from_env({"TILEJUDGE_HOME": str(home), **environ})
    return resolve(settings, Role.PUBLIC, url=url, err=err, verbose=verbose).url, err.getvalue()


def test_the_option_comes_first(tmp_path: Path) -> None:
    with running_stack(tmp_path):
        found = server(tmp_path, "http://127.0.0.1:9/", TILEJUDGE_URL="http://127.0.0.1:7")
    assert found == ("http://127.0.0.1:9", "tilejudge: using http://127.0.0.1:9 (from --url)\n")


def test_the_environment_comes_before_the_stack(tmp_path: Path) -> None:
    with running_stack(tmp_path):
        url, said = server(tmp_path, TILEJUDGE_URL="http://127.0.0.1:7/")
    assert url == "http://127.0.0.1:7"
    assert said == "tilejudge: using http://127.0.0.1:7 (from TILEJUDGE_URL)\n"


def test_without_verbose_nothing_is_said_of_the_server_found(tmp_path: Path) -> None:
    with running_stack(tmp_path):
        assert server(tmp_path, verbose=False) == (STACK, "")
        assert server(tmp_path, verbose=False, TILEJUDGE_URL="http://127.0.0.1:7") == (
            "http://127.0.0.1:7",
            "",
        )


def test_a_running_stacks_url_comes_before_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    home = tmp_path / ".tilejudge"
    home.mkdir()
    with running_stack(home):
        url, said = server(home)
    assert url == STACK
    assert said == f"tilejudge: using {STACK} (recorded by the stack in .tilejudge)\n"


def test_a_stack_that_is_not_running_is_not_believed_nor_replaced_by_the_default(
    tmp_path: Path,
) -> None:
    with running_stack(tmp_path):
        pass  # the stack stopped: its lock is free, its URL file is left behind
    with pytest.raises(SettingsError) as refused:
        server(tmp_path, verbose=False)
    assert str(refused.value) == (
        f"the local stack in {tmp_path} is not running: start it with `make run` (or "
        "`tilejudge up`), or pass --url URL (or set TILEJUDGE_URL) to use another server"
    )


def test_without_a_home_the_default_is_used(tmp_path: Path) -> None:
    assert server(tmp_path, verbose=False) == ("http://127.0.0.1:8000", "")
    assert server(tmp_path)[1] == (
        "tilejudge: using http://127.0.0.1:8000 (the default: no running stack recorded a URL "
        f"in {tmp_path})\n"
    )


@pytest.mark.parametrize("command", [["leaderboard", "--contest", "demo"], ["contest", "list"]])
def test_a_command_beside_a_stopped_stack_says_so_and_calls_no_server(
    command: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = refused_connection(monkeypatch)
    monkeypatch.chdir(tmp_path)
    home = tmp_path / ".tilejudge"
    home.mkdir()
    with running_stack(home):
        pass

    code = main(command, environ={"TILEJUDGE_HOME": str(home)})

    assert code == 2
    assert calls == []
    assert capsys.readouterr().err == (
        "tilejudge: the local stack in .tilejudge is not running: start it with `make run` (or "
        "`tilejudge up`), or pass --url URL (or set TILEJUDGE_URL) to use another server\n"
    )


@pytest.mark.parametrize(
    ("argv", "environ"),
    [(["--url", "http://127.0.0.1:9"], {}), ([], {"TILEJUDGE_URL": "http://127.0.0.1:9"})],
    ids=["option", "environment"],
)
def test_a_url_given_reaches_its_server_beside_a_stopped_stack(
    argv: list[str],
    environ: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = refused_connection(monkeypatch)
    with running_stack(tmp_path):
        pass

    code = main(
        ["leaderboard", "--contest", "demo", *argv],
        environ={"TILEJUDGE_HOME": str(tmp_path), **environ},
    )

    assert code == 2  # nothing listens there: what matters is where it called
    assert calls == ["http://127.0.0.1:9"]


def test_without_a_lock_file_the_default_is_used_and_no_lock_file_is_made(tmp_path: Path) -> None:
    (tmp_path / "api-url").write_text(STACK + "\n")
    assert server(tmp_path, verbose=False) == ("http://127.0.0.1:8000", "")
    assert not (tmp_path / "up.lock").exists()
    assert server(tmp_path / "no-such-home", verbose=False) == ("http://127.0.0.1:8000", "")
    assert not (tmp_path / "no-such-home").exists()


def test_the_lock_is_let_go_at_once_so_a_stack_can_start(tmp_path: Path) -> None:
    (tmp_path / "up.lock").touch()
    (tmp_path / "api-url").write_text(STACK + "\n")

    with pytest.raises(SettingsError):
        server(tmp_path)  # a stopped stack

    with (tmp_path / "up.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if the check still held it


def test_a_running_stack_without_a_recorded_url_leaves_the_default(tmp_path: Path) -> None:
    with running_stack(tmp_path):
        (tmp_path / "api-url").unlink()
        assert stack_url(tmp_path) is None
        assert server(tmp_path, verbose=False) == ("http://127.0.0.1:8000", "")


def test_a_recorded_url_that_is_not_a_url_names_its_file(tmp_path: Path) -> None:
    with running_stack(tmp_path, url="127.0.0.1:43123"), pytest.raises(SettingsError) as refused:
        server(tmp_path)
    assert str(tmp_path / "api-url") in str(refused.value)
    assert "http://" in str(refused.value)


def refused_connection(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every command's calls are refused as if nothing listened; the URLs its clients were
    built for."""
    calls: list[str] = []
    real_connect = api_client.connect

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    def connect(url: str, *args: Any, **kwargs: Any) -> api_client.Client:
        calls.append(url)
        return real_connect(url, *args, **(kwargs | {"transport": httpx.MockTransport(refuse)}))

    monkeypatch.setattr(api_client, "connect", connect)
    monkeypatch.delenv("TILEJUDGE_URL", raising=False)
    return calls


def test_a_command_that_cannot_reach_the_stacks_url_says_where_it_came_from_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = refused_connection(monkeypatch)

    with running_stack(tmp_path):
        code = main(["contest", "list"], environ={"TILEJUDGE_HOME": str(tmp_path)})

    assert code == 2
    assert calls == [STACK]
    assert capsys.readouterr().err.splitlines() == [
        f"tilejudge: cannot reach {STACK}: [Errno 111] Connection refused",
        f"tilejudge: {STACK} was recorded by the stack in {tmp_path}, whose `tilejudge up` still "
        "runs: it may be starting or stopping; wait for its banner, or pass --url URL",
    ]


def test_with_verbose_a_command_says_once_which_server_it_uses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    refused_connection(monkeypatch)

    with running_stack(tmp_path):
        code = main(["contest", "list", "-v"], environ={"TILEJUDGE_HOME": str(tmp_path)})

    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tilejudge: using {STACK} (recorded by the stack in {tmp_path})\n")
    assert err.count(f"using {STACK}") == 1


def test_with_no_stack_running_a_refused_connection_says_how_to_start_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    refused_connection(monkeypatch)

    code = main(["leaderboard", "--contest", "demo"], environ={"TILEJUDGE_HOME": str(tmp_path)})

    assert code == 2
    assert capsys.readouterr().err.splitlines() == [
        "tilejudge: cannot reach http://127.0.0.1:8000: [Errno 111] Connection refused",
        "tilejudge: http://127.0.0.1:8000 is the default: no running stack recorded a URL in "
        f"{tmp_path}. Start the stack with `make run` (or `tilejudge up`); if it runs "
        "elsewhere, export TILEJUDGE_HOME=<its data directory> or pass --url URL",
    ]


@pytest.mark.parametrize(
    ("argv", "environ", "hint"),
    [
        (
            ["--url", "http://127.0.0.1:9"],
            {},
            "http://127.0.0.1:9 is from --url: start the stack there, or leave --url out to use "
            "the local one, which `make run` (or `tilejudge up`) starts",
        ),
        (
            [],
            {"TILEJUDGE_URL": "http://127.0.0.1:9"},
            "http://127.0.0.1:9 is from TILEJUDGE_URL: start the stack there, or unset "
            "TILEJUDGE_URL to use the local one, which `make run` (or `tilejudge up`) starts",
        ),
    ],
    ids=["option", "environment"],
)
def test_a_refused_connection_to_a_url_given_names_what_gave_it(
    argv: list[str],
    environ: dict[str, str],
    hint: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    refused_connection(monkeypatch)

    code = main(["contest", "list", *argv], environ={"TILEJUDGE_HOME": str(tmp_path), **environ})

    assert code == 2
    assert capsys.readouterr().err.splitlines()[1] == f"tilejudge: {hint}"


def test_an_answer_that_refuses_the_call_gets_no_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def connect(url: str, *args: object, **kwargs: object) -> api_client.Client:
        raise api_client.ApiError("HTTP 401 unauthorized: bad token", outcome="401", status=401)

    monkeypatch.setattr(api_client, "connect", connect)

    code = main(["contest", "list"], environ={"TILEJUDGE_HOME": str(tmp_path)})

    assert code == 2
    assert capsys.readouterr().err == "tilejudge: HTTP 401 unauthorized: bad token\n"
