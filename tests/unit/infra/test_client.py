"""The contestant CLI talks the HTTP contract: receipts, waiting for a result, errors, rankings.

A fake server behind httpx.MockTransport stands in for the API, so no socket is opened.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from cli import client
from cli import main as cli
from cli.client import Poll
from cli.options import Role, resolve
from infra import api_client
from infra.api_client import ApiError, Retry
from infra.settings import ClientSettings, SettingsError

TOKEN = "team-token"
RECEIPT = {
    "id": "sub-1",
    "sha256": "ab" * 32,
    "received_at": "2025-01-01T00:00:00Z",
    "receipt": "cd" * 32,
}


@dataclass
class FakeApi:
    """Answers the contest routes; each status read advances the submission one state."""

    states: list[str] = field(default_factory=lambda: ["queued", "judging", "judged"])
    leaderboard: list[dict[str, Any]] = field(default_factory=list)
    error: tuple[int, dict[str, str], dict[str, str]] | None = None
    # Replaces every answer, for failures that are not the contract's JSON errors.
    raw: Callable[[httpx.Request], httpx.Response] | None = None
    requests: list[httpx.Request] = field(default_factory=list)

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.raw is not None:
            return self.raw(request)
        if self.error is not None:
            status, body, headers = self.error
            return httpx.Response(status, json=body, headers=headers)
        path = request.url.path
        if path == "/v1/contests/demo/submissions" and request.method == "POST":
            return httpx.Response(202, json=RECEIPT)
        if path == "/v1/submissions/sub-1":
            return httpx.Response(200, json=self._status())
        if path == "/v1/contests/demo/leaderboard":
            return httpx.Response(200, json={"contest": "demo", "entries": self.leaderboard})
        return httpx.Response(404, json={"error": "not_found", "detail": f"no route {path}"})

    def _status(self) -> dict[str, Any]:
        state = self.states.pop(0) if len(self.states) > 1 else self.states[0]
        judged = state == "judged"
        return {
            "id": "sub-1",
            "state": state,
            "score": 1234 if judged else None,
            "legal": 90 if judged else None,
            "illegal": 10 if judged else None,
            "judged_at": "2025-01-01T00:00:02Z" if judged else None,
            "result": {"score": 1234, "legal": 90, "illegal": 10} if judged else None,
        }


class FakeClock:
    """Time that moves only when the client sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def poll(self, timeout: float = 120.0) -> Poll:
        return Poll(interval=0.5, timeout=timeout, sleep=self.sleep, clock=lambda: self.now)


@pytest.fixture
def api() -> FakeApi:
    return FakeApi()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def submit(api: FakeApi, clock: FakeClock, **kwargs: Any) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    options: dict[str, Any] = {
        "token": TOKEN,
        "url": "http://127.0.0.1:9",
        "wait": False,
        "environ": {},
    }
    options |= kwargs
    code = client.run_submit(
        b"0 0 0 2 cat\n",
        "demo",
        options.pop("token"),
        options.pop("url"),
        options.pop("wait"),
        out=out,
        err=err,
        poll=options.pop("poll", clock.poll()),
        transport=api.transport(),
        **options,
    )
    return code, out.getvalue(), err.getvalue()


def test_submit_prints_every_field_of_the_receipt(api: FakeApi, clock: FakeClock) -> None:
    code, out, err = submit(api, clock)
    assert code == 0
    assert err == ""
    for key, value in RECEIPT.items():
        assert f"{key:<12}{value}" in out.splitlines()
    assert len(api.requests) == 1  # no polling without --wait


def test_submit_sends_the_raw_bytes_as_text_with_the_team_token(
    api: FakeApi, clock: FakeClock
) -> None:
    submit(api, clock)
    (request,) = api.requests
    assert request.method == "POST"
    assert request.url == "http://127.0.0.1:9/v1/contests/demo/submissions"
    assert request.content == b"0 0 0 2 cat\n"
    assert request.headers["Content-Type"] == "text/plain"
    assert request.headers["Authorization"] == f"Bearer {TOKEN}"


def test_wait_polls_every_half_second_until_judged_and_prints_the_score(
    api: FakeApi, clock: FakeClock
) -> None:
    code, out, _ = submit(api, clock, wait=True)
    assert code == 0
    polls = [r for r in api.requests if r.url.path == "/v1/submissions/sub-1"]
    assert len(polls) == 3  # queued, judging, judged
    assert all(r.headers["Authorization"] == f"Bearer {TOKEN}" for r in polls)
    assert clock.sleeps == [0.5, 0.5]
    lines = out.splitlines()
    assert {"state       judged", "score       1234", "legal       90", "illegal     10"} <= set(
        lines
    )
    assert lines.index("state       judged") > lines.index(f"id          {RECEIPT['id']}")


def test_a_game_logs_result_is_printed_in_its_own_fields_without_python_none() -> None:
    status = {
        "state": "judged",
        "score": None,
        "legal": None,
        "illegal": None,
        "judged_at": "2025-01-01T00:00:02Z",
        "result": {
            "valid": False,
            "turns": 18,
            "winning_score": None,
            "winners": [],
            "error": {"line": 18, "reason": "not_in_dictionary", "detail": "'twire'"},
        },
    }
    printed = client.format_result(status)
    assert "None" not in printed
    assert printed.splitlines() == [
        "state         judged",
        "valid         no",
        "turns         18",
        "winning_score -",
        "winners       -",
        "error         line 18; reason not_in_dictionary; detail 'twire'",
        "judged_at     2025-01-01T00:00:02Z",
    ]


def test_wait_gives_up_after_the_timeout_with_exit_1(api: FakeApi, clock: FakeClock) -> None:
    api.states = ["queued"]
    code, out, err = submit(api, clock, wait=True, poll=clock.poll(timeout=3.0))
    assert code == 1
    assert sum(clock.sleeps) == pytest.approx(3.0)
    assert "state       queued" in out.splitlines()
    assert "no result within 3 s" in err


def test_a_failed_submission_is_shown_with_exit_1(api: FakeApi, clock: FakeClock) -> None:
    api.states = ["failed"]
    code, out, _ = submit(api, clock, wait=True)
    assert code == 1
    assert "state       failed" in out.splitlines()


def test_a_server_error_is_printed_as_sent_and_exits_2(api: FakeApi, clock: FakeClock) -> None:
    api.error = (403, {"error": "contest_closed", "detail": "closed at 2025-01-01T00:00:00Z"}, {})
    code, out, err = submit(api, clock)
    assert code == 2
    assert out == ""
    assert err == "tilejudge: HTTP 403 contest_closed: closed at 2025-01-01T00:00:00Z\n"


def test_a_rate_limited_upload_is_sent_again_after_retry_after_then_given_up(
    api: FakeApi, clock: FakeClock
) -> None:
    api.error = (429, {"error": "rate_limited", "detail": "too many uploads"}, {"Retry-After": "7"})
    code, _, err = submit(api, clock)
    assert code == 2
    assert len(api.requests) == client.SUBMIT_ATTEMPTS
    assert clock.sleeps == [7, 7, 7, 7]
    lines = err.splitlines()
    assert lines[0] == (
        "tilejudge: HTTP 429 rate_limited: too many uploads (retry after 7 s); "
        "sending again in 7 s (2 of 5)"
    )
    assert lines[-1] == "tilejudge: HTTP 429 rate_limited: too many uploads (retry after 7 s)"


def test_an_upload_without_an_answer_or_with_a_busy_server_is_sent_again_until_accepted(
    api: FakeApi, clock: FakeClock
) -> None:
    failures: list[Callable[[httpx.Request], httpx.Response]] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadError("connection reset", request=request)

    def busy(request: httpx.Request) -> httpx.Response:
        body = {"error": "unavailable", "detail": "storage down"}
        return httpx.Response(503, json=body, headers={"Retry-After": "60"})

    failures += [refuse, busy, refuse]

    def answer(request: httpx.Request) -> httpx.Response:
        return failures.pop(0)(request) if failures else httpx.Response(202, json=RECEIPT)

    api.raw = answer
    code, out, err = submit(api, clock)

    assert code == 0
    assert "id          sub-1" in out.splitlines()
    assert len(api.requests) == 4
    assert clock.sleeps == [0.5, 10, 2]  # doubling, but Retry-After (capped at 10 s) wins
    assert [line.rsplit("(", 1)[-1] for line in err.splitlines()] == [
        "2 of 5)",
        "3 of 5)",
        "4 of 5)",
    ]


def test_a_refused_upload_is_not_sent_again(api: FakeApi, clock: FakeClock) -> None:
    api.error = (401, {"error": "unauthorized", "detail": "unknown token"}, {})
    code, _, err = submit(api, clock)
    assert code == 2
    assert len(api.requests) == 1
    assert err == "tilejudge: HTTP 401 unauthorized: unknown token\n"


def test_an_answer_that_is_not_json_is_still_reported_plainly(
    api: FakeApi, clock: FakeClock
) -> None:
    api.raw = lambda _: httpx.Response(502, text="Bad Gateway from proxy")
    code, _, err = submit(api, clock, attempts=1)
    assert code == 2
    assert err == "tilejudge: HTTP 502 Bad Gateway from proxy\n"


def test_an_unreachable_server_exits_2_naming_the_url(api: FakeApi, clock: FakeClock) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("Connection refused", request=request)

    api.raw = refuse
    code, _, err = submit(api, clock)
    assert code == 2
    assert "cannot reach http://127.0.0.1:9" in err
    assert "Connection refused" in err
    assert err.splitlines()[-1] == (
        "tilejudge: http://127.0.0.1:9 is from --url: start the stack there, or leave --url out "
        "to use the local one, which `make run` (or `tilejudge up`) starts"
    )


def test_without_a_token_nothing_is_sent_and_the_exit_is_2(api: FakeApi, clock: FakeClock) -> None:
    code, _, err = submit(api, clock, token=None, environ={})
    assert code == 2
    assert "TILEJUDGE_TOKEN" in err
    assert api.requests == []


def test_token_and_url_default_to_the_environment(api: FakeApi, clock: FakeClock) -> None:
    environ = {"TILEJUDGE_TOKEN": "from-env", "TILEJUDGE_URL": "http://127.0.0.1:7777/"}
    code, _, _ = submit(api, clock, token=None, url=None, environ=environ)
    assert code == 0
    (request,) = api.requests
    assert request.headers["Authorization"] == "Bearer from-env"
    assert str(request.url).startswith("http://127.0.0.1:7777/v1/")


def test_the_url_defaults_to_the_local_api_on_port_8000(
    api: FakeApi, clock: FakeClock, tmp_path: Path
) -> None:
    # A home of its own: a stack running in the working directory would be found first.
    code, _, err = submit(api, clock, url=None, environ={"TILEJUDGE_HOME": str(tmp_path)})
    assert (code, err) == (0, "")
    assert str(api.requests[0].url).startswith("http://127.0.0.1:8000/v1/")


def leaderboard(api: FakeApi) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = client.run_leaderboard(
        "demo", "http://127.0.0.1:9", environ={}, out=out, err=err, transport=api.transport()
    )
    return code, out.getvalue(), err.getvalue()


def test_leaderboard_prints_a_table_in_rank_order(api: FakeApi) -> None:
    api.leaderboard = [
        {"rank": 1, "team": "team-3", "score": 10450, "submission": "s3", "received_at": "T1"},
        {"rank": 2, "team": "team-10", "score": 987, "submission": "s1", "received_at": "T2"},
    ]
    code, out, _ = leaderboard(api)
    assert code == 0
    assert out.splitlines() == [
        "rank  team     score  received_at",
        "   1  team-3   10450  T1",
        "   2  team-10    987  T2",
    ]
    assert api.requests[0].headers.get("Authorization") is None  # the leaderboard is public


def test_leaderboard_follows_next_and_prints_every_page_in_rank_order() -> None:
    rows = [
        {"rank": n, "team": f"t{n}", "score": 5000 - n, "submission": f"s{n}", "received_at": "T"}
        for n in range(1, 2501)
    ]
    asked: list[str] = []

    def pages(request: httpx.Request) -> httpx.Response:
        asked.append(str(request.url.query, "ascii"))
        offset = int(request.url.params.get("offset", 0))
        limit = int(request.url.params["limit"])
        more = offset + limit < len(rows)
        following = f"/v1/contests/demo/leaderboard?offset={offset + limit}&limit={limit}"
        return httpx.Response(
            200,
            json={
                "contest": "demo",
                "game": "wordytaire",
                "entries": rows[offset : offset + limit],
                "next": following if more else None,
            },
        )

    out, err = io.StringIO(), io.StringIO()
    code = client.run_leaderboard(
        "demo",
        "http://127.0.0.1:9",
        environ={},
        out=out,
        err=err,
        transport=httpx.MockTransport(pages),
    )
    assert code == 0, err.getvalue()
    assert asked == ["limit=1000", "offset=1000&limit=1000", "offset=2000&limit=1000"]
    printed = out.getvalue().splitlines()
    assert len(printed) == 1 + len(rows)
    assert printed[-1].split()[:2] == ["2500", "t2500"]


def test_an_empty_leaderboard_says_nothing_is_judged_yet(api: FakeApi) -> None:
    code, out, _ = leaderboard(api)
    assert code == 0
    assert out == "no judged submissions in contest demo yet\n"


def test_leaderboard_of_an_unknown_contest_exits_2_with_the_detail(api: FakeApi) -> None:
    api.error = (404, {"error": "not_found", "detail": "no contest 'demo'"}, {})
    code, _, err = leaderboard(api)
    assert code == 2
    assert err == "tilejudge: HTTP 404 not_found: no contest 'demo'\n"


@pytest.fixture
def routed_to(api: FakeApi, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeApi]:
    """Point the real `tilejudge` entry point at the fake server."""
    real_connect = api_client.connect

    def connect(*args: Any, **kwargs: Any) -> api_client.Client:
        return real_connect(*args, **(kwargs | {"transport": api.transport()}))

    monkeypatch.setattr(api_client, "connect", connect)
    monkeypatch.delenv("TILEJUDGE_TOKEN", raising=False)
    monkeypatch.delenv("TILEJUDGE_URL", raising=False)
    yield api


def test_the_submit_command_reads_the_file_and_exits_with_the_clients_status(
    routed_to: FakeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "moves.txt"
    path.write_bytes(b"0 0 0 2 cat\n")
    routed_to.error = (401, {"error": "unauthorized", "detail": "unknown token"}, {})
    code = cli.main(["submit", str(path), "--contest", "demo", "--token", "nope"])
    assert code == 2
    assert routed_to.requests[0].content == b"0 0 0 2 cat\n"
    assert "HTTP 401 unauthorized: unknown token" in capsys.readouterr().err


def test_the_leaderboard_command_prints_the_table(
    routed_to: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    routed_to.leaderboard = [{"rank": 1, "team": "t", "score": 5, "received_at": "T"}]
    assert cli.main(["leaderboard", "--contest", "demo"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == "   1  t         5  T"


def test_an_admin_token_comes_from_the_option_then_the_environment_then_the_homes_file(
    tmp_path: Path,
) -> None:
    (tmp_path / "admin-token").write_text("from-file\n")
    environ = {"TILEJUDGE_HOME": str(tmp_path), "TILEJUDGE_ADMIN_TOKEN": "from-env"}

    def token(given: str | None, env: dict[str, str]) -> str | None:
        return resolve(ClientSettings.from_env(env), Role.ADMIN, token=given).token

    assert token("given", environ) == "given"
    assert token(None, environ) == "from-env"
    assert token(None, {"TILEJUDGE_HOME": str(tmp_path)}) == "from-file"
    with pytest.raises(SettingsError, match="pass --admin-token, set TILEJUDGE_ADMIN_TOKEN"):
        resolve(
            ClientSettings.from_env({"TILEJUDGE_HOME": str(tmp_path / "none")}),
            Role.ADMIN,
            flag="--admin-token",
        )


def test_a_url_in_the_environment_that_is_not_http_names_its_key() -> None:
    with pytest.raises(SettingsError, match="TILEJUDGE_URL must be an http:// or https:// URL"):
        ClientSettings.from_env({"TILEJUDGE_URL": "localhost:8000"})


def test_the_lexicon_cache_is_under_xdg_cache_home_then_home_unless_set() -> None:
    assert ClientSettings.from_env({"HOME": "/h"}).lexicon_cache == Path("/h/.cache/tilejudge")
    xdg = {"HOME": "/h", "XDG_CACHE_HOME": "/x"}
    assert ClientSettings.from_env(xdg).lexicon_cache == Path("/x/tilejudge")
    chosen = xdg | {"TILEJUDGE_LEXICON_CACHE": "/c"}
    assert ClientSettings.from_env(chosen).lexicon_cache == Path("/c")


def test_a_retry_whose_pause_would_end_past_the_deadline_is_not_made(clock: FakeClock) -> None:
    calls = 0

    def busy() -> None:
        nonlocal calls
        calls += 1
        raise ApiError("HTTP 503 unavailable", outcome="503", status=503, retryable=True)

    retry = Retry(attempts=10, first_pause=1.0, sleep=clock.sleep, clock=lambda: clock.now)
    with pytest.raises(ApiError):
        retry.run(busy, deadline=3.5)
    assert clock.sleeps == [1.0, 2.0]  # a third pause (4 s) would end past the deadline
    assert calls == 3


def paged(answers: list[dict[str, Any]]) -> tuple[api_client.Client, list[httpx.Request]]:
    """A client whose server answers each GET with the next of `answers`."""
    asked: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        asked.append(request)
        return httpx.Response(200, json=answers[len(asked) - 1])

    return api_client.connect("http://127.0.0.1:9", transport=httpx.MockTransport(handle)), asked


def test_pages_follow_the_cursor_until_it_is_null_fetching_each_page_as_it_is_read() -> None:
    api, asked = paged([
        {"results": [{"n": 1}, {"n": 2}], "next": "b"},
        {"results": [{"n": 3}], "next": None},
    ])  # fmt: skip
    pages = api.pages("/v1/contests/demo/results", "results")

    assert next(pages) == [{"n": 1}, {"n": 2}]
    assert len(asked) == 1  # the second page is not asked for before the first is read
    assert list(pages) == [[{"n": 3}]]
    assert [dict(r.url.params) for r in asked] == [{}, {"after": "b"}]


def test_a_server_repeating_its_cursor_or_sending_no_list_is_an_error() -> None:
    api, _ = paged([{"results": [], "next": "a"}, {"results": [], "next": "a"}])
    with pytest.raises(ApiError, match="the same page cursor twice"):
        list(api.pages("/v1/x", "results"))
    api, _ = paged([{"rows": []}])
    with pytest.raises(ApiError, match="no list 'results'"):
        list(api.pages("/v1/x", "results"))
