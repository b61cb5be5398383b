"""The organiser's and the contestant's commands against the real API in-process: contests,
teams, the results export and a submission's report, with no curl."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from core.contests import token_hash
from devstack.testing.pipeline import ADMIN_TOKEN, TINY_WORDS, Pipeline, drain, open_pipeline
from infra import api_client

URL = "http://testserver"
MIXED = b"0 0 2 0 dog\n0 0 2 0 cat\n5 5 6 5 at\nnonsense\n"


@pytest.fixture
def pipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Pipeline]:
    """The API in-process, every command's client routed to it."""
    with open_pipeline(tmp_path) as pipeline:
        pipeline.add_lexicon()
        real_connect = api_client.connect

        def connect(*args: Any, **kwargs: Any) -> api_client.Client:
            return real_connect(*args, **(kwargs | {"transport": pipeline.client._transport}))

        monkeypatch.setattr(api_client, "connect", connect)
        yield pipeline


def run(
    capsys: pytest.CaptureFixture[str], *argv: str, token: str | None = ADMIN_TOKEN
) -> tuple[int, str, str]:
    """`tilejudge ARGV --url URL`: exit status, stdout, stderr."""
    environ = {"TILEJUDGE_HOME": "/nonexistent"}
    if token is not None:
        environ["TILEJUDGE_ADMIN_TOKEN"] = token
    code = main([*argv, "--url", URL], environ=environ)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def create_demo(capsys: pytest.CaptureFixture[str], contest: str = "demo") -> None:
    code, _, err = run(
        capsys, "contest", "create", contest, "--title", "Demo", "--lexicon", "tiny",
        "--opens", "2020-01-01T00:00:00Z", "--closes", "2099-12-24T18:00:00Z",
    )  # fmt: skip
    assert code == 0, err


def add_team(capsys: pytest.CaptureFixture[str], name: str, contest: str = "demo") -> str:
    code, out, err = run(capsys, "team", "add", name, "--contest", contest)
    assert code == 0, err
    return out.strip()


def test_a_contest_is_created_shown_listed_and_closed_from_the_command_line(
    pipe: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    create_demo(capsys)
    code, shown, _ = run(capsys, "contest", "show", "demo", token=None)  # public: no token
    assert code == 0
    fields = dict(line.split(None, 1) for line in shown.splitlines())
    assert fields["title"] == "Demo"
    assert fields["status"] == "open"
    assert fields["closes_at"] == "2099-12-24T18:00:00.000000Z"
    found = pipe.store.find_lexicon("tiny")
    assert found is not None and fields["lexicon"] == found.id

    code, listed, _ = run(capsys, "contest", "list")
    assert code == 0
    assert listed.splitlines()[0].split() == [
        "id",
        "status",
        "freeze",
        "opens_at",
        "closes_at",
        "title",
    ]
    assert listed.splitlines()[1].split()[:2] == ["demo", "open"]

    code, said, _ = run(capsys, "contest", "close", "demo")
    assert code == 0
    assert said.startswith("contest demo closed at ")
    closed = pipe.store.get_contest("demo")
    assert closed is not None and closed.closes_at < "2099"
    code, said, _ = run(capsys, "contest", "close", "demo")
    assert (code, said.startswith("contest demo had closed already")) == (0, True)


def test_a_contest_freezes_an_hour_before_its_close_and_is_thawed_from_the_command_line(
    pipe: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    code, created, err = run(
        capsys, "contest", "create", "demo", "--title", "Demo", "--lexicon", "tiny",
        "--opens", "2020-01-01T00:00:00Z", "--closes", "2099-12-24T18:00:00Z", "--freeze", "1h",
    )  # fmt: skip
    assert code == 0, err
    assert "2099-12-24T17:00:00.000000Z (not yet frozen)" in created
    contest = pipe.store.get_contest("demo")
    assert contest is not None and contest.freeze_at == "2099-12-24T17:00:00.000000Z"

    code, said, _ = run(capsys, "contest", "thaw", "demo")
    assert (code, said.startswith("contest demo thawed at ")) == (0, True)
    code, said, _ = run(capsys, "contest", "thaw", "demo")
    assert (code, said.startswith("contest demo had been thawed already")) == (0, True)
    code, shown, _ = run(capsys, "contest", "show", "demo", token=None)
    fields = dict(line.split(None, 1) for line in shown.splitlines())
    assert fields["freeze"].startswith("2099-12-24T17:00:00.000000Z (thawed at ")
    code, listed, _ = run(capsys, "contest", "list")
    assert listed.splitlines()[1].split()[:3] == ["demo", "open", "thawed"]

    code, _, err = run(
        capsys, "contest", "create", "ice", "--title", "Ice", "--lexicon", "tiny",
        "--opens", "2020-01-01T00:00:00Z", "--closes", "2099-12-24T18:00:00Z",
        "--freeze", "2020-06-01T00:00:00Z",
    )  # fmt: skip
    assert code == 0, err
    code, board, _ = run(capsys, "leaderboard", "--contest", "ice", token=None)
    assert code == 0 and "frozen: 0 uploads received since the freeze are pending" in board


@pytest.mark.parametrize(
    ("when", "message"),
    [
        ("90x", "--freeze: "),
        ("2000-01-01T00:00:00Z", "--freeze must fall from --opens to --closes"),
    ],
)
def test_a_bad_freeze_is_refused_before_anything_is_sent(
    pipe: Pipeline, capsys: pytest.CaptureFixture[str], when: str, message: str
) -> None:
    code, _, err = run(
        capsys, "contest", "create", "demo", "--title", "Demo", "--lexicon", "tiny",
        "--opens", "2020-01-01T00:00:00Z", "--closes", "2099-12-24T18:00:00Z", "--freeze", when,
    )  # fmt: skip
    assert code == 2 and message in err
    assert pipe.store.get_contest("demo") is None


@pytest.mark.parametrize(
    ("opens", "closes", "message"),
    [
        (
            "2026-12-24 18:00",
            "2099-01-01T00:00:00Z",
            "--opens: '2026-12-24 18:00' has no time zone",
        ),
        ("2026-12-24T18:00:00Z", "tomorrow", "--closes: Invalid isoformat string"),
        ("2026-12-24T18:00:00Z", "2026-12-24T17:00:00Z", "--closes must be after --opens"),
    ],
)
def test_a_bad_time_is_refused_before_anything_is_sent(
    pipe: Pipeline, capsys: pytest.CaptureFixture[str], opens: str, closes: str, message: str
) -> None:
    code, _, err = run(
        capsys, "contest", "create", "demo", "--title", "Demo", "--lexicon", "tiny",
        "--opens", opens, "--closes", closes,
    )  # fmt: skip
    assert code == 2
    assert message in err
    assert pipe.store.get_contest("demo") is None


def test_a_refusal_from_the_server_is_one_line_and_exit_2(
    pipe: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    create_demo(capsys)
    code, _, err = run(
        capsys, "contest", "create", "demo", "--title", "Again", "--lexicon", "tiny",
        "--opens", "2020-01-01T00:00:00Z", "--closes", "2099-01-01T00:00:00Z",
    )  # fmt: skip
    assert code == 2
    assert err == "tilejudge: HTTP 409 conflict: contest 'demo' exists already\n"
    code, _, err = run(capsys, "contest", "close", "demo", token="not-the-admin-token")
    assert code == 2
    assert "HTTP 401" in err


def test_team_add_prints_the_token_alone_on_stdout_and_warns_to_keep_it(
    pipe: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    create_demo(capsys)
    code, out, err = run(capsys, "team", "add", "ravens", "--contest", "demo")

    assert code == 0
    token = out.strip()
    assert out == token + "\n" and token.startswith("tj_")
    assert "cannot show it again" in err and "ravens" in err
    team = pipe.store.team_by_token_hash(token_hash(token))
    assert team is not None and team.name == "ravens"


def test_team_list_and_delete_by_id(pipe: Pipeline, capsys: pytest.CaptureFixture[str]) -> None:
    create_demo(capsys)
    add_team(capsys, "ravens")
    add_team(capsys, "owls")

    code, listed, _ = run(capsys, "team", "list", "--contest", "demo")
    assert code == 0
    rows = [line.split() for line in listed.splitlines()]
    assert rows[0] == ["id", "name"]
    ids = {name: team_id for team_id, name in rows[1:]}
    assert set(ids) == {"ravens", "owls"}

    code, said, _ = run(capsys, "team", "delete", ids["owls"])
    assert code == 0
    assert said.startswith(f"deleted team {ids['owls']}")
    assert set(pipe.store.team_names("demo").values()) == {"ravens"}

    code, _, err = run(capsys, "team", "delete")
    assert code == 2
    assert "team delete needs the team's id" in err


def test_results_export_writes_every_submission_as_csv_or_json_lines(
    pipe: Pipeline, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    create_demo(capsys)
    tokens = {name: add_team(capsys, name) for name in ("ravens", "owls")}
    ids = [
        submit(pipe, tokens["ravens"], MIXED),
        submit(pipe, tokens["owls"], b"0 0 2 0 cat\n"),
    ]
    drain(pipe.services)
    ids.append(submit(pipe, tokens["ravens"], b"0 0 1 0 at\n"))  # not judged yet

    code, out, err = run(capsys, "results", "export", "--contest", "demo", "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [row["submission"] for row in rows] == sorted(ids)
    by_id = {row["submission"]: row for row in rows}
    assert (by_id[ids[0]]["team"], by_id[ids[0]]["score"], by_id[ids[0]]["illegal"]) == (
        "ravens", "9", "3",
    )  # fmt: skip
    assert (by_id[ids[2]]["state"], by_id[ids[2]]["score"]) == ("queued", "")
    assert "exported 3 submissions of demo to stdout" in err

    target = tmp_path / "results.jsonl"
    code, out, _ = run(
        capsys, "results", "export", "--contest", "demo", "--format", "jsonl",
        "--output", str(target),
    )  # fmt: skip
    assert (code, out) == (0, "")
    lines = [json.loads(line) for line in target.read_text().splitlines()]
    assert [line["submission"] for line in lines] == sorted(ids)
    assert {line["submission"]: line["score"] for line in lines}[ids[2]] is None
    assert list(lines[0]) == [
        "submission", "team", "team_id", "state", "score", "legal", "illegal", "received_at",
        "judged_at", "lexicon", "layout",
    ]  # fmt: skip
    assert not target.with_name("results.jsonl.part").exists()


def test_an_export_of_an_unknown_contest_leaves_no_file(
    pipe: Pipeline, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "out.csv"
    code, _, err = run(
        capsys, "results", "export", "--contest", "nope", "--format", "csv",
        "--output", str(target),
    )  # fmt: skip
    assert code == 2
    assert "HTTP 404" in err
    assert list(tmp_path.glob("out.csv*")) == []


@pytest.mark.parametrize("form", ["csv", "jsonl"])
def test_an_export_of_an_unknown_contest_writes_nothing_before_the_error(
    pipe: Pipeline, capsys: pytest.CaptureFixture[str], form: str
) -> None:
    code, out, err = run(capsys, "results", "export", "--contest", "nope", "--format", form)
    assert (code, out) == (2, "")
    assert err.startswith("tilejudge: HTTP 404")


def submit(pipe: Pipeline, token: str, data: bytes) -> str:
    """An upload as the team whose token is given; its submission's id."""
    response = pipe.client.post(
        "/v1/contests/demo/submissions", content=data,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "text/plain"},
    )  # fmt: skip
    assert response.status_code == 202, response.text
    pipe.settle(response.json()["id"])
    return str(response.json()["id"])


def test_report_prints_what_the_offline_judge_prints(
    pipe: Pipeline, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    create_demo(capsys)
    token = add_team(capsys, "ravens")
    submission = submit(pipe, token, MIXED)
    drain(pipe.services)
    moves = tmp_path / "moves.txt"
    moves.write_bytes(MIXED)
    words = tmp_path / "tiny.txt"
    words.write_text("".join(word + "\n" for word in TINY_WORDS))
    assert main(["judge", str(moves), "--lexicon", str(words)]) == 0
    offline = capsys.readouterr().out.splitlines()

    code, quoted, _ = run(capsys, "report", submission, "--file", str(moves), token=token)
    assert code == 0
    assert quoted.splitlines() == [f"{submission}:{offline[0].split(':', 1)[1]}", *offline[1:]]

    code, plain, _ = run(capsys, "report", submission, token=token)
    assert code == 0
    unquoted = [re.sub(r"^(  line \d+: )'[^']*': ", r"\1", line) for line in quoted.splitlines()]
    assert plain.splitlines() == unquoted  # without the file there is nothing to quote
    assert unquoted != quoted.splitlines()

    code, raw, _ = run(capsys, "report", submission, "--json", token=token)
    assert code == 0
    report = json.loads(raw)
    assert (report["total"], report["legal"], report["illegal"]) == (9, 1, 3)


def test_report_runs_prints_each_run_of_lines_that_fail_alike_once(
    pipe: Pipeline, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    create_demo(capsys)
    token = add_team(capsys, "ravens")
    data = b"0 0 2 0 cat\nnonsense\nnonsense\n\nnonsense\n0 0 0 2 zzz\nfoo\n"
    submission = submit(pipe, token, data)
    drain(pipe.services)
    code, each, _ = run(capsys, "report", submission, token=token)
    assert code == 0

    code, folded, _ = run(capsys, "report", "--runs", submission, token=token)

    assert code == 0
    malformed = "a move has 5 fields (x1 y1 x2 y2 word); this line has 1 [malformed]"
    assert folded.splitlines()[:4] == each.splitlines()[:4]  # the same totals and counts
    assert folded.splitlines()[4:] == [
        f"  lines 2-5 (3 lines): {malformed}",
        "  line 6: 'zzz' is not in the lexicon [not_in_dictionary]",
        f"  line 7: {malformed}",
    ]
    assert each.count(malformed) == 4

    code, raw, _ = run(capsys, "report", "--runs", "--json", submission, token=token)
    assert code == 0
    first = json.loads(raw)["lines"][1]
    assert (first["line"], first["through"], first["count"]) == (2, 5, 3)


def test_report_refuses_a_file_that_is_not_the_upload_and_another_teams_submission(
    pipe: Pipeline, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    create_demo(capsys)
    ravens, owls = add_team(capsys, "ravens"), add_team(capsys, "owls")
    submission = submit(pipe, ravens, MIXED)
    drain(pipe.services)
    other = tmp_path / "other.txt"
    other.write_bytes(b"0 0 2 0 cat\n")

    code, _, err = run(capsys, "report", submission, "--file", str(other), token=ravens)
    assert code == 2
    assert f"is not what submission {submission} uploaded" in err

    code, _, err = run(capsys, "report", submission, token=owls)
    assert code == 2
    assert "HTTP 404" in err


def test_rejudge_apply_reaches_the_run_named(
    pipe: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "rejudge", "apply", "run-123")
    assert code == 2
    assert err.startswith("tilejudge: HTTP ")
    assert err.endswith(": no rejudge run 'run-123'\n")  # the server was asked about that run
    code, _, err = run(capsys, "rejudge", "--contest", "demo", "apply", "run-123")
    assert code == 2
    assert "rejudge apply takes only RUN_ID" in err
