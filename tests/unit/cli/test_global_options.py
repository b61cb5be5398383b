"""-v/--verbose and --url may come before the subcommand as well as after it: `tilejudge -v
contest list` is `tilejudge contest list -v`."""

from __future__ import annotations

import pytest

from cli.main import _parser, main
from tests.unit.cli.test_server_url import refused_connection

# A command of each kind that talks to a server, with the arguments it requires.
COMMANDS = [
    ["contest", "list"],
    ["leaderboard", "--contest", "demo"],
    ["submit", "moves.txt", "--contest", "demo"],
    ["team", "list", "--contest", "demo"],
    ["results", "export", "--contest", "demo", "--format", "csv"],
    ["report", "0" * 32],
    ["lexicon", "list"],
    ["rejudge", "show", "0" * 32],
    ["audit", "--contest", "demo"],
    ["load", "--uploads", "1", "--concurrency", "1", "--teams", "1"],
]
IDS = [" ".join(command[:2]) for command in COMMANDS]


@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
def test_verbose_and_url_before_the_command_hold(command: list[str]) -> None:
    args = _parser().parse_args(["-v", "--url", "http://127.0.0.1:9", *command])
    assert (args.verbose, args.url) == (True, "http://127.0.0.1:9")


@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
def test_after_the_command_they_hold_as_before_and_left_out_they_are_off(
    command: list[str],
) -> None:
    args = _parser().parse_args([*command, "-v", "--url", "http://127.0.0.1:9"])
    assert (args.verbose, args.url) == (True, "http://127.0.0.1:9")
    args = _parser().parse_args(command)
    assert (args.verbose, args.url) == (False, None)


def test_the_url_after_the_command_wins_over_the_one_before() -> None:
    args = _parser().parse_args(["--url", "http://a:1", "contest", "list", "--url", "http://b:2"])
    assert args.url == "http://b:2"


def test_verbose_before_the_command_says_which_server_it_uses(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = refused_connection(monkeypatch)

    code = main(["-v", "--url", "http://127.0.0.1:9", "contest", "list"], environ={})

    assert code == 2
    assert calls == ["http://127.0.0.1:9"]
    err = capsys.readouterr().err
    assert err.startswith("tilejudge: using http://127.0.0.1:9 (from --url)\n")
