"""Every command, option and argument of `tilejudge` says what it is for, and each subcommand's
--help is its own."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from cli.main import _parser, main


def commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every parser under `parser` (itself first), with the words that reach it."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from commands(child, (*path, name))


def missing_help(parser: argparse.ArgumentParser) -> Iterator[str]:
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if isinstance(action, argparse._SubParsersAction):
            listed = {choice.dest: choice.help for choice in action._choices_actions}
            yield from (
                f"{name} (no line in the list)" for name in action.choices if not listed.get(name)
            )
            continue
        if not action.help or action.help == argparse.SUPPRESS:
            yield "/".join(action.option_strings) or action.dest


ALL = list(commands(_parser()))


def test_the_walk_reaches_every_level_of_subcommands() -> None:
    reached = {" ".join(path) for path, _ in ALL}
    expected = {"", "judge", "rejudge", "rejudge apply", "contest close", "team add", "team delete",
                "results export", "report", "lexicon add", "layout diff", "submit", "load"}  # fmt: skip
    assert expected <= reached


@pytest.mark.parametrize(("path", "parser"), ALL, ids=[" ".join(p) or "tilejudge" for p, _ in ALL])
def test_every_option_and_argument_has_help_and_every_command_a_description(
    path: tuple[str, ...], parser: argparse.ArgumentParser
) -> None:
    assert list(missing_help(parser)) == []
    if path:
        assert parser.description, f"tilejudge {' '.join(path)} has no description"


def test_a_subcommands_help_is_its_own_not_its_parents(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as done:
        main(["rejudge", "apply", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: tilejudge rejudge apply")
    assert "switch the contest to a ready run's results" in out
    assert "--lexicon" not in out  # the parent's options are not this one's


def test_the_top_level_help_names_the_environment_and_the_admin_token_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for name in ("TILEJUDGE_HOME", "TILEJUDGE_URL", "TILEJUDGE_ADMIN_TOKEN", "admin-token"):
        assert name in out


def test_the_url_and_token_helps_say_where_their_defaults_come_from(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["contest", "close", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "$TILEJUDGE_URL" in out and "$TILEJUDGE_HOME/api-url" in out
    assert "$TILEJUDGE_ADMIN_TOKEN" in out and "$TILEJUDGE_HOME/admin-token" in out


def test_submit_wait_says_when_it_gives_up(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["submit", "--help"])
    assert "gives up after 120 s" in " ".join(capsys.readouterr().out.split())
