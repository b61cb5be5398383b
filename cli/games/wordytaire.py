"""Wordytaire on the command line: `judge` (each move list's report, for people or as JSON
Lines), `generate` (a bot's move list), and a report as people read it: the total, counts by
reason and each illegal line explained, the same for a report judged offline and one the server
sent as SPEC JSON (with `?lines=runs`, each run of lines that fail alike as one entry). Its
standings and rejudge previews are teams ranked by score (`cli.games.TeamRanked`)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from cli.games import GameCli, Option, TeamRanked, collector_paused
from cli.options import CliError, read_input
from infra import lexicon_files
from infra.settings import ClientSettings
from judge import Lexicon
from judge.wordytaire import Layout, Report, default_layout
from judge.wordytaire import judge as judge_moves
from judge.wordytaire.generator import WordIndex
from judge.wordytaire.generator import generate as generate_moves
from judge.wordytaire.report import Reason, Verdict

LAYOUT = Option(
    "--layout",
    "Wordytaire's bonus layout JSON file (default: the SPEC layout)",
    metavar="FILE",
)
MOVES = Option("--moves", "Wordytaire (required): at most this many move lines", type=int)
ILLEGAL_SHARE = Option(
    "--illegal-share", "Wordytaire: share of illegal lines, 0 to 1 (default: 0)", type=float
)


@dataclass(frozen=True)
class Span:
    """Consecutive illegal lines that fail alike, folded into the first one's verdict (the
    API's `?lines=runs`): the last one's line and how many they are."""

    through: int
    size: int


class Wordytaire(TeamRanked):
    rules_options = (LAYOUT,)
    bot_options = (MOVES, ILLEGAL_SHARE)

    def __init__(self) -> None:
        super().__init__("wordytaire")

    def judge(
        self,
        files: Sequence[tuple[str, bytes]],
        args: argparse.Namespace,
        environ: Mapping[str, str],
        out: TextIO,
    ) -> int:
        lexicon, layout = load_rules(args.lexicon, args.layout, environ)
        with collector_paused():
            for name, data in files:
                report = judge_moves(data, lexicon, layout)
                if args.json:  # written as it is serialised, the file's name its first key
                    out.buffer.writelines(report.json_chunks({"file": name}))
                    out.buffer.write(b"\n")
                else:
                    print_human(name, data, report, out)
        out.flush()
        return 0

    def generate(self, args: argparse.Namespace, environ: Mapping[str, str]) -> bytes:
        try:
            seed = int(args.seed)
        except ValueError:
            message = f"--seed must be a whole number for --game wordytaire, not {args.seed!r}"
            raise CliError(message) from None
        share = 0.0 if args.illegal_share is None else args.illegal_share
        if not 0.0 <= share <= 1.0:
            raise CliError("--illegal-share must be between 0 and 1")
        if args.moves is None:
            raise CliError("--moves is required with --game wordytaire")
        if args.moves < 0:
            raise CliError("--moves must be 0 or more")
        lexicon, layout = load_rules(args.lexicon, args.layout, environ)
        index = WordIndex.build(lexicon.words)
        return generate_moves(index, layout, seed=seed, moves=args.moves, illegal_share=share)

    def print_report(
        self, submission_id: str, data: bytes | None, report: Any, out: TextIO
    ) -> None:
        try:
            parsed, runs = report_from_json(report), runs_of(report)
        except ValueError as exc:
            raise CliError(f"the server's report of {submission_id}: {exc}") from exc
        print_human(submission_id, data, parsed, out, runs)


def load_rules(
    lexicon_path: str | None, layout_path: str | None, environ: Mapping[str, str]
) -> tuple[Lexicon, Layout]:
    """The word list (--lexicon, else $TILEJUDGE_LEXICON, else the cache's) and the layout
    (--layout, else the SPEC one)."""
    settings = ClientSettings.from_env(environ)
    lexicon = lexicon_files.load(lexicon_files.resolve(lexicon_path, settings))
    layout = Layout.from_json(read_input(layout_path)) if layout_path else default_layout()
    return lexicon, layout


def print_human(
    name: str,
    data: bytes | None,
    report: Report,
    out: TextIO,
    runs: Mapping[int, Span] | None = None,
) -> None:
    """`report` on `out`, headed by `name`; each illegal line quoted from `data`, the bytes
    judged, when they are at hand. `runs`: the folded runs among its verdicts, by first line
    (a report sent with `?lines=runs`), each counted as the lines it stands for."""
    runs = runs or {}
    illegal, reasons = report.illegal, report.reasons()
    if runs:
        illegal, reasons = _unfolded_counts(report, runs)
    out.write(f"{name}: {report.total} points from {report.legal} legal moves, {illegal} illegal\n")
    out.write(
        f"  tiles placed {report.tiles_placed}, left in the bag {sum(report.bag_left.values())}\n"
    )
    for reason, count in reasons.items():
        out.write(f"  {reason}: {count}\n")
    texts = data.removeprefix(b"\xef\xbb\xbf").split(b"\n") if data is not None else []
    for verdict in report.illegal_verdicts():
        quoted = ""
        if verdict.line <= len(texts):
            text = texts[verdict.line - 1].removesuffix(b"\r").decode("utf-8", "replace")
            shown = text if len(text) <= 60 else text[:57] + "..."
            quoted = f"{shown!r}: "
        span = runs.get(verdict.line)
        where = f"line {verdict.line}"
        if span is not None:
            where = f"lines {verdict.line}-{span.through} ({span.size} lines)"
        out.write(f"  {where}: {quoted}{verdict.detail} [{verdict.reason}]\n")


def _unfolded_counts(report: Report, runs: Mapping[int, Span]) -> tuple[int, dict[str, int]]:
    """The illegal lines and the counts by reason (in SPEC's order) of a folded report, each
    run counted as the lines it stands for."""
    counts = dict.fromkeys(Reason, 0)
    for verdict in report.illegal_verdicts():
        assert verdict.reason is not None  # an illegal verdict has its reason
        span = runs.get(verdict.line)
        counts[verdict.reason] += 1 if span is None else span.size
    return sum(counts.values()), {reason.value: n for reason, n in counts.items() if n}


def runs_of(body: Mapping[str, Any]) -> dict[int, Span]:
    """The folded runs of a report the server sent with `?lines=runs`, by first line (none in
    a report sent line by line); ValueError if one is not a run."""
    try:
        return {
            int(line["line"]): Span(int(line["through"]), int(line["count"]))
            for line in body["lines"]
            if "count" in line
        }
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"not a judge's report: {exc!r}") from exc


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


CLI: GameCli = Wordytaire()
