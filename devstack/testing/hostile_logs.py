"""Hostile uploads to a game-log contest (5 MB of garbage, NULs, invalid UTF-8, one enormous
line, pragma, rack or word...), each made when asked for (5 MB apiece): the identity test
counts the work a log's identity does on each, `benchmarks.crosstiles_identity` times it."""

from __future__ import annotations

import random
from collections.abc import Callable

FIVE_MB = 5_000_000
HEAD = b"#crosstiles 1\n#seed s\n#player1 ann\n#player2 bob\n"
HOSTILE: dict[str, Callable[[], bytes]] = {
    "empty": lambda: b"",
    "random garbage": lambda: random.Random(0).randbytes(FIVE_MB),
    "invalid UTF-8": lambda: b"\xff\xfe\xc3(" * (FIVE_MB // 4),
    "NULs": lambda: b"\x00" * FIVE_MB,
    "one 5 MB line": lambda: b"x" * FIVE_MB,
    "one 5 MB line of spaces and tabs": lambda: b" \t" * (FIVE_MB // 2),
    "one 5 MB rack": lambda: HEAD + b">ann: " + b"A" * FIVE_MB + b" 8H AB +1 1",
    "one 5 MB word": lambda: HEAD + b">ann: A 8H " + b"a" * FIVE_MB + b" +1 1",
    "one 5 MB pragma": lambda: b"#crosstiles 1\n#seed " + b"s" * FIVE_MB,
    "one 5 MB note": lambda: b"#note " + random.Random(1).randbytes(FIVE_MB),
    "one 5 MB line of fields": lambda: b">ann: " + b"A " * (FIVE_MB // 2),
    "1 MB of short lines": lambda: b"x\n" * 500_000,
}
