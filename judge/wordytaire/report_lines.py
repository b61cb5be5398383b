"""A report's verdict lines as JSON text: the loop that writes every line of every report, apart
so that it is compiled with the engine (mypyc, `setup.py`); where it is not, the same source runs
as Python and writes the same bytes."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

# A Verdict's fields (`report.Verdict`), typed here as the plain tuple it is, so that this module
# needs nothing of `report` (which imports it).
Line = tuple[int, Any, int, int, str]


def json_lines(verdicts: Sequence[Line], start: int, stop: int, separator: str) -> str:
    """Verdicts `start` to `stop` as SPEC's line objects, joined by `separator`."""
    lines: list[str] = []
    append = lines.append
    # A detail is shared by many lines (the engine keeps one string per distinct sentence):
    # each is quoted once.
    quoted: dict[str, str] = {}
    for index in range(start, min(stop, len(verdicts))):
        line, reason, score, tiles, detail = verdicts[index]
        if reason is None:
            append(f'{{"line":{line},"ok":true,"score":{score},"tiles":{tiles}}}')
        else:
            code: str = reason.value
            text = quoted.get(detail)
            if text is None:
                text = quoted[detail] = json.dumps(detail)
            append(f'{{"line":{line},"ok":false,"reason":"{code}","detail":{text}}}')
    return separator.join(lines)
