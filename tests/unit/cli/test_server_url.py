"""A command finds its server: --url, then $TILEJUDGE_URL, then the URL a running local stack
recorded, then the default; it says on stderr which it used when it is not the default."""

from __future__ import annotations

import fcntl
import io
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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


def server(home: Path, url: str | None = None, **environ: str) -> tuple[str, str]:
    """The URL resolved, and what was said on stderr."""
    err = io.StringIO()
    settings = ClientSettings.from_env({"TILEJUDGE_HOME": str(home), **environ})
    return resolve(settings, Role.PUBLIC, url=url, err=err).url, err.getvalue()


def test_the_option_comes_first_and_is_not_announced(tmp_path: Path) -> None:
    with running_stack(tmp_path):
        found = server(tmp_path, "http://127.0.0.1:9/", TILEJUDGE_URL="http://127.0.0.1:7")
    assert found == ("http://127.0.0.1:9", "")


def test_the_environment_comes_before_the_stack_and_is_announced(tmp_path: Path) -> None:
    with running_stack(tmp_path):
        url, said = server(tmp_path, TILEJUDGE_URL="http://127.0.0.1:7/")
    assert url == "http://127.0.0.1:7"
    assert said == "tilejudge: using http://127.0.0.1:7 (from TILEJUDGE_URL)\n"


def test_a_running_stacks_url_comes_before_the_default_and_is_announced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    home = tmp_path / ".tilejudge"
    home.mkdir()
    with running_stack(home):
        url, said = server(home)
    assert url == STACK
    assert said == f"tilejudge: using {STACK} (recorded by the stack in .tilejudge)\n"


def test_a_stack_that_is_not_running_is_not_believed(tmp_path: Path) -> None:
    with running_stack(tmp_path):
        pass  # the stack stopped: its lock is free, its URL file is left behind
    assert server(tmp_path) == ("http://127.0.0.1:8000", "")


def test_without_a_lock_file_the_default_is_used_and_no_lock_file_is_made(tmp_path: Path) -> None:
    (tmp_path / "api-url").write_text(STACK + "\n")
    assert server(tmp_path) == ("http://127.0.0.1:8000", "")
    assert not (tmp_path / "up.lock").exists()
    assert server(tmp_path / "no-such-home") == ("http://127.0.0.1:8000", "")
    assert not (tmp_path / "no-such-home").exists()


def test_the_lock_is_let_go_at_once_so_a_stack_can_start(tmp_path: Path) -> None:
    (tmp_path / "up.lock").touch()
    (tmp_path / "api-url").write_text(STACK + "\n")

    assert server(tmp_path)[0] == "http://127.0.0.1:8000"

    with (tmp_path / "up.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if the check still held it


def test_a_running_stack_without_a_recorded_url_leaves_the_default(tmp_path: Path) -> None:
    with running_stack(tmp_path):
        (tmp_path / "api-url").unlink()
        assert stack_url(tmp_path) is None
        assert server(tmp_path) == ("http://127.0.0.1:8000", "")


def test_a_recorded_url_that_is_not_a_url_names_its_file(tmp_path: Path) -> None:
    with running_stack(tmp_path, url="127.0.0.1:43123"), pytest.raises(SettingsError) as refused:
        server(tmp_path)
    assert str(tmp_path / "api-url") in str(refused.value)
    assert "http://" in str(refused.value)


def test_the_url_is_announced_once_per_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []

    def connect(url: str, *args: object, **kwargs: object) -> api_client.Client:
        calls.append(url)
        raise api_client.ApiError("no server in this test", outcome="ConnectError")

    monkeypatch.setattr(api_client, "connect", connect)
    monkeypatch.delenv("TILEJUDGE_URL", raising=False)

    with running_stack(tmp_path):
        code = main(["contest", "list"], environ={"TILEJUDGE_HOME": str(tmp_path)})

    assert code == 2
    assert calls == [STACK]
    assert capsys.readouterr().err.count(f"using {STACK}") == 1
