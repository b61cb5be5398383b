"""A report the server folded (`?lines=runs`, `tilejudge report --runs`) is printed as the
offline judge prints one, each run of lines that fail alike on one line counted as the lines it
stands for; a report that is not folded prints as before."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from cli import results
from cli.games import cli_game
from cli.options import CliError
from core.report_blobs import runs
from infra.api_client import Answer
from judge import Lexicon
from judge.wordytaire import default_layout
from judge.wordytaire import judge as judge_moves

DATA = b"0 0 2 0 cat\nnonsense\nnonsense\n\nnonsense\n0 0 0 2 zzz\nnonsense\n"


def server_report(folded: bool) -> dict[str, Any]:
    """The report of DATA as the API sends it, folded by the API's own `runs`."""
    report = judge_moves(DATA, Lexicon.from_words({"cat", "at"}), default_layout())
    pieces = list(report.json_chunks({"submission": "s1"}, one_per_line=True))
    body = b"".join(runs(pieces) if folded else pieces)
    parsed: dict[str, Any] = json.loads(body)
    return parsed


def printed(report: dict[str, Any], data: bytes | None = None) -> list[str]:
    out = io.StringIO()
    cli_game("wordytaire").print_report("s1", data, report, out)
    return out.getvalue().splitlines()


def test_a_folded_report_keeps_the_totals_and_prints_each_run_once() -> None:
    each, folded = printed(server_report(False)), printed(server_report(True))

    assert (
        folded[:4]
        == each[:4]
        == [
            "s1: 9 points from 1 legal moves, 5 illegal",
            folded[1],
            "  malformed: 4",
            "  not_in_dictionary: 1",
        ]
    )
    assert [line.split(":")[0] for line in folded[4:]] == [
        "  lines 2-5 (3 lines)",
        "  line 6",
        "  line 7",
    ]
    assert len(each) == len(folded) + 2


def test_a_run_quotes_its_first_line_when_the_upload_is_at_hand() -> None:
    folded = printed(server_report(True), DATA)
    assert folded[4] == (
        "  lines 2-5 (3 lines): 'nonsense': a move has 5 fields (x1 y1 x2 y2 word); this line "
        "has 1 [malformed]"
    )


def test_a_run_without_its_last_line_is_refused_as_not_a_report() -> None:
    report = server_report(True)
    del report["lines"][1]["through"]
    with pytest.raises(CliError, match="not a judge's report"):
        printed(report)


class Answers:
    """A client whose answers are given in turn; the paths asked."""

    def __init__(self, *answers: Answer) -> None:
        self.answers, self.asked = list(answers), list[str]()

    def request(self, method: str, path: str, **options: Any) -> Answer:
        self.asked.append(path)
        return self.answers.pop(0)


PENDING = Answer(202, "Accepted", {"retry-after": "2"}, b'{"error":"report_pending"}')


def test_a_report_being_made_is_asked_for_again_after_each_retry_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    waits: list[float] = []
    monkeypatch.setattr(results.time, "sleep", waits.append)
    made = Answer(200, "OK", {}, b'{"total": 1}')
    limited = Answer(429, "Too Many Requests", {"retry-after": "7"}, b'{"error":"rate_limited"}')
    api = Answers(PENDING, PENDING, limited, made)

    answer = results._made_report(api, "/v1/submissions/s1/report", None)  # type: ignore[arg-type]

    assert answer is made and waits == [2.0, 2.0, 7.0]
    assert api.asked == ["/v1/submissions/s1/report"] * 4


def test_a_report_still_being_made_after_the_longest_wait_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    waits: list[float] = []
    monkeypatch.setattr(results.time, "sleep", waits.append)
    api = Answers(*[PENDING] * 100)

    with pytest.raises(CliError, match="still being made after 120 s"):
        results._made_report(api, "/v1/submissions/s1/report", None)  # type: ignore[arg-type]

    assert sum(waits) == results.REPORT_WAIT_S
