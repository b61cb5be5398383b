"""The checks the fault and cluster suites make of a contest's transparency log after a fault,
whatever database they read it from."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from core import transparency


def entry_problems(rows: Sequence[tuple[Any, Any]], scores: Iterable[tuple[Any, Any]]) -> list[str]:
    """What is wrong, one line each: the log's (leaf, entry) rows must be numbered without gap
    or repeat and hold one upload entry and one verdict entry, with the result's score, for
    each (submission id, score) of a result under the live ruleset."""
    problems = []
    if [int(leaf) for leaf, _ in rows] != list(range(len(rows))):
        problems.append(f"the log's {len(rows)} leaves are not numbered 0..{len(rows) - 1}")
    kinds: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for _, entry in rows:
        fields = transparency.decode(bytes(entry))
        kinds.setdefault((fields["type"], fields.get("submission", "")), []).append(fields)
    for sid, score in scores:
        uploads, verdicts = kinds.get(("upload", sid), []), kinds.get(("verdict", sid), [])
        if len(uploads) != 1 or [v["result"]["score"] for v in verdicts] != [score]:
            problems.append(
                f"submission {sid}: {len(uploads)} upload entries, verdict entries "
                f"{[v['result']['score'] for v in verdicts]}, result {score}"
            )
    return problems
