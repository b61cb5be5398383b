"""The header of a Crosstiles log: its pragmas, taken one line at a time (CROSSTILES.md)."""

from __future__ import annotations

import re
from typing import Final

NICK: Final = re.compile(r"[A-Za-z0-9_-]{1,32}")
_SEED: Final = re.compile(r"[!-~]{1,128}")  # printable ASCII, no space
_PLAYER: Final = re.compile(r"player([0-9]+)")
_FIELDS: Final = re.compile(r"[ \t]+")
_PLAYER_NUMBERS: Final = ("1", "2", "3", "4")


class Header:
    """The pragmas seen so far: the seed and the players' nicks by number."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.seed = ""
        self.nicks: dict[int, str] = {}

    def add(self, text: str) -> str:
        """Take one pragma line (stripped of blanks, starting with '#'): "" when it is well
        formed, else what is wrong with it."""
        fields = _FIELDS.split(text)
        name = fields[0][1:]
        if not self.seen:
            if name != "crosstiles":
                return "a log starts with the pragma '#crosstiles 1'"
            if fields[1:] != ["1"]:
                return "the only dialect version is '#crosstiles 1'"
        elif name in self.seen:
            return f"'#{name}' is given a second time"
        elif not name:
            return "a pragma is '#name value'; this one has no name"
        elif len(fields) < 2:
            return f"'#{name}' has no value"
        elif name == "seed":
            if len(fields) != 2 or _SEED.fullmatch(fields[1]) is None:
                return "a seed is 1 to 128 printable ASCII characters without spaces"
            self.seed = fields[1]
        else:
            player = _PLAYER.fullmatch(name)
            if player is not None:
                problem = self._player(player.group(1), fields[1])
                if problem:
                    return problem
        self.seen.add(name)
        return ""

    def _player(self, number: str, nick: str) -> str:
        if number not in _PLAYER_NUMBERS:
            return f"'#player{number}': the players are #player1 to #player4"
        if NICK.fullmatch(nick) is None:
            return f"the nick {_show(nick)} is not 1 to 32 of A-Z a-z 0-9 _ -"
        if nick in self.nicks.values():
            return f"the nick {_show(nick)} is taken by another player"
        self.nicks[int(number)] = nick
        return ""

    def missing(self) -> str:
        """Why the header is not complete yet, or "" when it is."""
        if "crosstiles" not in self.seen:
            return "a log starts with the pragma '#crosstiles 1'"
        if "seed" not in self.seen:
            return "the header has no '#seed'"
        numbers = sorted(self.nicks)
        if numbers != list(range(1, len(numbers) + 1)):
            given = ", ".join(f"#player{number}" for number in numbers)
            return f"the players are numbered from 1 without gaps; the header gives {given}"
        if len(numbers) < 2:
            return "a game has two to four players; the header names fewer than two"
        return ""

    def players(self) -> list[str]:
        return [self.nicks[number] for number in sorted(self.nicks)]


def _show(text: str) -> str:
    shown = repr(text[:40])
    return shown if len(text) <= 40 else shown + "..."
