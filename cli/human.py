"""A judge's report as people read it: the total, counts by reason and each illegal line
explained; the same for a report judged offline and one the server sent as SPEC JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TextIO

from judge.wordytaire import Report
from judge.wordytaire.report import Reason, Verdict


def print_human(name: str, data: bytes | None, report: Report, out: TextIO) -> None:
    """`report` on `out`, headed by `name`; each illegal line quoted from `data`, the bytes
    judged, when they are at hand."""
    legal, illegal = report.legal, report.illegal
    out.write(f"{name}: {report.total} points from {legal} legal moves, {illegal} illegal\n")
    out.write(
        f"  tiles placed {report.tiles_placed}, left in the bag {sum(report.bag_left.values())}\n"
    )
    for reason, count in report.reasons().items():
        out.write(f"  {reason}: {count}\n")
    texts = data.removeprefix(b"\xef\xbb\xbf").split(b"\n") if data is not None else []
    for verdict in report.illegal_verdicts():
        quoted = ""
        if verdict.line <= len(texts):
            text = texts[verdict.line - 1].removesuffix(b"\r").decode("utf-8", "replace")
            shown = text if len(text) <= 60 else text[:57] + "..."
            quoted = f"{shown!r}: "
        out.write(f"  line {verdict.line}: {quoted}{verdict.detail} [{verdict.reason}]\n")


def report_from_json(body: Mapping[str, Any]) -> Report:
    """The Report behind a SPEC JSON report (`Report.to_json`); ValueError if it is not one."""
    try:
        verdicts = tuple(
            Verdict(
                line=int(line["line"]),
                reason=None if line["ok"] else Reason(line["reason"]),
                score=int(line.get("score", 0)),
                tiles=int(line.get("tiles", 0)),
                detail=str(line.get("detail", "")),
            )
            for line in body["lines"]
        )
        return Report(
            lexicon=str(body["lexicon"]),
            layout=str(body["layout"]),
            verdicts=verdicts,
            total=int(body["total"]),
            tiles_placed=int(body.get("tiles_placed", 0)),
            bag_left={str(k): int(v) for k, v in dict(body.get("bag_left", {})).items()},
            words=frozenset(str(word) for word in body.get("words", ())),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"not a judge's report: {exc!r}") from exc
